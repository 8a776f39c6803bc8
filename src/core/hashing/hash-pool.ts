// Hands hashing jobs to the worker thread, or hashes inline where the worker's bundle is not
// there (running from TypeScript sources, e.g. under Vitest). Both give identical results.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { MultiHasher, type Hashes } from './multihash'
import type { WorkerReply, WorkerRequest } from './hash-protocol'

export interface HashJob {
  /** Resolves once the chunk may be reused and more data may be sent (backpressure). */
  update(chunk: Uint8Array): Promise<void> | void
  digest(): Promise<Hashes>
  abort(): void
}

// Chunks in flight per job: enough to keep the worker busy while the socket delivers more,
// small enough that memory stays flat (64 KiB chunks × 16 = 1 MiB per upload).
const MAX_IN_FLIGHT = 16

interface Pending {
  inFlight: number
  waiters: (() => void)[]
  result?: (h: Hashes) => void
  fail?: (e: Error) => void
  error?: Error
}

export class HashPool {
  private worker: Worker | null = null
  private readonly jobs = new Map<number, Pending>()
  private nextJob = 1
  private readonly workerFile: string | null

  constructor(workerFile?: string | null) {
    this.workerFile = workerFile === undefined ? defaultWorkerFile() : workerFile
  }

  get usesWorker(): boolean {
    return this.workerFile !== null
  }

  start(): HashJob {
    if (!this.workerFile) return inlineJob()
    const worker = this.ensureWorker(this.workerFile)
    const job = this.nextJob++
    const state: Pending = { inFlight: 0, waiters: [] }
    this.jobs.set(job, state)
    const send = (msg: WorkerRequest, transfer?: ArrayBuffer[]) => worker.postMessage(msg, transfer)
    send({ type: 'start', job })
    return {
      update: (chunk) => {
        if (state.error) throw state.error
        const copy = new Uint8Array(chunk) // the caller's buffer may be pooled; send our own
        send({ type: 'data', job, buf: copy.buffer }, [copy.buffer])
        state.inFlight++
        if (state.inFlight < MAX_IN_FLIGHT) return
        return new Promise<void>((resolve) => state.waiters.push(resolve))
      },
      digest: () =>
        new Promise<Hashes>((resolve, reject) => {
          if (state.error) return reject(state.error)
          state.result = resolve
          state.fail = reject
          send({ type: 'end', job })
        }),
      abort: () => {
        this.jobs.delete(job)
        send({ type: 'abort', job })
      }
    }
  }

  async stop(): Promise<void> {
    const w = this.worker
    this.worker = null
    if (w) await w.terminate()
  }

  private ensureWorker(file: string): Worker {
    if (this.worker) return this.worker
    const worker = new Worker(file)
    worker.unref() // an idle hasher must not keep the process alive
    worker.on('message', (msg: WorkerReply) => this.onReply(msg))
    worker.on('error', (err) => this.failAll(err))
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null
      this.failAll(new Error('the hashing worker stopped'))
    })
    this.worker = worker
    return worker
  }

  private onReply(msg: WorkerReply): void {
    const state = this.jobs.get(msg.job)
    if (!state) return
    if (msg.type === 'ack') {
      state.inFlight--
      state.waiters.shift()?.()
    } else if (msg.type === 'result') {
      this.jobs.delete(msg.job)
      state.result?.(msg.hashes)
    } else {
      this.jobs.delete(msg.job)
      this.fail(state, new Error(msg.message))
    }
  }

  private fail(state: Pending, err: Error): void {
    state.error = err
    for (const w of state.waiters.splice(0)) w()
    state.fail?.(err)
  }

  private failAll(err: Error): void {
    for (const state of this.jobs.values()) this.fail(state, err)
    this.jobs.clear()
  }
}

function inlineJob(): HashJob {
  const hasher = new MultiHasher()
  return {
    update: (chunk) => hasher.update(chunk),
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
