// Live updates: the service's event stream (GET /events, server-sent events) feeds the query
// cache, so task states change on screen without reloading. A remote server without /events
// (Cuckoo) makes the stream fail: the pages then poll (their queries' refetchInterval).
import { useEffect, useState } from 'react'
import { useQueryClient, type QueryClient } from '@tanstack/react-query'
import { create } from 'zustand'
import { apiUrl, type ConnectionId } from './http'
import { ANSWERS, decodeAnswer } from '../../../shared/api/client'

/** A `task` event: the task as /tasks/view shows it; of it, its id and status are checked. */
export type TaskEvent = { task: { id: number; status: string } & Record<string, unknown> }

/** Query keys used across pages: everything about a connection starts with ['c', connection]. */
export const keys = {
  all: (c: ConnectionId) => ['c', c] as const,
  task: (c: ConnectionId, id: number) => ['c', c, 'task', id] as const,
  tasks: (c: ConnectionId) => ['c', c, 'tasks'] as const,
  machines: (c: ConnectionId) => ['c', c, 'machines'] as const,
  routes: (c: ConnectionId) => ['c', c, 'routes'] as const,
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

/** Whether the shown connection's event stream is open (one stream, opened by the Layout). */
const useLiveState = create<{ live: boolean; set(live: boolean): void }>()((set) => ({ live: false, set: (live) => set({ live }) }))

/** True while events arrive live; when false, pages poll. */
export function useIsLive(): boolean {
  return useLiveState((s) => s.live)
}

/**
 * Subscribes to a connection's event stream while mounted (the Layout does, once). Returns
 * whether it is live; pages read the same with useIsLive().
 */
export function useLiveEvents(connection: ConnectionId, enabled = true): boolean {
  const qc = useQueryClient()
  const [live, setLiveLocal] = useState(false)
  const setShared = useLiveState((s) => s.set)
  const setLive = (v: boolean): void => { setLiveLocal(v); setShared(v) }
  useEffect(() => {
    let source: EventSource | null = null
    let closed = false
    if (typeof EventSource === 'undefined' || !enabled) return undefined
    void apiUrl(connection, '/events').then((url) => {
      if (closed) return
      source = new EventSource(url)
      source.onopen = () => setLive(true)
      source.onerror = () => setLive(false)
      source.addEventListener('task', (e) => {
        try {
          onTask(qc, connection, decodeAnswer('event task', 200, (e as MessageEvent<string>).data, ANSWERS.taskEvent, Infinity))
        } catch { /* a malformed event is ignored */ }
      })
      source.addEventListener('task_deleted', () => scheduleInvalidate(qc, connection))
      source.addEventListener('machine', () => { void qc.invalidateQueries({ queryKey: keys.machines(connection) }) })
    })
    return () => {
      closed = true
      source?.close()
      setLive(false)
    }
  }, [connection, qc, enabled])
  return live
}
