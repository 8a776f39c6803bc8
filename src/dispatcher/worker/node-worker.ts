// One node's loop, a round at a time (Cuckoo 2's handle_node in its distributed/ app, with its gaps
// closed): contact (GET /cuckoo/status), then delete leftovers, submit assigned tasks while the
// node's queue has room (submit.ts), and fetch what it finished. A node that fails `maxFailures`
// contacts in a row is unreachable: its unfinished tasks go back to pending for the other nodes.
// A contact fails when the status or the list of finished tasks gets no usable answer, whatever
// the node did instead: refuse the connection, answer garbage or JSON of another shape, hang, drip,
// or send more than the cap (the shared client turns each into an ApiClientError).
import { AnalysisClient, ApiClientError } from '../../shared/api/client'
import type { ServiceStatus, Task } from '../../shared/api/schemas'
import type { DistStore, DistTaskRow, NodeRow } from '../store/types'
import type { CleanupLedger } from './cleanup'
import type { ListedTask, UncertainSubmissions } from './uncertain'
import { mapLimit, type RunResult } from './loop'
import { Submitter } from './submit'
import { isNodeTaskId } from './takeover'
import { fetchReports, type FetchSpec, type NodeTaskNote } from './reports'

export interface WorkerLog {
  info(msg: string): void
  warn(msg: string): void
}

export interface NodeWorkerContext {
  store: DistStore
  ledger: CleanupLedger
  uncertain: UncertainSubmissions
  log: WorkerLog
  workerId: string
  fetch: FetchSpec
  samplesDir: string
  threshold: number
  maxFailures: number
  leaseSeconds: number
  requestTimeoutMs: number
  transferTimeoutMs: number
  /** Cap of one JSON answer of a node (status, a page of its task list, a submission's answer). */
  maxAnswerBytes: number
  concurrency: number
  stopping(): boolean
  /** Asks the assignment loop for a round now (a node went away or came back). */
  kickAssign(): void
}

/**
 * Node-side statuses that end a task. `reported` is the normal end; a failed analysis or failed
 * processing never becomes reported, so those are collected too (whatever files exist, with the
 * status noted in node-task.json) instead of staying `processing` forever as in Cuckoo.
 */
export const FINAL_STATUSES = ['reported', 'failed_analysis', 'failed_processing', 'failed_reporting']

/** Pages of one status read per round: foreign tasks on a node must not hide ours behind them. */
const MAX_PAGES = 10

const DATETIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/

/** A node-side datetime as the note keeps it: the node's string when it has the right form. */
const datetime = (v: unknown): string | null => (typeof v === 'string' && DATETIME.test(v) ? v : null)

export class NodeWorker {
  private wasDown = false
  private readonly submitter: Submitter

  constructor(private readonly ctx: NodeWorkerContext, readonly nodeId: number) {
    this.submitter = new Submitter(ctx)
  }

  async round(): Promise<RunResult> {
    const { store } = this.ctx
    const node = await store.getNodeById(this.nodeId)
    if (!node || !node.enabled) return undefined
    const token = node.token ?? undefined
    const api = new AnalysisClient(node.url, { token, timeoutMs: this.ctx.requestTimeoutMs, maxAnswerBytes: this.ctx.maxAnswerBytes })
    const transfer = new AnalysisClient(node.url, { token, timeoutMs: this.ctx.transferTimeoutMs, maxAnswerBytes: this.ctx.maxAnswerBytes })
    let status: ServiceStatus
    let more: boolean
    try {
      status = await api.status()
      // A whole number when present (the client checks); a node that leaves it out has none pending.
      const pending = (status.tasks as { pending?: number }).pending ?? 0
      // Cleaning and submitting deal with their own errors; the lists of finished tasks are part
      // of the contact: a node that answers its status but not them is no use either, and a
      // success recorded before them would reset its failures every round.
      await this.cleanLeftovers(node, api)
      more = await this.submitter.submit(node, api, transfer, pending)
      await this.collect(node, api, transfer)
    } catch (err) {
      if (!(err instanceof ApiClientError)) throw err
      await this.contactFailed(node, err)
      return undefined
    }
    await store.recordContact(node.id, true, status)
    if (this.wasDown || node.failures >= this.ctx.maxFailures) {
      this.ctx.log.info(`dist: node ${node.name} answers again`)
      this.wasDown = false
      this.ctx.kickAssign()
    }
    return more ? 'again' : undefined
  }

  private async contactFailed(node: NodeRow, err: ApiClientError): Promise<void> {
    const row = await this.ctx.store.recordContact(node.id, false)
    if (row.failures < this.ctx.maxFailures) return
    if (!this.wasDown) this.ctx.log.warn(`dist: node ${node.name} unreachable after ${row.failures} failed contacts (${err.message})`)
    this.wasDown = true
    // Checked every round while down (cheap): another worker may have assigned to it meanwhile.
    if (!(await this.ctx.store.queueByNode()).get(node.id)) return
    const submitted = (await this.ctx.store.listTasks({ status: 'processing' })).filter((t) => t.node_id === node.id && t.node_task_id)
    for (const t of submitted) await this.ctx.ledger.add(node.id, t.node_task_id!, t.id)
    const n = await this.ctx.store.requeueNode(node.id)
    if (n) {
      this.ctx.log.warn(`dist: ${n} task(s) of node ${node.name} requeued for other nodes`)
      this.ctx.kickAssign()
    }
  }

  /**
   * Deletes a task on the node: true when it is gone (404 too), false while the node refuses (a
   * running task), null when the node gave no usable answer (the caller stops asking this round:
   * each further call would wait for the same timeout).
   */
  private async deleteOnNode(api: AnalysisClient, id: number): Promise<boolean | null> {
    try {
      await api.deleteTask(id)
      return true
    } catch (err) {
      if (!(err instanceof ApiClientError)) throw err
      return err.status === 404 ? true : err.status === 0 ? null : false
    }
  }

  /** Deletes node tasks listed in the ledger; entries stay while the node refuses (a running task). */
  private async cleanLeftovers(node: NodeRow, api: AnalysisClient): Promise<void> {
    for (const id of await this.ctx.ledger.list(node.id)) {
      const gone = await this.deleteOnNode(api, id)
      if (gone === null) return
      if (gone) await this.ctx.ledger.remove(node.id, id)
    }
  }

  /** Fetches every task of ours that ended on the node, then deletes it there. */
  private async collect(node: NodeRow, api: AnalysisClient, transfer: AnalysisClient): Promise<void> {
    const page = this.ctx.threshold
    // Finished node tasks none of ours claimed, looked at only while a lost submission is noted.
    const unclaimed: ListedTask[] | null = (await this.ctx.uncertain.any(node.id)) ? [] : null
    for (const status of FINAL_STATUSES) {
      let offset = 0
      for (let p = 0; p < MAX_PAGES && !this.ctx.stopping(); p++) {
        const { tasks } = await api.tasksWithStatus(status, page, offset)
        const claimed: Array<[DistTaskRow, Task]> = []
        for (const nt of tasks) {
          const row = await this.ctx.store.claimForFetch(node.id, nt.id, this.ctx.workerId, this.ctx.leaseSeconds)
          if (row) claimed.push([row, nt])
          else unclaimed?.push(nt)
        }
        const done = await mapLimit(claimed, this.ctx.concurrency, ([row, nt]) => this.fetchOne(node, api, transfer, row, nt))
        if (tasks.length < page) break
        // Fetched tasks left the list (deleted on the node); the others are still in front.
        offset += page - done.filter(Boolean).length
      }
    }
    if (unclaimed?.length) await this.deleteLostCopies(node, api, unclaimed)
  }

  /**
   * Deletes, unfetched, the finished copies that submissions cut short left on the node and that
   * no task takes over (uncertain.ts, takeover.ts). A copy whose task still waits to be submitted
   * to this node is left to it: it takes the copy over before submitting (submit.ts).
   */
  private async deleteLostCopies(node: NodeRow, api: AnalysisClient, unclaimed: ListedTask[]): Promise<void> {
    const { store, uncertain } = this.ctx
    for (const { id, entry } of await uncertain.copies(node.id, unclaimed)) {
      if (!isNodeTaskId(id) || (await store.knowsNodeTask(node.id, id))) continue
      const { task: taskId, marker } = entry.note
      const t = await store.getTask(taskId)
      if (t?.status === 'assigned' && t.node_id === node.id) continue
      // Recorded before the delete: a task put back on this node meanwhile can no longer take it over.
      const decision = await store.abandonCopy({ marker, taskId, nodeId: node.id })
      if (decision.outcome === 'adopted' && decision.node_task_id === id) continue
      const gone = await this.deleteOnNode(api, id)
      if (gone === null) return
      if (!gone) continue
      uncertain.remove(entry.name)
      this.ctx.log.info(`dist: deleted task #${id} on ${node.name}: a copy of task ${taskId} that no task takes over, left by a submission cut short`)
    }
  }

  private async fetchOne(node: NodeRow, api: AnalysisClient, transfer: AnalysisClient, row: DistTaskRow, nt: Task): Promise<boolean> {
    // Only `id` and `status` of a listed task are checked (the client): the rest is taken as the
    // node sends it only when it has the expected type.
    const errors: unknown = nt.errors
    const note: NodeTaskNote = {
      node: node.name, node_task_id: nt.id, status: nt.status, errors: Array.isArray(errors) ? errors.map(String) : [],
      started_on: datetime(nt.started_on), completed_on: datetime(nt.completed_on)
    }
    try {
      await fetchReports(transfer, this.ctx.fetch, row.id, nt, note)
    } catch (err) {
      // Nothing was kept: release the claim, and the next round (this worker or another) retries.
      await this.ctx.store.releaseClaim(row.id)
      this.ctx.log.warn(`dist: fetching task ${row.id} (node ${node.name} #${nt.id}) failed, will retry: ${(err as Error).message}`)
      return false
    }
    const deleted = (await this.deleteOnNode(api, nt.id)) === true
    if (!deleted) await this.ctx.ledger.add(node.id, nt.id, row.id)
    await this.ctx.store.markFinished(row.id, note.started_on)
    return deleted
  }
}
