// Hashing off the main thread: the service keeps answering while a large upload is hashed,
// and the socket, the disk writes and the hashes use both cores. One worker serves many
// uploads at once, each under its own job id.
import { parentPort } from 'node:worker_threads'
import { MultiHasher } from './multihash'
import type { WorkerRequest, WorkerReply } from './hash-protocol'

const jobs = new Map<number, MultiHasher>()
const port = parentPort
if (!port) throw new Error('hash.worker must run in a worker thread')

port.on('message', (msg: WorkerRequest) => {
  let reply: WorkerReply
  try {
    if (msg.type === 'data') {
      jobs.get(msg.job)?.update(new Uint8Array(msg.buf))
      reply = { type: 'ack', job: msg.job }
    } else if (msg.type === 'start') {
      jobs.set(msg.job, new MultiHasher())
      return
    } else if (msg.type === 'end') {
      const hasher = jobs.get(msg.job)
      jobs.delete(msg.job)
      if (!hasher) return
      reply = { type: 'result', job: msg.job, hashes: hasher.digest() }
    } else {
      jobs.delete(msg.job)
      return
    }
  } catch (err) {
    jobs.delete(msg.job)
    reply = { type: 'error', job: msg.job, message: (err as Error).message }
  }
  port.postMessage(reply)
})
