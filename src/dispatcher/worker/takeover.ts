// Before a task is submitted to a node again, the copies its earlier submissions may have left
// there (their notes outlived them: uncertain.ts) are looked for, by the sample's sha256 (or the
// URL) and the mark each request carried (marker.ts). A copy found is taken over: the task becomes
// processing with that node task id, as if the lost answer had arrived, and nothing is submitted.
//
// Not finding a copy proves nothing while the node may still be making it: a request sent just
// before the dispatcher died (or whose answer was lost) can be in the node's hands, its upload
// still arriving or being stored. So the task is submitted again only once every earlier request
// began at least `transferTimeoutMs` before a look that found nothing: that is how long the
// dispatcher itself waits for a node to answer a submission, and a node makes the task as soon as
// the upload is in (Aviary stores it as it arrives; Cuckoo hashes and inserts it), not minutes
// after the connection is gone. Until then the task waits, looked for again each round. A mark
// given up that way is recorded (DistStore.abandonCopy), so a copy that still shows up later is
// deleted on the node, never taken over and never fetched.
import { ApiClientError, type AnalysisClient } from '../../shared/api/client'
import type { DistTaskRow, NodeRow } from '../store/types'
import { markerOf } from './marker'
import type { NodeWorkerContext } from './node-worker'
import { sameTarget, type ListedTask, type NoteEntry, type SubmissionKey } from './uncertain'

export type Resolution = 'adopted' | 'wait' | 'submit'

/** The node task ids the store can hold (PostgreSQL int4): a larger one is no task of ours. */
export const isNodeTaskId = (id: unknown): id is number => Number.isSafeInteger(id) && (id as number) >= 1 && (id as number) <= 2_147_483_647

/** Page size of a node's whole task list, read to find URL copies. */
const SCAN_PAGE = 500

/** The lookups of one submission chunk: the node's list of marked tasks is read at most once. */
export interface Lookups {
  marked?: Promise<ListedTask[]>
}

export class Takeover {
  /** Notes whose wait was logged (once each, not every round). */
  private readonly told = new Set<string>()

  constructor(private readonly ctx: NodeWorkerContext) {}

  /**
   * What to do with task `t`, whose earlier submissions to `node` left `entries`: it took over a
   * copy ('adopted'), it must wait for a copy that may still come ('wait'), or it may be submitted
   * again ('submit'). Throws the ApiClientError of a node that gave no usable answer.
   */
  async resolve(node: NodeRow, api: AnalysisClient, t: DistTaskRow, entries: NoteEntry[], lookups: Lookups): Promise<Resolution> {
    const { store, log } = this.ctx
    // Taken before the look: a copy made before this instant is in what the node lists.
    const lookedAt = Date.now()
    const key = entries[0]!.note.key
    const ours = new Map(entries.map((e) => [e.note.marker, e]))
    const found = (await this.copiesOf(api, key, lookups))
      .flatMap((c) => {
        const m = markerOf(c.options)
        const entry = m === null ? undefined : ours.get(m)
        return entry && isNodeTaskId(c.id) && sameTarget(entry.note.key, c) ? [{ c, entry }] : []
      })
      .sort((a, b) => a.c.id - b.c.id)

    let adopted: number | null = null
    for (const { c, entry } of found) {
      const marker = entry.note.marker
      // A node-side copy that the node itself rescheduled is `recovered`: it never runs again,
      // and its copy carries the same options, so it is found too.
      if (adopted === null && c.status !== 'recovered' &&
        (await store.adoptCopy({ marker, taskId: t.id, nodeId: node.id, nodeTaskId: c.id, worker: this.ctx.workerId }))) {
        adopted = c.id
        this.ctx.uncertain.remove(entry.name)
        log.warn(`dist: task ${t.id} took over #${c.id} on ${node.name}, the copy an earlier submission made (found by its mark), instead of submitting it again`)
        continue
      }
      // Not taken: a copy of a mark given up, or a second copy of a mark taken over, runs for no
      // task. Deleted now, while it may still be pending; a running one is refused and deleted
      // once it has finished (node-worker.ts).
      const decision = await store.copyDecision(marker)
      if (decision && !(decision.outcome === 'adopted' && decision.node_task_id === c.id)) {
        await api.deleteTask(c.id).then(
          () => log.info(`dist: deleted #${c.id} on ${node.name} before it ran: a copy of task ${t.id} that no task takes over`),
          () => undefined
        )
      }
    }
    if (adopted !== null) return 'adopted'

    if (entries.some((e) => lookedAt - e.note.at < this.ctx.transferTimeoutMs)) {
      const first = entries.find((e) => !this.told.has(e.name))
      if (first) {
        for (const e of entries) this.told.add(e.name)
        log.warn(`dist: task ${t.id} waits: an earlier submission to ${node.name} may still make its copy there; it is taken over when it shows, ` +
          `or the task is submitted again ${Math.round(this.ctx.transferTimeoutMs / 1000)} s after that submission began`)
      }
      return 'wait'
    }
    for (const e of entries) {
      const d = await store.abandonCopy({ marker: e.note.marker, taskId: t.id, nodeId: node.id })
      // Another worker took one over meanwhile (its claim on the task had run out and it claimed it
      // again): the task is not to be submitted; what the store says of it next round stands.
      if (d.outcome === 'adopted') return 'wait'
      this.told.delete(e.name)
    }
    // The notes stay: a copy that still comes is recognised by its mark and deleted.
    return 'submit'
  }

  /** The node's tasks that may be copies of `key`: every task of the sample, or for a URL every marked task. */
  private async copiesOf(api: AnalysisClient, key: SubmissionKey, lookups: Lookups): Promise<ListedTask[]> {
    if (key.category === 'url') return (lookups.marked ??= this.markedTasks(api))
    let sampleId: unknown
    try {
      sampleId = (await api.sample(key.sha256)).sample.id
    } catch (err) {
      // No such sample on the node: no task of it either (both make the sample with the task).
      if (err instanceof ApiClientError && err.status === 404) return []
      throw err
    }
    if (!isNodeTaskId(sampleId)) throw new ApiClientError(0, `GET /files/view/sha256/${key.sha256} answered a sample without a usable id`)
    try {
      return (await api.tasksOfSample(sampleId)).tasks
    } catch (err) {
      // Cuckoo before 2.0.6 has no /tasks/sample: its whole list is read instead.
      if (err instanceof ApiClientError && err.status === 404) return (lookups.marked ??= this.markedTasks(api))
      throw err
    }
  }

  /** Every task of the node that carries a mark, from its whole list, a page at a time. */
  private async markedTasks(api: AnalysisClient): Promise<ListedTask[]> {
    const out: ListedTask[] = []
    for (let offset = 0; ; offset += SCAN_PAGE) {
      const { tasks } = await api.tasks(SCAN_PAGE, offset)
      for (const t of tasks) if (markerOf((t as ListedTask).options) !== null) out.push(t)
      if (tasks.length < SCAN_PAGE) return out
    }
  }
}
