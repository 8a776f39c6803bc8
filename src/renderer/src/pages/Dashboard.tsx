// The Dashboard: how the selected server is doing, as charts. Task events invalidate the status
// key (api/live.ts), so counts follow the queue; the 10 s poll is there anyway because CPU load,
// disk and free machines change without any task event, and a server without /events has only it.
import type { JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { Link } from 'react-router'
import { keys } from '../api/live'
import { useUi } from '../state/ui'
import { loadDashboard } from '../dashboard/data'
import { DashboardView } from '../dashboard/DashboardView'
import { ErrorNote } from '../dashboard/ErrorNote'

export function DashboardPage(): JSX.Element {
  const connection = useUi((s) => s.connection)
  const q = useQuery({
    queryKey: [...keys.status(connection), 'dashboard'],
    queryFn: ({ signal }) => loadDashboard(connection, signal),
    refetchInterval: 10_000,
    retry: 1
  })
  return (
    <div className="flex flex-col gap-4">
      <header className="flex items-baseline gap-3">
        <h1 className="text-xl font-semibold">Dashboard</h1>
        {q.data?.source === 'status' && <span className="text-xs text-zinc-500">from /cuckoo/status (a Cuckoo-compatible server)</span>}
        {q.isFetching && <span className="text-xs text-zinc-400" aria-hidden>updating…</span>}
      </header>
      {q.isPending && <p role="status">Loading…</p>}
      {q.isError && <ErrorNote prefix="Could not load the status" error={q.error} />}
      {q.data?.machines?.total === 0 && (
        <p data-testid="first-run" className="rounded border border-amber-300 bg-amber-50 p-3 text-sm text-amber-950 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-100">
          This server has no analysis machine: submitted samples wait until one is added.{' '}
          {connection === null
            ? <Link to="/machines" className="font-medium underline">Create a Linux machine</Link>
            : 'Add one on that server.'}
        </p>
      )}
      {q.data && <DashboardView data={q.data} />}
    </div>
  )
}
