// Tasks: every task of the current connection, filtered by state and category, searched by what
// analysts look for (tasks/TaskFilters.tsx), sorted by id or score, in a virtual list that stays
// live (event stream, else polling). Arrows move, Enter opens.
import type { JSX } from 'react'
import { useIsFetching } from '@tanstack/react-query'
import { useUi } from '../state/ui'
import { keys, useIsLive } from '../api/live'
import { TaskFilters } from '../tasks/TaskFilters'
import { TaskTable } from '../tasks/TaskTable'
import { useTasksView } from '../tasks/filter-store'
import { knownTotal, searchUnsupported } from '../tasks/task-source'
import { useQueryClient } from '@tanstack/react-query'
import { CompareBar } from '../compare/CompareBar'

export function TasksPage({ pollMs = 5_000 }: { pollMs?: number }): JSX.Element {
  const connection = useUi((s) => s.connection)
  const statuses = useTasksView((s) => s.statuses)
  const q = useTasksView((s) => s.q)
  const categories = useTasksView((s) => s.categories)
  const sort = useTasksView((s) => s.sort)
  const order = useTasksView((s) => s.order)
  const filter = { statuses, q, categories, sort, order }
  // Layout shows the stream's state; the page needs it too, to poll only when there is no stream.
  const live = useIsLive()
  const qc = useQueryClient()
  useIsFetching({ queryKey: keys.tasks(connection) }) // re-render the count when pages arrive
  const total = knownTotal(qc, connection, filter)
  return (
    <div className="flex h-[calc(100vh-3rem)] flex-col gap-3">
      <div className="flex items-baseline gap-3">
        <h1 className="text-xl font-semibold">Tasks</h1>
        <span className="text-sm text-zinc-500" aria-live="polite" data-testid="task-count">
          {total === undefined ? 'loading…' : `${total.toLocaleString('en-US')} task${total === 1 ? '' : 's'}`}
        </span>
        <div className="ml-auto"><CompareBar /></div>
      </div>
      <TaskFilters searchUnsupported={searchUnsupported(connection)} />
      {/* Another category or order is another list: it starts at the top (the table follows states and search itself). */}
      <TaskTable key={`${categories.join(',')}|${sort}|${order}`} connection={connection} filter={filter} live={live} pollMs={pollMs} />
    </div>
  )
}
