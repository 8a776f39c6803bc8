// Test support for the "never twice" property: one worker's share of a race over the claims, the
// same code whether the racers are store instances in one process or separate processes
// (race-child.ts). Each phase returns the ids this racer won; the caller checks that the racers'
// sets are disjoint and cover every task.
import type { DistStore } from './types'

export type RacePhase = 'assign' | 'submit' | 'fetch'

/** Small batches, so the racers' transactions interleave many times. */
const BATCH = 10
/**
 * A real pause between batches: SQLite's calls are synchronous, so without one a racer that
 * starts first on a loaded machine could take every task before the others are scheduled, and the
 * race would prove nothing (CI saw one process win the whole submit phase).
 */
const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1))

export async function racePhase(store: DistStore, phase: RacePhase, worker: string, nodeIds: number[]): Promise<number[]> {
  const won: number[] = []
  if (phase === 'assign') {
    for (;;) {
      const got = await store.assignPending(BATCH, () => nodeIds, await store.queueByNode())
      if (got.length === 0) return won
      won.push(...got.map((t) => t.id))
      await pause()
    }
  }
  if (phase === 'submit') {
    for (let idle = 0; idle < nodeIds.length; ) {
      idle = 0
      for (const nodeId of nodeIds) {
        const got = await store.claimForSubmit(nodeId, BATCH, worker, 60)
        if (got.length === 0) idle++
        // The node's id: derived from ours so the fetch phase can look it up. Batched as the worker
        // does, so the racers' batched marks interleave too.
        await store.markSubmittedMany(got.map((t) => ({ taskId: t.id, nodeTaskId: t.id + 100_000 })))
        won.push(...got.map((t) => t.id))
        await pause()
      }
    }
    return won
  }
  // fetch: every racer walks all processing tasks, in its own order, and tries to claim each.
  const tasks = await store.listTasks({ status: 'processing' })
  const order = tasks.map((t) => ({ t, k: Math.random() })).sort((a, b) => a.k - b.k).map((x) => x.t)
  for (const [i, t] of order.entries()) {
    if (i % BATCH === 0) await pause()
    if (t.node_id === null || t.node_task_id === null) continue
    const got = await store.claimForFetch(t.node_id, t.node_task_id, worker, 60)
    if (got) {
      await store.markFinished(got.id, null)
      won.push(got.id)
    }
  }
  return won
}
