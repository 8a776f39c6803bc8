// The task list: a virtual grid over every matching task (100,000 and more). Only the rows in
// view (plus a margin) are in the DOM; their pages (PAGE_SIZE tasks) are fetched as they come
// into view and stay cached, so scrolling back is instant. Live events and polling refresh the
// pages in view without moving the scroll position. A row's checkbox (or Space on the selected
// row) picks it for Compare (compare/refs.ts: at most two, from any connection).
import { memo, useCallback, useEffect, useRef, useState, type JSX, type KeyboardEvent } from 'react'
import { useQueries, useQueryClient } from '@tanstack/react-query'
import { useVirtualizer } from '@tanstack/react-virtual'
import { Link, useNavigate } from 'react-router'
import type { ConnectionId } from '../api/http'
import { SafeText, When } from '../components/text'
import { hasInvisible } from '../format'
import { ScoreBadge, TaskStatusBadge } from '../components/status'
import { startFailure } from '../report/start-failure'
import { optionsOf } from '../report/archive'
import { useNetworkOffer } from '../submit/network'
import { fetchTaskPage, knownTotal, pageKey, PAGE_SIZE, targetName, type ListTask, type TaskFilter, type TaskPage } from './task-source'
import { useTasksView } from './filter-store'
import { sameRef, usePicked } from '../compare/refs'

const ROW_HEIGHT = 32
// Each row is its own grid, so the columns are fixed widths; the Target column takes the rest and
// never less than 8rem (at 1024 px it has about 140 px with a Route column, 220 px without). The
// Route column is there only where a task can have a route (the connection offers routes, or a
// task in view has one).
const COLUMNS_ROUTED = 'grid grid-cols-[4rem_9rem_minmax(8rem,1fr)_3.75rem_6rem_4.5rem_3rem_5.5rem] gap-x-2 items-center px-2'
const COLUMNS_UNROUTED = 'grid grid-cols-[4rem_9rem_minmax(8rem,1fr)_3.75rem_6rem_3rem_5.5rem] gap-x-2 items-center px-2'
export const columnsFor = (routed: boolean): string => (routed ? COLUMNS_ROUTED : COLUMNS_UNROUTED)

interface Props {
  connection: ConnectionId
  filter: TaskFilter
  /** Whether the event stream is up; when not, the pages in view are polled. */
  live: boolean
  pollMs: number
}

/** A clock that ticks once a minute: relative dates stay right without re-rendering rows on every scroll. */
function useMinuteClock(): Date {
  const [now, setNow] = useState(() => new Date())
  useEffect(() => {
    const t = setInterval(() => setNow(new Date()), 60_000)
    return () => clearInterval(t)
  }, [])
  return now
}

export function TaskTable({ connection, filter, live, pollMs }: Props): JSX.Element {
  const qc = useQueryClient()
  const navigate = useNavigate()
  const scrollRef = useRef<HTMLDivElement>(null)
  const selected = useTasksView((s) => s.selected)
  const setSelected = useTasksView((s) => s.setSelected)
  const picked = usePicked((s) => s.picked)
  const togglePicked = usePicked((s) => s.toggle)
  const now = useMinuteClock()

  const total = knownTotal(qc, connection, filter) ?? 0
  const virtualizer = useVirtualizer({
    count: total,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 10,
    // No synchronous React render inside every scroll event: React batches them into frames.
    useFlushSync: false,
    // Coming back from a task: the list opens where it was left.
    initialOffset: () => useTasksView.getState().scrollOffset
  })

  useEffect(() => () => useTasksView.getState().setScrollOffset(virtualizer.scrollOffset ?? 0), [virtualizer])

  // A new filter or search starts at the top (the store reset the offset and selection).
  const filterId = `${connection}|${filter.statuses.join(',')}|${filter.q}`
  const firstFilter = useRef(filterId)
  useEffect(() => {
    if (firstFilter.current === filterId) return
    firstFilter.current = filterId
    virtualizer.scrollToOffset(0)
  }, [filterId, virtualizer])

  const items = virtualizer.getVirtualItems()
  const firstPage = items.length ? Math.floor((items[0]?.index ?? 0) / PAGE_SIZE) : 0
  const lastPage = items.length ? Math.floor((items[items.length - 1]?.index ?? 0) / PAGE_SIZE) : 0
  const pages: number[] = []
  for (let p = firstPage; p <= lastPage; p++) pages.push(p)

  const results = useQueries({
    queries: pages.map((page) => ({
      queryKey: pageKey(connection, filter, page),
      queryFn: ({ signal }: { signal: AbortSignal }) => fetchTaskPage(connection, filter, page, signal),
      refetchInterval: live ? (false as const) : pollMs,
      retry: 1
    }))
  })
  const loaded = new Map<number, TaskPage>()
  pages.forEach((page, i) => {
    const data = results[i]?.data ?? qc.getQueryData<TaskPage>(pageKey(connection, filter, page))
    if (data) loaded.set(page, data)
  })
  const taskAt = (index: number): ListTask | undefined => loaded.get(Math.floor(index / PAGE_SIZE))?.tasks[index % PAGE_SIZE]
  const error = results.find((r) => r.error)?.error
  const loading = results.some((r) => r.isPending)
  const offer = useNetworkOffer(connection).data ?? null
  const routed = offer !== null || [...loaded.values()].some((p) => p.tasks.some((t) => typeof t.route === 'string' && t.route !== ''))
  const columns = columnsFor(routed)

  const clamp = (i: number) => Math.max(0, Math.min(total - 1, i))
  const select = (i: number) => {
    const next = clamp(i)
    setSelected(next)
    virtualizer.scrollToIndex(next, { align: 'auto' })
  }
  const open = (i: number) => {
    const task = taskAt(i) ?? qc.getQueryData<TaskPage>(pageKey(connection, filter, Math.floor(i / PAGE_SIZE)))?.tasks[i % PAGE_SIZE]
    if (task) void navigate(`/tasks/${task.id}`)
  }
  const pick = (i: number) => {
    const task = taskAt(i)
    if (task) togglePicked({ connection, id: task.id })
  }
  // Rows are memoized: they get stable callbacks that always call the current `open` and `pick`.
  const openRef = useRef(open)
  openRef.current = open
  const onOpen = useCallback((i: number) => openRef.current(i), [])
  const pickRef = useRef(pick)
  pickRef.current = pick
  const onPick = useCallback((i: number) => pickRef.current(i), [])
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (total === 0) return
    const pageRows = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? ROW_HEIGHT * 10) / ROW_HEIGHT) - 1)
    const moves: Record<string, number> = { ArrowDown: selected + 1, ArrowUp: selected - 1, PageDown: selected + pageRows, PageUp: selected - pageRows, Home: 0, End: total - 1 }
    const to = moves[e.key]
    if (to !== undefined) {
      e.preventDefault()
      select(to)
    } else if (e.key === 'Enter') {
      e.preventDefault()
      open(selected)
    } else if (e.key === ' ') {
      e.preventDefault()
      pick(selected)
    }
  }

  return (
    <div className="flex min-h-0 flex-1 flex-col rounded border border-zinc-200 dark:border-zinc-800">
      <div role="presentation" data-testid="task-header" className={`${columns} h-8 shrink-0 border-b border-zinc-200 bg-zinc-50 text-xs font-medium uppercase tracking-wide text-zinc-500 dark:border-zinc-800 dark:bg-zinc-900 [&>span]:truncate`}>
        <span>ID</span><span>Status</span><span>Target</span><span>Category</span><span>Machine</span>{routed && <span>Route</span>}<span>Score</span><span>Added</span>
      </div>
      {error ? <p role="alert" className="border-b border-red-200 bg-red-50 px-2 py-1 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-200">Cannot load tasks: {error.message}</p> : null}
      <div ref={scrollRef} tabIndex={0} role="grid" aria-label="Tasks" aria-rowcount={total} aria-busy={loading}
        aria-activedescendant={total > 0 ? `task-row-${selected}` : undefined} onKeyDown={onKeyDown}
        className="relative min-h-0 flex-1 overflow-auto text-sm outline-none focus-visible:ring-2 focus-visible:ring-sky-500" style={{ contain: 'strict' }}>
        {total === 0 && !loading && !error ? <p className="p-4 text-zinc-500">No tasks match.</p> : null}
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative', width: '100%' }}>
          {items.map((item) => (
            <TaskRow key={item.index} index={item.index} start={item.start} task={taskAt(item.index)} selected={item.index === selected} now={now} routed={routed}
              picked={picked.some((p) => sameRef(p, { connection, id: taskAt(item.index)?.id ?? -1 }))} onSelect={setSelected} onOpen={onOpen} onPick={onPick} />
          ))}
        </div>
      </div>
    </div>
  )
}

interface RowProps {
  index: number
  /** Whether the Route column is shown. */
  routed: boolean
  start: number
  task: ListTask | undefined
  selected: boolean
  now: Date
  /** Picked for Compare. */
  picked: boolean
  onSelect(index: number): void
  onOpen(index: number): void
  onPick(index: number): void
}

// Memoized: while scrolling, only rows entering the window render; the others keep their DOM.
const TaskRow = memo(function TaskRow({ index, start, task, selected, now, routed, picked, onSelect, onOpen, onPick }: RowProps): JSX.Element {
  const notStarted = task ? startFailure(Array.isArray(task.errors) ? task.errors : []) : null
  return (
    <div id={`task-row-${index}`} role="row" aria-rowindex={index + 1} aria-selected={selected} data-task-id={task?.id} data-picked={picked || undefined}
      onClick={() => onSelect(index)} onDoubleClick={() => onOpen(index)}
      className={`${columnsFor(routed)} absolute left-0 top-0 w-full cursor-default border-b border-zinc-100 dark:border-zinc-900 ${selected ? 'bg-sky-100 dark:bg-sky-900/60' : 'hover:bg-zinc-50 dark:hover:bg-zinc-900'}`}
      style={{ height: ROW_HEIGHT, transform: `translateY(${start}px)` }}>
      {task ? (
        <>
          <span role="gridcell" className="flex items-center gap-1.5 tabular-nums">
            <input type="checkbox" tabIndex={-1} checked={picked} onChange={() => onPick(index)} onDoubleClick={(e) => e.stopPropagation()}
              aria-label={`Compare task ${task.id}`} title="Pick for Compare (Space)" className="shrink-0" />
            <Link to={`/tasks/${task.id}`} tabIndex={-1} className="text-sky-700 hover:underline dark:text-sky-400">{task.id}</Link>
          </span>
          <span role="gridcell"><TaskStatusBadge task={task} /></span>
          <span role="gridcell" className="truncate font-mono text-xs"><TargetCell task={task} /></span>
          <span role="gridcell" className="text-zinc-600 dark:text-zinc-400">{task.category}</span>
          <span role="gridcell" className="truncate"><SafeText value={task.machine ?? ('name' in task.guest ? task.guest.name : '')} /></span>
          {/* Set when the analysis starts; empty before. */}
          {routed && (
            <span role="gridcell" className="truncate text-xs text-zinc-600 dark:text-zinc-400" title={typeof task.route === 'string' && !hasInvisible(task.route) ? task.route : undefined}>
              {typeof task.route === 'string' ? <SafeText value={task.route} /> : null}
            </span>
          )}
          {/* A sample that never ran has nothing to score: its 0.0 would read as clean. */}
          <span role="gridcell">{notStarted !== null
            ? <span data-testid="score-not-started" className="text-zinc-500 dark:text-zinc-400" title={`No score: the sample did not start (${notStarted})`}>—</span>
            : <ScoreBadge score={task.score} />}</span>
          <span role="gridcell" className="text-zinc-600 dark:text-zinc-400"><When value={task.added_on} now={now} /></span>
        </>
      ) : (
        <span role="gridcell" className="col-span-full text-zinc-400">…</span>
      )}
    </div>
  )
})

/** The task's file name or URL; a member of a submitted archive after its archive's name (option archive=). */
function TargetCell({ task }: { task: ListTask }): JSX.Element {
  const archive = task.category === 'archive' ? optionsOf(task.options).get('archive') ?? '' : ''
  const name = targetName(task)
  if (archive === '') return <SafeText value={name} />
  return (
    <span data-testid="target-archive" title={hasInvisible(archive) || hasInvisible(name) ? undefined : `${name}, a member of ${archive}`}>
      <span className="text-zinc-500 dark:text-zinc-400"><SafeText value={archive} /> › </span><SafeText value={name} />
    </span>
  )
}
