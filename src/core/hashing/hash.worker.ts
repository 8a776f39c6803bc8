// A hashing lane off the main thread: the service keeps answering while a large upload is
// hashed, and two lanes put the work on both cores. A lane serves many uploads at once, each
// under its own job id, reading chunks from the shared slots (see hash-protocol.ts). It also
// reads and digests whole files for processing (`files`), one batch after the other.
import { parentPort, workerData } from 'node:worker_threads'
import { LaneHasher } from './multihash'
import { READ_BYTES, digestFile } from './file-digest'
import { SLOT_BYTES, type WorkerReply, type WorkerRequest } from './hash-protocol'

const port = parentPort
if (!port) throw new Error('hash.worker must run in a worker thread')
const slots = new Uint8Array((workerData as { slots: SharedArrayBuffer }).slots)
const jobs = new Map<number, LaneHasher>()
const fileBuf = Buffer.allocUnsafe(READ_BYTES)
let fileBatches: Promise<void> = Promise.resolve()

/** A batch of whole files, after the batches before it (they share one read buffer). */
async function digestBatch(job: number, paths: string[]): Promise<void> {
  const results: (Awaited<ReturnType<typeof digestFile>> | { error: string })[] = []
  for (const p of paths) {
    try {
      results.push(await digestFile(p, fileBuf))
    } catch (err) {
      results.push({ error: (err as Error).message })
    }
  }
  port!.postMessage({ type: 'files', job, results } satisfies WorkerReply)
}

port.on('message', (msg: WorkerRequest) => {
  const reply = handle(msg)
  if (reply) port.postMessage(reply)
})

function handle(msg: WorkerRequest): WorkerReply | null {
  switch (msg.type) {
    case 'start':
      jobs.set(msg.job, new LaneHasher(msg.kinds))
      return null
    case 'data': {
      // Always acknowledge, even for an aborted job: the slot must come back to the pool.
      try {
        jobs.get(msg.job)?.update(slots.subarray(msg.slot * SLOT_BYTES, msg.slot * SLOT_BYTES + msg.length))
      } catch (err) {
        jobs.delete(msg.job)
        port!.postMessage({ type: 'error', job: msg.job, message: (err as Error).message } satisfies WorkerReply)
      }
      return { type: 'ack', job: msg.job, slot: msg.slot }
    }
    case 'end': {
      const hasher = jobs.get(msg.job)
      jobs.delete(msg.job)
      if (!hasher) return null
      try {
        return { type: 'result', job: msg.job, hashes: hasher.digest() }
      } catch (err) {
        return { type: 'error', job: msg.job, message: (err as Error).message }
      }
    }
    case 'abort':
      jobs.delete(msg.job)
      return null
    case 'files':
      // Each file's failure is in its result; anything else must not stop the batches after it.
      fileBatches = fileBatches.then(() => digestBatch(msg.job, msg.paths)).catch(() => undefined)
      return null
  }
}
