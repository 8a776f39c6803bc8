import type { HashKind } from './multihash'
import type { FileDigest } from './file-digest'

/**
 * Chunks travel in slots of one SharedArrayBuffer that both workers read and that is written
 * to disk from: nothing is copied or allocated per chunk beyond one memcpy into the slot, so
 * memory stays flat, and a slot of 1 MiB makes one message and one write per MiB.
 */
export const SLOT_BYTES = 1024 * 1024
export const SLOTS = 4

export type WorkerRequest =
  | { type: 'start'; job: number; kinds: HashKind[] }
  | { type: 'data'; job: number; slot: number; length: number }
  | { type: 'end'; job: number }
  | { type: 'abort'; job: number }
  /** Whole files, read and digested by the worker itself (HashPool.files). */
  | { type: 'files'; job: number; paths: string[] }

export type WorkerReply =
  | { type: 'ack'; job: number; slot: number }
  | { type: 'result'; job: number; hashes: Partial<Record<HashKind, string>> }
  | { type: 'error'; job: number; message: string }
  | { type: 'files'; job: number; results: (FileDigest | { error: string })[] }
