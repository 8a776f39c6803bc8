// Remote Cuckoo-compatible servers and dispatchers: saved on the local service, reached through
// its proxy (the page never holds their tokens), and one task list over several of them.
import type { JSX } from 'react'
import { useConnections } from '../components/ConnectionPicker'
import { ErrorNote } from '../dashboard/ErrorNote'
import { ConnectionForm } from '../connections/ConnectionForm'
import { ConnectionList } from '../connections/ConnectionList'
import { CombinedTasks } from '../connections/CombinedTasks'

export function ConnectionsPage(): JSX.Element {
  const q = useConnections()
  return (
    <div className="flex flex-col gap-6">
      <h1 className="text-xl font-semibold">Connections</h1>
      <section aria-labelledby="add-title" className="flex flex-col gap-2">
        <h2 id="add-title" className="font-semibold">Add a server</h2>
        <p className="text-xs text-zinc-500">A Cuckoo-compatible analysis server or a dispatcher. The service checks that it answers before saving it.</p>
        <ConnectionForm />
      </section>
      <section aria-labelledby="saved-title" className="flex flex-col gap-1">
        <h2 id="saved-title" className="font-semibold">Servers</h2>
        {q.isPending && <p role="status">Loading…</p>}
        {q.isError && <ErrorNote prefix="Could not list the connections" error={q.error} />}
        <ConnectionList connections={q.data ?? []} />
      </section>
      <CombinedTasks connections={q.data ?? []} />
    </div>
  )
}
