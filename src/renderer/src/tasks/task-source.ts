// Where the Tasks page's rows come from: pages of GET /aviary/tasks (filters, search, sort,
// total), or, on a server without it (a remote Cuckoo), pages of /tasks/list/<limit>/<offset>
// (one state at most, no search, no category, Cuckoo's order).
import type { QueryClient } from '@tanstack/react-query'
import type { Task } from '../../../shared/api/schemas'
import type { ListedTask, TaskSearchQuery, TaskSort } from '../../../shared/api/ui-schemas'
import { HttpError, type ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { keys } from '../api/live'

/** A task as the list shows it: /aviary/tasks adds `score`; /tasks/list (Cuckoo) has none. */
export type ListTask = Task & Partial<Pick<ListedTask, 'score'>>

export interface TaskFilter {
  statuses: string[]
  q: string
  categories?: string[]
  /** Default: by id, newest first. */
  sort?: TaskSort
  order?: 'asc' | 'desc'
}

export interface TaskPage {
  tasks: ListTask[]
  /** Exact with /aviary/tasks; with /tasks/list only a lower bound (Cuckoo gives no count). */
  total: number
  exact: boolean
}

export const PAGE_SIZE = 100

// Connections whose server answered 404 to /aviary/tasks: they are asked /tasks/list from then on.
const withoutSearch = new Set<ConnectionId>()

/** What the list shows, as a key: the same rows for the same key. */
const listed = (f: TaskFilter) => [f.statuses.join(','), f.q, (f.categories ?? []).join(','), `${f.sort ?? 'id'} ${f.order ?? 'desc'}`] as const
export const pageKey = (c: ConnectionId, filter: TaskFilter, page: number) => [...keys.tasks(c), 'list', ...listed(filter), page] as const
const filterKey = (c: ConnectionId, filter: TaskFilter) => [...keys.tasks(c), 'list', ...listed(filter)] as const

export async function fetchTaskPage(c: ConnectionId, filter: TaskFilter, page: number, signal?: AbortSignal): Promise<TaskPage> {
  const offset = page * PAGE_SIZE
  if (!withoutSearch.has(c)) {
    const query: TaskSearchQuery = {
      offset, limit: PAGE_SIZE,
      ...(filter.statuses.length ? { status: filter.statuses.join(',') } : {}),
      ...(filter.categories?.length ? { category: filter.categories.join(',') } : {}),
      ...(filter.q ? { q: filter.q } : {}),
      ...(filter.sort && filter.sort !== 'id' ? { sort: filter.sort } : {}),
      ...(filter.order === 'asc' ? { order: 'asc' } : {})
    }
    try {
      const r = await (await clientOf(c)).searchTasks(query, { signal })
      return { tasks: r.tasks, total: r.total, exact: true }
    } catch (err) {
      if (!(err instanceof HttpError && err.status === 404)) throw err
      withoutSearch.add(c)
    }
  }
  // Cuckoo's list filters by one status (?status=) and cannot search; the page says so.
  const status = filter.statuses.length === 1 ? (filter.statuses[0] as string) : undefined
  const r: { tasks: ListTask[] } = await (await clientOf(c)).tasks(PAGE_SIZE, offset, { status, signal })
  if (r.tasks.length < PAGE_SIZE) return { tasks: r.tasks, total: offset + r.tasks.length, exact: true }
  // No count in the list: /cuckoo/status has one per state (Cuckoo's too), else grow a page at a time.
  const counted = await statusCount(c, status).catch(() => undefined)
  if (counted !== undefined) return { tasks: r.tasks, total: Math.max(counted, offset + r.tasks.length), exact: true }
  return { tasks: r.tasks, total: offset + r.tasks.length + PAGE_SIZE, exact: false }
}

const statusCache = new Map<ConnectionId, { at: number; counts: Promise<Record<string, unknown>> }>()
/** The task count of /cuckoo/status (all, or one state), asked at most every 5 s. */
async function statusCount(c: ConnectionId, status: string | undefined): Promise<number | undefined> {
  let entry = statusCache.get(c)
  if (!entry || Date.now() - entry.at > 5_000) {
    entry = { at: Date.now(), counts: clientOf(c).then((client) => client.status()).then((s): Record<string, unknown> => s.tasks) }
    statusCache.set(c, entry)
  }
  const counts = await entry.counts
  const n = counts[status ?? 'total']
  return typeof n === 'number' ? n : undefined
}

/** Whether a connection's server lacks /aviary/tasks (known after its first answer). */
export const searchUnsupported = (c: ConnectionId): boolean => withoutSearch.has(c)

/**
 * The row count to scroll over: the newest exact total among the cached pages of this filter
 * (pages fetched at different times may disagree; the newest wins), else the largest lower bound.
 */
export function knownTotal(qc: QueryClient, c: ConnectionId, filter: TaskFilter): number | undefined {
  let newest: { at: number; total: number } | undefined
  let bound: number | undefined
  for (const q of qc.getQueryCache().findAll({ queryKey: filterKey(c, filter) })) {
    const data = q.state.data as TaskPage | undefined
    if (!data) continue
    if (data.exact) {
      if (!newest || q.state.dataUpdatedAt > newest.at) newest = { at: q.state.dataUpdatedAt, total: data.total }
    } else {
      bound = Math.max(bound ?? 0, data.total)
    }
  }
  return newest?.total ?? bound
}

/** What the list shows as the target: a file task's name (the last part of its stored path), or the URL. */
export function targetName(task: Pick<Task, 'category' | 'target'>): string {
  if (task.category === 'url') return task.target
  const parts = task.target.split(/[/\\]/)
  return parts[parts.length - 1] || task.target
}
