// The analysis machines of the selected server. For the local service: start, stop, revert, a
// live screen, and what `aviary doctor` finds; a remote server's fleet is shown, not controlled
// (its controls are Aviary routes a Cuckoo server lacks, and a shared server is not ours to drive).
import { useState, type JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { keys } from '../api/live'
import { useUi } from '../state/ui'
import { ErrorNote } from '../dashboard/ErrorNote'
import { listMachines } from '../machines/api'
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
        <MachineTable machines={q.data} selected={machine ? machine.name : null}
          onSelect={local ? (name) => setSelected((s) => (s === name ? null : name)) : null} />
      )}
      {machine && <MachinePanel key={machine.name} machine={machine} onClose={() => setSelected(null)} />}
      {local && <Doctor />}
    </div>
  )
}
