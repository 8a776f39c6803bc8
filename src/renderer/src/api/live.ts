// Live updates: the service's event stream (GET /events, server-sent events) feeds the query
// cache, so task states change on screen without reloading. A remote server without /events
// (Cuckoo) makes the stream fail: the pages then poll (their queries' refetchInterval).
import { useEffect, useState } from 'react'
import { useQueryClient, type QueryClient } from '@tanstack/react-query'
import { apiUrl, type ConnectionId } from './http'

export interface TaskEvent { task: { id: number; status: string } & Record<string, unknown> }

/** Query keys used across pages: everything about a connection starts with ['c', connection]. */
export const keys = {
  all: (c: ConnectionId) => ['c', c] as const,
  task: (c: ConnectionId, id: number) => ['c', c, 'task', id] as const,
  tasks: (c: ConnectionId) => ['c', c, 'tasks'] as const,
  machines: (c: ConnectionId) => ['c', c, 'machines'] as const,
  status: (c: ConnectionId) => ['c', c, 'status'] as const
}

function onTask(qc: QueryClient, c: ConnectionId, ev: TaskEvent): void {
  qc.setQueryData(keys.task(c, ev.task.id), (old: { task: object } | undefined) => (old ? { ...old, task: { ...old.task, ...ev.task } } : old))
  // Lists and counts refresh, at most every half second however many events arrive.
  scheduleInvalidate(qc, c)
}

const pending = new Map<string, ReturnType<typeof setTimeout>>()
function scheduleInvalidate(qc: QueryClient, c: ConnectionId): void {
  const k = String(c)
  if (pending.has(k)) return
  pending.set(k, setTimeout(() => {
    pending.delete(k)
    void qc.invalidateQueries({ queryKey: keys.tasks(c) })
    void qc.invalidateQueries({ queryKey: keys.status(c) })
  }, 500))
}

/**
 * Subscribes to a connection's event stream while mounted. Returns whether it is live; when
 * false, pages should poll.
 */
export function useLiveEvents(connection: ConnectionId): boolean {
  const qc = useQueryClient()
  const [live, setLive] = useState(false)
  useEffect(() => {
    let source: EventSource | null = null
    let closed = false
    if (typeof EventSource === 'undefined') return undefined
    void apiUrl(connection, '/events').then((url) => {
      if (closed) return
      source = new EventSource(url)
      source.onopen = () => setLive(true)
      source.onerror = () => setLive(false)
      source.addEventListener('task', (e) => {
        try { onTask(qc, connection, JSON.parse((e as MessageEvent<string>).data) as TaskEvent) } catch { /* a malformed event is ignored */ }
      })
      source.addEventListener('task_deleted', () => scheduleInvalidate(qc, connection))
      source.addEventListener('machine', () => { void qc.invalidateQueries({ queryKey: keys.machines(connection) }) })
    })
    return () => {
      closed = true
      source?.close()
      setLive(false)
    }
  }, [connection, qc])
  return live
}
