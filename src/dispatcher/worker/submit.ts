// Submitting a node's assigned tasks (`/tasks/create/file` or `/url`) while its queue has room. A
// note is written before each request and removed only once the node's task id is committed
// (uncertain.ts); the request carries the note's mark in its options (marker.ts). Whatever cuts a
// submission short (a lost answer, garbage for an answer, the dispatcher killed), the copy it may
// have left on the node is looked for before the task is submitted again, and taken over
// (takeover.ts); a copy that no task takes over is deleted, never fetched.
import { createHash } from 'node:crypto'
import { createReadStream, openAsBlob } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { type AnalysisClient, ApiClientError, type Fields, NoTaskMadeError } from '../../shared/api/client'
import { TASK_FIELDS } from '../../shared/api/task-fields'
import type { DistTaskRow, NodeRow } from '../store/types'
import { mapLimit } from './loop'
import type { NodeWorkerContext } from './node-worker'
import { writeNote } from './reports'
import { withMarker } from './marker'
import { encodeMultipart, NotSentError, postMultipart } from './submit-http'
import { Takeover, type Lookups } from './takeover'
import type { NoteEntry, SubmissionKey } from './uncertain'

/** How many tasks are claimed for submission at once (the lease covers a chunk, not a whole batch). */
const SUBMIT_CHUNK = 50
/** Node answers that will not change on a retry: the task is finished with the reason noted. */
const PERMANENT = new Set([400, 404, 413, 415, 422])
/**
 * A gateway's answers (a reverse proxy in front of the node): it may have passed the request on,
 * and the node may make the task all the same. Like no answer at all, not like a refusal.
 */
const GATEWAY = new Set([502, 503, 504])

/** The form fields forwarded to the node; null ones are left out (as Cuckoo's dispatcher does). */
export function submitFields(t: DistTaskRow): Fields {
  const out: Fields = {}
  for (const k of TASK_FIELDS) if (t[k] !== null && t[k] !== undefined) out[k] = String(t[k])
  return out
}

/** Samples up to this size are read into memory and posted in one buffer (submit-http.ts). */
const IN_MEMORY_SAMPLE = 32 * 1024 * 1024

/** Samples up to this size stay in memory for the whole chunk (at most SUBMIT_CHUNK of them). */
const SHARED_SAMPLE = 1024 * 1024

/** A sample as submitted: missing, or its sha256 and bytes (null: too large, streamed from its file). */
type Sample = { missing: true } | { missing: false; sha256: string; data: Buffer | null }

async function readSample(file: string): Promise<Sample> {
  let size: number
  try {
    size = (await stat(file)).size
  } catch {
    return { missing: true }
  }
  const hash = createHash('sha256')
  if (size <= IN_MEMORY_SAMPLE) {
    const data = await readFile(file)
    return { missing: false, sha256: hash.update(data).digest('hex'), data }
  }
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer)
  return { missing: false, sha256: hash.digest('hex'), data: null }
}

/**
 * Submitted tasks whose marks are not written yet, written `groupSize` at a time: one commit per
 * group instead of one per task. The notes of the group are removed after its commit; a crash
 * before leaves them (those tasks take over the copies this attempt made once their claims end).
 * The group is the worker's concurrency, so a crash cuts short no more submissions than with a
 * write per task.
 */
class PendingMarks {
  private marks: Array<{ taskId: number; nodeTaskId: number; note: string }> = []

  constructor(private readonly ctx: NodeWorkerContext, private readonly groupSize: number) {}

  async add(taskId: number, nodeTaskId: number, note: string): Promise<void> {
    this.marks.push({ taskId, nodeTaskId, note })
    if (this.marks.length >= this.groupSize) await this.flush()
  }

  async flush(): Promise<void> {
    if (this.marks.length === 0) return
    const group = this.marks.splice(0)
    const marked = new Set(await this.ctx.store.markSubmittedMany(group))
    // A task deleted or requeued meanwhile keeps its state, and its copy on the node belongs to
    // no task: the note stays, so the copy is deleted once it finishes (node-worker.ts).
    for (const m of group) if (marked.has(m.taskId)) this.ctx.uncertain.remove(m.note)
  }
}

type SubmitResult = 'ok' | 'retry' | 'unreachable' | 'dropped' | 'waiting'

/** What one submission chunk shares: each sample read once, the marks written in groups, the notes read once. */
interface ChunkContext {
  samples: Map<string, Promise<Sample>>
  marks: PendingMarks
  /** Notes of earlier submissions of the chunk's tasks to this node, by task. */
  notes: Map<number, NoteEntry[]>
  lookups: Lookups
  /** Tasks that wait for a copy that may still come: their claims are held to the end of the round. */
  waiting: number[]
}

export class Submitter {
  private readonly takeover: Takeover

  constructor(private readonly ctx: NodeWorkerContext) {
    this.takeover = new Takeover(ctx)
  }

  /**
   * Submits assigned tasks while the node's own queue is under the threshold (`api` for lookups,
   * `transfer` for the uploads, each with its timeout). True: more to do.
   */
  async submit(node: NodeRow, api: AnalysisClient, transfer: AnalysisClient, nodePending: number): Promise<boolean> {
    let room = this.ctx.threshold - nodePending
    const waiting: number[] = []
    try {
      while (room > 0 && !this.ctx.stopping()) {
        const want = Math.min(room, SUBMIT_CHUNK)
        const batch = await this.ctx.store.claimForSubmit(node.id, want, this.ctx.workerId, this.ctx.leaseSeconds)
        if (batch.length === 0) return false
        // Tasks often share a sample (one file resubmitted with other options): read once per
        // chunk, not per task. Per chunk only, so a sample replaced on disk is read afresh soon.
        const chunk: ChunkContext = {
          samples: new Map(),
          marks: new PendingMarks(this.ctx, this.ctx.concurrency),
          // One readdir per chunk; files are read only for notes of the chunk's tasks.
          notes: await this.ctx.uncertain.ofTasks(node.id, batch.map((t) => t.id)),
          lookups: {},
          waiting
        }
        let results: SubmitResult[]
        try {
          results = await mapLimit(batch, this.ctx.concurrency, (t) => this.submitOne(node, api, transfer, t, chunk))
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
    } finally {
      // Held so far so that the next chunk of this round did not claim (and look for) them again.
      for (const id of waiting) await this.ctx.store.releaseClaim(id)
    }
  }

  private async submitOne(node: NodeRow, api: AnalysisClient, transfer: AnalysisClient, t: DistTaskRow, chunk: ChunkContext): Promise<SubmitResult> {
    const { store, uncertain } = this.ctx
    const timeout = this.ctx.transferTimeoutMs
    const cap = this.ctx.maxAnswerBytes
    const earlier = chunk.notes.get(t.id)
    if (earlier?.length) {
      let resolution
      try {
        resolution = await this.takeover.resolve(node, api, t, earlier, chunk.lookups)
      } catch (err) {
        await store.releaseClaim(t.id)
        if (!(err instanceof ApiClientError)) throw err
        this.ctx.log.warn(`dist: looking on ${node.name} for the copy an earlier submission of task ${t.id} made failed, will retry: ${err.message}`)
        return err.status === 0 ? 'unreachable' : 'retry'
      }
      if (resolution === 'adopted') return 'ok'
      if (resolution === 'wait') {
        chunk.waiting.push(t.id)
        return 'waiting'
      }
    }
    let note: string | null = null
    try {
      let key: SubmissionKey
      let request: (options: string) => Promise<{ task_id: number }>
      if (t.category === 'url') {
        key = { category: 'url', url: t.url ?? '' }
        request = (options) => postMultipart(node, '/tasks/create/url', encodeMultipart({ ...submitFields(t), options, url: t.url ?? '' }), timeout, cap)
      } else {
        const file = path.resolve(this.ctx.samplesDir, t.path ?? '')
        const name = t.filename ?? path.basename(file)
        const sample = await this.sample(chunk, file)
        if (sample.missing) {
          await this.dropTask(node, t, `sample file missing: ${path.basename(file)}`)
          return 'dropped'
        }
        key = { category: 'file', filename: name, sha256: sample.sha256 }
        const data = sample.data
        request = data === null
          // Streamed from disk by the shared client.
          ? async (options) => transfer.createFile(await openAsBlob(file), name, { ...submitFields(t), options })
          : (options) => postMultipart(node, '/tasks/create/file', encodeMultipart({ ...submitFields(t), options }, { field: 'file', name, data }), timeout, cap)
      }
      const opened = uncertain.open(node.id, t.id, key, this.ctx.workerId)
      note = opened.name
      const res = await request(withMarker(t.options, opened.marker))
      await chunk.marks.add(t.id, res.task_id, note)
      return 'ok'
    } catch (err) {
      if (!(err instanceof ApiClientError)) {
        // Whether the request went out is unknown: the note stays.
        await store.releaseClaim(t.id)
        throw err
      }
      // No usable answer (status 0), or a gateway's: the node may have made the task all the
      // same, and the note stays for the next attempt to look for it. Nothing left (no connection
      // was made), the node refused, or it answered that it made no task: the note goes.
      const nothingMade = err instanceof NotSentError || err instanceof NoTaskMadeError || (err.status !== 0 && !GATEWAY.has(err.status))
      if (note !== null && nothingMade) uncertain.remove(note)
      if (PERMANENT.has(err.status)) {
        await this.dropTask(node, t, `node ${node.name} refused the task: ${err.message}`)
        return 'dropped'
      }
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
}
