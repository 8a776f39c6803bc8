// Unpacks an archive off the page's thread (see archive.ts) and posts its entries back as Blobs.
import { readToBlobs, type WorkerReply, type WorkerRequest } from './archive'

const post = (m: WorkerReply) => (self as unknown as { postMessage(m: WorkerReply): void }).postMessage(m)

self.onmessage = (e: MessageEvent<WorkerRequest>) => {
  readToBlobs(e.data.file, (phase, bytes) => post({ kind: 'progress', phase, bytes }))
    .then((entries) => post({ kind: 'done', entries }))
    .catch((err: unknown) => post({ kind: 'error', message: err instanceof Error ? err.message : String(err) }))
}
