// The Dashboard's figures for one server, from whichever source it had (see data.ts).
import type { JSX } from 'react'
import type { DashboardData } from './data'
import { CpuGauge, DiskGauge, MachinesGauge, Panel, PerDayChart, StatesChart } from './charts'

function Missing({ what }: { what: string }): JSX.Element {
  return <p className="py-6 text-center text-sm text-zinc-500">{what}</p>
}

export function DashboardView({ data }: { data: DashboardData }): JSX.Element {
  // Two columns below 1280 px (at 1024×700 a sixth of the page is narrower than a gauge), six above.
  return (
    <div className="grid grid-cols-1 gap-4 sm:grid-cols-2 xl:grid-cols-6">
      <Panel title="Tasks by state" className="sm:col-span-2 xl:col-span-3">
        <StatesChart states={data.states} total={data.total} />
      </Panel>
      <Panel title="Machines" className="xl:col-span-1">
        {data.machines ? <MachinesGauge {...data.machines} /> : <Missing what="Not reported by this server" />}
      </Panel>
      <Panel title="Disk space" className="xl:col-span-1">
        {data.disk ? <DiskGauge used={data.disk.used} total={data.disk.total} /> : <Missing what="Not reported by this server" />}
      </Panel>
      <Panel title="CPU load" className="xl:col-span-1">
        {data.cpu ? <CpuGauge load={data.cpu.load} cores={data.cpu.cores} /> : <Missing what="Not reported by this server" />}
      </Panel>
      <Panel title="Memory" className="xl:col-span-1">
        {data.memory ? <DiskGauge name="Memory" used={data.memory.used} total={data.memory.total} /> : <Missing what="Not reported by this server" />}
      </Panel>
      <Panel title="Tasks per day" className="sm:col-span-2 xl:col-span-5">
        {data.perDay
          ? <PerDayChart days={data.perDay} />
          : <Missing what="This server does not keep a history of tasks per day (it is not an Aviary service)." />}
      </Panel>
    </div>
  )
}
