// Filters of the task list: one toggle chip per state (none pressed = every state) and a search
// by task id, hash (or a hash prefix) or target name, sent once typing pauses.
import { useEffect, useState, type JSX } from 'react'
import { TASK_STATUSES } from '../../../shared/api/schemas'
import { useTasksView } from './filter-store'
import { useDebounced } from './use-debounced'

export function TaskFilters({ searchUnsupported }: { searchUnsupported: boolean }): JSX.Element {
  const statuses = useTasksView((s) => s.statuses)
  const toggleStatus = useTasksView((s) => s.toggleStatus)
  const clearStatuses = useTasksView((s) => s.clearStatuses)
  const q = useTasksView((s) => s.q)
  const setQ = useTasksView((s) => s.setQ)
  const [typed, setTyped] = useState(q)
  const settled = useDebounced(typed.trim(), 300)
  useEffect(() => {
    if (settled !== useTasksView.getState().q) setQ(settled)
  }, [settled, setQ])

  const chip = (pressed: boolean) =>
    `rounded-full border px-2.5 py-0.5 text-xs focus-visible:outline-2 focus-visible:outline-sky-500 ${pressed
      ? 'border-sky-600 bg-sky-600 text-white dark:border-sky-500 dark:bg-sky-600'
      : 'border-zinc-300 text-zinc-700 hover:bg-zinc-100 dark:border-zinc-700 dark:text-zinc-300 dark:hover:bg-zinc-800'}`

  return (
    <div className="flex flex-wrap items-center gap-2">
      <input type="search" aria-label="Search tasks" placeholder="Search: id, md5/sha1/sha256, name or URL" value={typed}
        onChange={(e) => setTyped(e.target.value)}
        onKeyDown={(e) => { if (e.key === 'Enter') setQ(typed.trim()) }}
        className="w-80 rounded border border-zinc-300 bg-transparent px-2 py-1 text-sm dark:border-zinc-700" />
      <div role="group" aria-label="Filter by state" className="flex flex-wrap gap-1">
        <button type="button" aria-pressed={statuses.length === 0} className={chip(statuses.length === 0)} onClick={clearStatuses}>all</button>
        {TASK_STATUSES.map((s) => (
          <button key={s} type="button" aria-pressed={statuses.includes(s)} className={chip(statuses.includes(s))} onClick={() => toggleStatus(s)}>
            {s.replace('_', ' ')}
          </button>
        ))}
      </div>
      {searchUnsupported && (q !== '' || statuses.length > 1) ? (
        <p role="status" className="w-full text-xs text-amber-700 dark:text-amber-400">
          This server has no task search (a Cuckoo server): the list shows every task{statuses.length === 1 ? ' in that state' : ''}; search and several states at once need an Aviary server.
        </p>
      ) : null}
    </div>
  )
}
