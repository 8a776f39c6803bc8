// Hands hashing jobs to two worker threads (one per hash lane), or hashes inline where the
// worker's bundle is not there (running from TypeScript sources, e.g. under Vitest). Both give
// identical results. Whole files (processing's dropped files) go to the same workers, each file
// to one of them (files()).
import { existsSync, write } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { LANES, MultiHasher, type HashKind, type Hashes } from './multihash'
import { inlineFileHashing, type FileDigest, type FileHashing } from './file-digest'
import { SLOTS, SLOT_BYTES, type WorkerReply, type WorkerRequest } from './hash-protocol'

/** Files per message to a worker: a few, so that one message's cost is shared and both workers stay busy to the end. */
const FILE_BATCH = 8
/** Batches each worker has at once: it starts the next while its answer to the last travels back. */
const BATCHES_IN_FLIGHT = 2

export interface HashJob {
  /** Resolves once more data may be sent (backpressure); the chunk may be reused at once. */
  update(chunk: Uint8Array): Promise<void> | void
  /** All hashes, once every byte is hashed and (with a sink) written. */
  digest(): Promise<Hashes>
  abort(): void
}

interface JobState {
  sink: number | null // file descriptor the bytes are also written to, in order
  written: number
  writes: number // writes in flight
  drained?: () => void
  size: number
  slot: number // the slot being filled, -1 when none
  filled: number
  results: Partial<Record<HashKind, string>>[]
  done?: (h: Hashes) => void
  fail?: (e: Error) => void
  error?: Error
}

export class HashPool implements FileHashing {
  private workers: Worker[] | null = null
  private readonly slots = new SharedArrayBuffer(SLOT_BYTES * SLOTS)
  private readonly bytes = new Uint8Array(this.slots)
  private readonly free: number[] = Array.from({ length: SLOTS }, (_, i) => i)
  private readonly pendingAcks = new Uint8Array(SLOTS)
  private readonly slotWaiters: (() => void)[] = []
  private readonly jobs = new Map<number, JobState>()
  private readonly fileJobs = new Map<number, { resolve: (r: (FileDigest | { error: string })[]) => void; reject: (e: Error) => void }>()
  private nextJob = 1
  private readonly workerFile: string | null

  constructor(workerFile?: string | null) {
    this.workerFile = workerFile === undefined ? defaultWorkerFile() : workerFile
  }

  /** A job; with `sink`, an open file descriptor, the bytes are also written there. */
  start(sink: number | null = null): HashJob {
    if (!this.workerFile) return inlineJob(sink)
    const workers = this.ensureWorkers(this.workerFile)
    const job = this.nextJob++
    const state: JobState = { sink, written: 0, writes: 0, size: 0, slot: -1, filled: 0, results: [] }
    this.jobs.set(job, state)
    this.holdProcess()
    workers.forEach((w, lane) => post(w, { type: 'start', job, kinds: LANES[lane]! }))
    return {
      update: async (chunk) => {
        let offset = 0
        while (offset < chunk.length) {
          if (state.error) throw state.error
          if (state.slot < 0) state.slot = await this.takeSlot()
          const n = Math.min(SLOT_BYTES - state.filled, chunk.length - offset)
          this.bytes.set(chunk.subarray(offset, offset + n), state.slot * SLOT_BYTES + state.filled)
          state.filled += n
          offset += n
          if (state.filled === SLOT_BYTES) this.dispatch(job, state)
        }
        state.size += chunk.length
      },
      digest: async () => {
        if (state.error) throw state.error
        if (state.slot >= 0) this.dispatch(job, state)
        const hashes = await new Promise<Hashes>((resolve, reject) => {
          state.done = resolve
          state.fail = reject
          for (const w of workers) post(w, { type: 'end', job })
        })
        if (state.writes > 0) await new Promise<void>((resolve) => (state.drained = resolve))
        if (state.error) throw state.error
        return hashes
      },
      abort: () => {
        if (!this.jobs.delete(job)) return
        this.holdProcess()
        if (state.slot >= 0) this.release(state.slot)
        for (const w of workers) post(w, { type: 'abort', job })
      }
    }
  }

  /**
   * FileHashing: each file read and digested whole by one worker, the workers taking batches of
   * files as they finish the ones before. Inline where there is no worker bundle.
   */
  async files(paths: readonly string[]): Promise<(FileDigest | Error)[]> {
    if (!this.workerFile) return inlineFileHashing.files(paths)
    const workers = this.ensureWorkers(this.workerFile)
    const out = new Array<FileDigest | Error>(paths.length)
    let next = 0
    const lane = async (w: Worker): Promise<void> => {
      while (next < paths.length) {
        const from = next
        next = Math.min(paths.length, next + FILE_BATCH)
        const job = this.nextJob++
        const results = await new Promise<(FileDigest | { error: string })[]>((resolve, reject) => {
          this.fileJobs.set(job, { resolve, reject })
          this.holdProcess()
          post(w, { type: 'files', job, paths: paths.slice(from, next) })
        }).catch((err: unknown) => {
          next = paths.length // a worker stopped: the other lanes send nothing more
          throw err
        })
        results.forEach((r, k) => { out[from + k] = 'error' in r ? new Error(r.error) : r })
      }
    }
    await Promise.all(workers.flatMap((w) => Array.from({ length: BATCHES_IN_FLIGHT }, () => lane(w))))
    return out
  }

  async stop(): Promise<void> {
    const ws = this.workers
    this.workers = null
    if (ws) await Promise.all(ws.map((w) => w.terminate()))
  }

  /** The workers keep the process alive exactly while a job is in flight. */
  private holdProcess(): void {
    const busy = this.jobs.size + this.fileJobs.size > 0
    for (const w of this.workers ?? []) {
      if (busy) w.ref()
      else w.unref()
    }
  }

  private takeSlot(): Promise<number> | number {
    const slot = this.free.pop()
    if (slot !== undefined) return slot
    return new Promise<number>((resolve) => this.slotWaiters.push(() => resolve(this.free.pop()!)))
  }

  private release(slot: number): void {
    this.free.push(slot)
    this.slotWaiters.shift()?.()
  }

  private dispatch(job: number, state: JobState): void {
    const { slot, filled } = state
    this.pendingAcks[slot] = this.workers!.length + (state.sink === null ? 0 : 1)
    for (const w of this.workers!) post(w, { type: 'data', job, slot, length: filled })
    if (state.sink !== null) {
      // Writes are issued in order at explicit positions, so they may complete in any order.
      state.writes++
      write(state.sink, this.bytes, slot * SLOT_BYTES, filled, state.written, (err) => {
        if (err) this.fail(state, err)
        this.acknowledge(slot)
        if (--state.writes === 0) state.drained?.()
      })
      state.written += filled
    }
    state.slot = -1
    state.filled = 0
  }

  private acknowledge(slot: number): void {
    if (--this.pendingAcks[slot]! === 0) this.release(slot)
  }

  private ensureWorkers(file: string): Worker[] {
    if (this.workers) return this.workers
    const workers = LANES.map(() => {
      // Small heaps: a lane allocates almost nothing per chunk.
      const w = new Worker(file, { workerData: { slots: this.slots }, resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 48 } })
      w.on('message', (msg: WorkerReply) => this.onReply(msg))
      // After the listener (adding one refs the worker again): idle hashers must not keep the
      // process alive; holdProcess() refs them while a job waits for them.
      w.unref()
      w.on('error', (err) => this.failAll(err))
      w.on('exit', () => {
        if (this.workers?.includes(w)) {
          // The lanes go together: the survivor is stopped and every slot comes back.
          for (const other of this.workers) if (other !== w) void other.terminate()
          this.workers = null
        }
        this.failAll(new Error('a hashing worker stopped'))
        this.free.splice(0, this.free.length, ...Array.from({ length: SLOTS }, (_, i) => i))
        this.pendingAcks.fill(0)
        for (const wake of this.slotWaiters.splice(0)) wake()
      })
      return w
    })
    this.workers = workers
    return workers
  }

  private onReply(msg: WorkerReply): void {
    if (msg.type === 'ack') return this.acknowledge(msg.slot)
    if (msg.type === 'files') {
      const waiting = this.fileJobs.get(msg.job)
      this.fileJobs.delete(msg.job)
      this.holdProcess()
      return waiting?.resolve(msg.results)
    }
    const state = this.jobs.get(msg.job)
    if (!state) return
    if (msg.type === 'error') {
      this.jobs.delete(msg.job)
      this.holdProcess()
      this.fail(state, new Error(msg.message))
      return
    }
    state.results.push(msg.hashes)
    if (state.results.length === LANES.length) {
      this.jobs.delete(msg.job)
      this.holdProcess()
      state.done?.({ size: state.size, ...Object.assign({}, ...state.results) } as Hashes)
    }
  }

  private fail(state: JobState, err: Error): void {
    state.error = err
    state.fail?.(err)
  }

  private failAll(err: Error): void {
    for (const state of this.jobs.values()) this.fail(state, err)
    this.jobs.clear()
    this.holdProcess()
    for (const waiting of this.fileJobs.values()) waiting.reject(err)
    this.fileJobs.clear()
    this.holdProcess()
  }
}

const post = (w: Worker, msg: WorkerRequest) => w.postMessage(msg)

function inlineJob(sink: number | null): HashJob {
  const hasher = new MultiHasher()
  let position = 0
  return {
    update: async (chunk) => {
      hasher.update(chunk)
      if (sink === null) return
      for (let done = 0; done < chunk.length; ) {
        done += await new Promise<number>((resolve, reject) =>
          write(sink, chunk, done, chunk.length - done, position + done, (err, n) => (err ? reject(err) : resolve(n))))
      }
      position += chunk.length
    },
    digest: async () => hasher.digest(),
    abort: () => undefined
  }
}

/** The bundled worker sits next to the bundle (out/cli or out/main); sources have none. */
function defaultWorkerFile(): string | null {
  try {
    const file = fileURLToPath(new URL('./hash.worker.mjs', import.meta.url))
    return existsSync(file) ? file : null
  } catch {
    return null
  }
}
