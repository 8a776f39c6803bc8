// The analysis machines of the selected server. For the local service: start, stop, revert, a
// live screen, disk use, delete, rebuild and prepare mode, "Create Linux machine" with its
// progress, the leftovers a crash left, and what `aviary doctor` finds; a remote server's fleet is shown, not controlled
// (its controls are Aviary routes a Cuckoo server lacks, and a shared server is not ours to drive).
import { useState, type JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { keys } from '../api/live'
import { useUi } from '../state/ui'
import { ErrorNote } from '../dashboard/ErrorNote'
import { listMachines, loadDiskUse, sizeText } from '../machines/api'
import { CreateLinux, useCurrentBuild } from '../machines/CreateLinux'
import { Leftovers, MachineUpkeep } from '../machines/Upkeep'
import { MachineTable } from '../machines/MachineTable'
import { MachinePanel } from '../machines/MachinePanel'
import { Doctor } from '../machines/Doctor'

export function MachinesPage(): JSX.Element {
  const connection = useUi((s) => s.connection)
  const local = connection === null
  const [selected, setSelected] = useState<string | null>(null)
  const q = useQuery({
    queryKey: keys.machines(connection),
    queryFn: ({ signal }) => listMachines(connection, signal),
    // Machine events invalidate this key; the poll covers servers without an event stream.
    refetchInterval: 10_000
  })
  const machine = local && selected ? q.data?.find((m) => m.name === selected) : undefined
  const [buildId, setBuildId] = useCurrentBuild()
  const disk = useQuery({
    queryKey: ['fleet-upkeep', 'disk', q.data?.length ?? 0],
    queryFn: ({ signal }) => loadDiskUse(signal),
    // After the list: the fleet shows first, its disk use (qemu-img per machine) follows.
    enabled: local && q.isSuccess,
    refetchInterval: 60_000
  })
  const diskOf = local && disk.data ? Object.fromEntries(disk.data.machines.map((m) => [m.name, m])) : null
  return (
    <div className="flex flex-col gap-4">
      <header className="flex items-baseline gap-3">
        <h1 className="text-xl font-semibold">Machines</h1>
        {q.data && <span className="text-sm text-zinc-500">{q.data.filter((m) => !m.locked).length} of {q.data.length} free</span>}
        {!local && <span className="text-xs text-zinc-500">remote server: list only</span>}
      </header>
      {q.isPending && <p role="status">Loading…</p>}
      {q.isError && <ErrorNote prefix="Could not list the machines" error={q.error} />}
      {q.data && (
        <MachineTable machines={q.data} selected={machine ? machine.name : null} disk={diskOf} local={local}
          onSelect={local ? (name) => setSelected((s) => (s === name ? null : name)) : null} />
      )}
      {disk.data && disk.data.images.length > 0 && (
        <p className="text-xs text-zinc-600 dark:text-zinc-400" data-testid="images-disk">
          Images: {disk.data.images.map((i) => `${i.key} ${sizeText(i.bytes)} (${i.usedBy.length > 0 ? i.usedBy.join(', ') : 'unused'})`).join('; ')};
          package cache {sizeText(disk.data.cacheBytes)}; in all {sizeText(disk.data.totalBytes)}.
        </p>
      )}
      {machine && (
        <MachinePanel key={machine.name} machine={machine} onClose={() => setSelected(null)}>
          <MachineUpkeep machine={machine} built={diskOf?.[machine.name]?.built ?? false} onBuild={setBuildId} onDeleted={() => setSelected(null)} />
        </MachinePanel>
      )}
      {local && <CreateLinux buildId={buildId} onStarted={setBuildId} empty={q.data?.length === 0} />}
      {local && q.isSuccess && <Leftovers />}
      {local && <Doctor />}
    </div>
  )
}
