// One node's loop, a round at a time (Cuckoo 2's handle_node, §7.3 of the reference, with its gaps
// closed): contact (GET /cuckoo/status), then delete leftovers, submit assigned tasks while the
// node's queue has room, and fetch what it finished. A node that fails `maxFailures` contacts in a
// row is unreachable: its unfinished tasks go back to pending for the other nodes.
import { createHash } from 'node:crypto'
import { createReadStream, openAsBlob } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { AnalysisClient, ApiClientError, type Fields } from '../../shared/api/client'
import type { Task } from '../../shared/api/schemas'
import type { DistStore, DistTaskRow, NodeRow } from '../store/types'
import type { CleanupLedger } from './cleanup'
import type { ListedTask, SubmissionKey, UncertainSubmissions } from './uncertain'
import { mapLimit, type RunResult } from './loop'
import { encodeMultipart, postMultipart } from './submit-http'
import { fetchReports, writeNote, type FetchSpec, type NodeTaskNote } from './reports'

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

/** How many tasks are claimed for submission at once (the lease covers a chunk, not a whole batch). */
const SUBMIT_CHUNK = 50
/** Pages of one status read per round: foreign tasks on a node must not hide ours behind them. */
const MAX_PAGES = 10
/** Node answers that will not change on a retry: the task is finished with the reason noted. */
const PERMANENT = new Set([400, 404, 413, 415, 422])

const FIELDS = ['package', 'timeout', 'priority', 'options', 'machine', 'platform', 'tags', 'custom', 'owner', 'memory', 'clock', 'enforce_timeout'] as const

/** The form fields forwarded to the node; null ones are left out (as Cuckoo's dispatcher does). */
export function submitFields(t: DistTaskRow): Fields {
  const out: Fields = {}
  for (const k of FIELDS) if (t[k] !== null && t[k] !== undefined) out[k] = String(t[k])
  return out
}

/** Samples up to this size are read into memory and posted in one buffer (submit-http.ts). */
const IN_MEMORY_SAMPLE = 32 * 1024 * 1024

/** Samples up to this size stay in memory for the whole chunk (at most SUBMIT_CHUNK of them). */
const SHARED_SAMPLE = 1024 * 1024

const DATETIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/

/** A sample as submitted: missing, in memory, or too large for memory (streamed from its file). */
type Sample = { missing: true } | { missing: false; data: Buffer | null }

async function sha256Of(data: Buffer | string): Promise<string> {
  const hash = createHash('sha256')
  if (typeof data !== 'string') return hash.update(data).digest('hex')
  for await (const chunk of createReadStream(data)) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

async function readSample(file: string): Promise<Sample> {
  let size: number
  try {
    size = (await stat(file)).size
  } catch {
    return { missing: true }
  }
  return { missing: false, data: size > IN_MEMORY_SAMPLE ? null : await readFile(file) }
}

/**
 * Submitted tasks whose marks are not written yet, written `groupSize` at a time: one commit per
 * group instead of one per task. A crash loses at most a group's marks besides the submissions in
 * flight (those tasks are submitted again when their lease ends, as an in-flight one always was);
 * the group is the worker's concurrency, so that stays the same order as with a write per task.
 */
class PendingMarks {
  private marks: Array<{ taskId: number; nodeTaskId: number }> = []

  constructor(private readonly store: DistStore, private readonly groupSize: number) {}

  async add(taskId: number, nodeTaskId: number): Promise<void> {
    this.marks.push({ taskId, nodeTaskId })
    if (this.marks.length >= this.groupSize) await this.flush()
  }

  async flush(): Promise<void> {
    if (this.marks.length > 0) await this.store.markSubmittedMany(this.marks.splice(0))
  }
}

type SubmitResult = 'ok' | 'retry' | 'unreachable' | 'dropped'

/** What one submission chunk shares: each sample read once, and the marks written in groups. */
interface ChunkContext {
  samples: Map<string, Promise<Sample>>
  marks: PendingMarks
}

export class NodeWorker {
  private wasDown = false

  constructor(private readonly ctx: NodeWorkerContext, readonly nodeId: number) {}

  async round(): Promise<RunResult> {
    const { store } = this.ctx
    const node = await store.getNodeById(this.nodeId)
    if (!node || !node.enabled) return undefined
    const token = node.token ?? undefined
    const api = new AnalysisClient(node.url, { token, timeoutMs: this.ctx.requestTimeoutMs })
    let pending: number
    try {
      const status = await api.status()
      pending = Number((status as { tasks?: { pending?: unknown } }).tasks?.pending ?? 0)
      await store.recordContact(node.id, true, status)
    } catch (err) {
      if (!(err instanceof ApiClientError)) throw err
      await this.contactFailed(node, err)
      return undefined
    }
    if (this.wasDown || node.failures >= this.ctx.maxFailures) {
      this.ctx.log.info(`dist: node ${node.name} answers again`)
      this.wasDown = false
      this.ctx.kickAssign()
    }
    const transfer = new AnalysisClient(node.url, { token, timeoutMs: this.ctx.transferTimeoutMs })
    await this.cleanLeftovers(node, api)
    const more = await this.submit(node, transfer, pending)
    await this.collect(node, api, transfer)
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

  /** Deletes node tasks listed in the ledger; entries stay while the node refuses (a running task). */
  private async cleanLeftovers(node: NodeRow, api: AnalysisClient): Promise<void> {
    for (const id of await this.ctx.ledger.list(node.id)) {
      try {
        await api.deleteTask(id)
      } catch (err) {
        if (!(err instanceof ApiClientError) || err.status !== 404) continue
      }
      await this.ctx.ledger.remove(node.id, id)
    }
  }

  /** Submits assigned tasks while the node's own queue is under the threshold. True: more to do. */
  private async submit(node: NodeRow, client: AnalysisClient, nodePending: number): Promise<boolean> {
    let room = this.ctx.threshold - nodePending
    while (room > 0 && !this.ctx.stopping()) {
      const want = Math.min(room, SUBMIT_CHUNK)
      const batch = await this.ctx.store.claimForSubmit(node.id, want, this.ctx.workerId, this.ctx.leaseSeconds)
      if (batch.length === 0) return false
      // Tasks often share a sample (one file resubmitted with other options): read once per
      // chunk, not per task. Per chunk only, so a sample replaced on disk is read afresh soon.
      const chunk: ChunkContext = { samples: new Map(), marks: new PendingMarks(this.ctx.store, this.ctx.concurrency) }
      let results: SubmitResult[]
      try {
        results = await mapLimit(batch, this.ctx.concurrency, (t) => this.submitOne(node, client, t, chunk))
      } finally {
        await chunk.marks.flush()
      }
      room -= batch.length
      // The node stopped answering: the rest waits for the next round's contact.
      if (results.includes('unreachable')) return false
      if (batch.length < want) return false
    }
    // Room used up: the next round re-reads the node's queue first.
    return room <= 0
  }

  private async submitOne(node: NodeRow, client: AnalysisClient, t: DistTaskRow, chunk: ChunkContext): Promise<SubmitResult> {
    const { store } = this.ctx
    /** What identifies this submission on the node, should its answer be lost. */
    let key: () => Promise<SubmissionKey> = async () => ({ category: 'url', url: t.url ?? '' })
    try {
      let res: { task_id: number }
      if (t.category === 'url') {
        res = await postMultipart(node, '/tasks/create/url', encodeMultipart({ ...submitFields(t), url: t.url ?? '' }), this.ctx.transferTimeoutMs)
      } else {
        const file = path.resolve(this.ctx.samplesDir, t.path ?? '')
        const name = t.filename ?? path.basename(file)
        const sample = await this.sample(chunk, file)
        if (sample.missing) {
          await this.dropTask(node, t, `sample file missing: ${path.basename(file)}`)
          return 'dropped'
        }
        key = async () => ({ category: 'file', filename: name, sha256: await sha256Of(sample.data ?? file) })
        res = sample.data === null
          // Streamed from disk by the shared client.
          ? await client.createFile(await openAsBlob(file), name, submitFields(t))
          : await postMultipart(node, '/tasks/create/file', encodeMultipart(submitFields(t), { field: 'file', name, data: sample.data }), this.ctx.transferTimeoutMs)
      }
      if (!Number.isInteger(res?.task_id) || res.task_id <= 0) throw new ApiClientError(502, `no task id in the node's answer`)
      await chunk.marks.add(t.id, res.task_id)
      return 'ok'
    } catch (err) {
      if (!(err instanceof ApiClientError)) {
        await store.releaseClaim(t.id)
        throw err
      }
      if (PERMANENT.has(err.status)) {
        await this.dropTask(node, t, `node ${node.name} refused the task: ${err.message}`)
        return 'dropped'
      }
      // No answer: the node may have created the task all the same. Noted before the claim is
      // released, so the copy is recognised (and deleted, not fetched) once it finishes.
      if (err.status === 0) await this.ctx.uncertain.add(node.id, t.id, await key()).catch(() => undefined)
      await store.releaseClaim(t.id)
      this.ctx.log.warn(`dist: submitting task ${t.id} to ${node.name} failed, will retry: ${err.message}`)
      return err.status === 0 ? 'unreachable' : 'retry'
    }
  }

  /** Each sample read once per chunk; a large one is shared only by the tasks that wait for it at once. */
  private async sample(chunk: ChunkContext, file: string): Promise<Sample> {
    const cached = chunk.samples.get(file)
    if (cached) return cached
    const loading = readSample(file)
    chunk.samples.set(file, loading)
    const sample = await loading.catch((err: unknown) => {
      chunk.samples.delete(file)
      throw err
    })
    if (!sample.missing && (sample.data === null || sample.data.length > SHARED_SAMPLE)) chunk.samples.delete(file)
    return sample
  }

  /**
   * A task that can never run: finished, with the reason in node-task.json (Cuckoo would leave it
   * assigned forever, or record its own id as the node's). The store moves only processing tasks
   * to finished, so it passes through processing with node task id 0, which no node task has.
   */
  private async dropTask(node: NodeRow, t: DistTaskRow, reason: string): Promise<void> {
    this.ctx.log.warn(`dist: task ${t.id}: ${reason}`)
    await writeNote(this.ctx.fetch.reportsDir, t.id, {
      node: node.name, node_task_id: null, status: 'failed_dispatch', errors: [reason], started_on: null, completed_on: null
    })
    await this.ctx.store.markSubmitted(t.id, 0)
    await this.ctx.store.markFinished(t.id, null)
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

  /** Deletes the copies that lost submissions left on the node (uncertain.ts), unfetched. */
  private async deleteLostCopies(node: NodeRow, api: AnalysisClient, unclaimed: ListedTask[]): Promise<void> {
    const known = (id: number) => this.ctx.store.knowsNodeTask(node.id, id)
    for (const orphan of await this.ctx.uncertain.orphans(node.id, unclaimed, known, this.ctx.leaseSeconds * 1000)) {
      try {
        await api.deleteTask(orphan.id)
      } catch (err) {
        if (!(err instanceof ApiClientError) || err.status !== 404) continue
      }
      await this.ctx.uncertain.remove(orphan.note)
      this.ctx.log.info(`dist: deleted task #${orphan.id} on ${node.name}: a copy whose submission answer was lost`)
    }
  }

  private async fetchOne(node: NodeRow, api: AnalysisClient, transfer: AnalysisClient, row: DistTaskRow, nt: Task): Promise<boolean> {
    const note: NodeTaskNote = {
      node: node.name, node_task_id: nt.id, status: nt.status, errors: nt.errors ?? [], started_on: nt.started_on ?? null, completed_on: nt.completed_on ?? null
    }
    try {
      await fetchReports(transfer, this.ctx.fetch, row.id, nt, note)
    } catch (err) {
      // Nothing was kept: release the claim, and the next round (this worker or another) retries.
      await this.ctx.store.releaseClaim(row.id)
      this.ctx.log.warn(`dist: fetching task ${row.id} (node ${node.name} #${nt.id}) failed, will retry: ${(err as Error).message}`)
      return false
    }
    let deleted = true
    try {
      await api.deleteTask(nt.id)
    } catch (err) {
      if (!(err instanceof ApiClientError) || err.status !== 404) {
        deleted = false
        await this.ctx.ledger.add(node.id, nt.id, row.id)
      }
    }
    const started = typeof nt.started_on === 'string' && DATETIME.test(nt.started_on) ? nt.started_on : null
    await this.ctx.store.markFinished(row.id, started)
    return deleted
  }
}
