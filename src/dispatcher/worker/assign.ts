// Assignment: which nodes can serve a task, and one batch of pending tasks spread over them by
// queue length (the store does the atomic part and the balancing).
import type { DistStore, DistTaskRow, NodeRow } from '../store/types'

/** The task's tags as Cuckoo forwards them: a comma-separated string. */
export function taskTags(t: Pick<DistTaskRow, 'tags'>): string[] {
  return (t.tags ?? '').split(',').map((s) => s.trim()).filter(Boolean)
}

/**
 * True when one machine of the node matches everything the task asks for: its name (`machine`),
 * its platform (case-insensitive, as nodes compare it), and all its tags on that same machine. A
 * node that lists no machines serves nothing: it could never run the task.
 */
export function canServe(node: Pick<NodeRow, 'machines'>, t: Pick<DistTaskRow, 'machine' | 'platform' | 'tags'>): boolean {
  const tags = taskTags(t)
  return node.machines.some(
    (m) => (!t.machine || m.name === t.machine) && (!t.platform || m.platform.toLowerCase() === t.platform.toLowerCase()) && tags.every((tag) => m.tags.includes(tag))
  )
}

/** A node that may get work: enabled, in normal mode (as Cuckoo's), and not marked unreachable. */
export function isWorkable(node: NodeRow, maxFailures: number): boolean {
  return node.enabled && node.mode === 'normal' && node.failures < maxFailures
}

export interface AssignOptions {
  batch: number
  /** A node whose queue (assigned + processing) reached this gets nothing more this round. */
  queueLimit: number
  maxFailures: number
}

/** One assignment round. Returns the tasks assigned (with their node ids). */
export async function assignRound(store: DistStore, o: AssignOptions): Promise<DistTaskRow[]> {
  // Nothing pending (the usual idle round): one index lookup, not a count of every queued task.
  if ((await store.listTasks({ status: 'pending', limit: 1 })).length === 0) return []
  const nodes = (await store.listNodes({ enabledOnly: true })).filter((n) => isWorkable(n, o.maxFailures))
  if (nodes.length === 0) return []
  const queue = await store.queueByNode()
  // Every node full: no need to page through the pending tasks.
  if (nodes.every((n) => (queue.get(n.id) ?? 0) >= o.queueLimit)) return []
  // planAssignments updates `queue` as it assigns, so the limit also holds within one batch.
  const candidates = (t: DistTaskRow): number[] =>
    nodes.filter((n) => (queue.get(n.id) ?? 0) < o.queueLimit && canServe(n, t)).map((n) => n.id)
  return store.assignPending(o.batch, candidates, queue)
}
