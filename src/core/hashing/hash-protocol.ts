import type { Hashes } from './multihash'

export type WorkerRequest =
  | { type: 'start'; job: number }
  | { type: 'data'; job: number; buf: ArrayBuffer }
  | { type: 'end'; job: number }
  | { type: 'abort'; job: number }

export type WorkerReply =
  | { type: 'ack'; job: number }
  | { type: 'result'; job: number; hashes: Hashes }
  | { type: 'error'; job: number; message: string }
