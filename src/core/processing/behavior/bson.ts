// Reads the BSON streams Cuckoo's Windows monitor writes (logs/<pid>.bson): a plain concatenation
// of BSON documents, each prefixed by its own int32 length (shared/reference/cuckoo-internals.md
// §3.5). Written by hand on purpose: the `bson` package is not installed, and what we need is a
// small *streaming* reader that decodes one document at a time from a file of hundreds of MB with
// flat memory and stops cleanly on a truncated or garbled tail (a guest is hostile; a VM can be
// cut off mid-write). Only the element types the monitor emits are decoded: double, string,
// document, array, binary, bool, null, int32, int64 (plus UTC datetime, which costs nothing).
import { open } from 'node:fs/promises'

/** A decoded BSON value. int64 values outside ±2^53 stay exact as bigint. */
export type BsonValue = number | bigint | string | boolean | null | Buffer | BsonValue[] | BsonDocument
export interface BsonDocument {
  [key: string]: BsonValue
}

/** Cuckoo's netlog.py stops at a message over 20 MiB; so do we. */
export const MAX_MESSAGE_LENGTH = 20 * 1024 * 1024

export class BsonError extends Error {}

const MAX_DEPTH = 64

function cstring(buf: Buffer, at: number, end: number): [string, number] {
  const nul = buf.indexOf(0, at)
  if (nul < 0 || nul >= end) throw new BsonError(`unterminated key at ${at}`)
  // Keys the monitor writes are ASCII; latin1 decodes them faster than utf8 and never fails.
  return [buf.toString('latin1', at, nul), nul + 1]
}

function decodeElements(buf: Buffer, start: number, isArray: boolean, depth: number): [BsonDocument | BsonValue[], number] {
  if (depth > MAX_DEPTH) throw new BsonError('documents nested too deep')
  if (start + 5 > buf.length) throw new BsonError(`document at ${start} runs past the end`)
  const size = buf.readInt32LE(start)
  const end = start + size
  if (size < 5 || end > buf.length) throw new BsonError(`bad document length ${size} at ${start}`)
  if (buf[end - 1] !== 0) throw new BsonError(`document at ${start} lacks its terminator`)
  const doc: BsonDocument = {}
  const list: BsonValue[] = []
  let at = start + 4
  while (at < end - 1) {
    const type = buf[at] ?? 0
    const [key, next] = cstring(buf, at + 1, end - 1)
    at = next
    let value: BsonValue
    switch (type) {
      case 0x01:
        value = buf.readDoubleLE(at)
        at += 8
        break
      case 0x02: {
        const len = buf.readInt32LE(at)
        if (len < 1 || at + 4 + len > end) throw new BsonError(`bad string length ${len} for ${key}`)
        value = buf.toString('utf8', at + 4, at + 4 + len - 1)
        at += 4 + len
        break
      }
      case 0x03:
      case 0x04: {
        const [sub, after] = decodeElements(buf, at, type === 0x04, depth + 1)
        value = sub
        at = after
        break
      }
      case 0x05: {
        const len = buf.readInt32LE(at)
        if (len < 0 || at + 5 + len > end) throw new BsonError(`bad binary length ${len} for ${key}`)
        // A view, not a copy: chunks are never reused, and a view pins its chunk only as long as
        // the caller keeps it (the monitor-log parser turns buffers into strings right away).
        value = buf.subarray(at + 5, at + 5 + len)
        at += 5 + len
        break
      }
      case 0x08:
        value = buf[at] !== 0
        at += 1
        break
      case 0x09:
        value = Number(buf.readBigInt64LE(at)) / 1000
        at += 8
        break
      case 0x0a:
        value = null
        break
      case 0x10:
        value = buf.readInt32LE(at)
        at += 4
        break
      case 0x12: {
        const big = buf.readBigInt64LE(at)
        value = big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big
        at += 8
        break
      }
      default:
        throw new BsonError(`unsupported element type 0x${type.toString(16)} for ${key}`)
    }
    if (at > end - 1) throw new BsonError(`element ${key} runs past its document`)
    if (isArray) list.push(value)
    else doc[key] = value
  }
  return [isArray ? list : doc, end]
}

/** Decodes one whole BSON document (length prefix included). */
export function decodeBson(buf: Buffer): BsonDocument {
  const [doc, end] = decodeElements(buf, 0, false, 0)
  if (end !== buf.length) throw new BsonError(`trailing ${buf.length - end} bytes after the document`)
  return doc as BsonDocument
}

/** Why a stream ended: at the end of the file, or early at a bad or truncated message. */
export interface BsonStreamEnd {
  complete: boolean
  /** Byte offset where reading stopped. */
  offset: number
  reason: string | null
}

/**
 * Yields the documents of a BSON stream file one by one, reading it in chunks (memory is bounded
 * by the largest message, at most MAX_MESSAGE_LENGTH). Like Cuckoo, the first bad, oversized or
 * truncated message ends the stream; `onEnd` says where and why.
 */
export async function* readBsonStream(path: string, onEnd?: (end: BsonStreamEnd) => void, chunkSize = 1 << 20): AsyncGenerator<BsonDocument> {
  const fh = await open(path, 'r')
  let buf = Buffer.alloc(0)
  let fileOffset = 0
  let consumed = 0
  let eof = false
  let reason: string | null = null
  const fill = async (need: number): Promise<boolean> => {
    while (buf.length < need && !eof) {
      const chunk = Buffer.allocUnsafe(Math.max(chunkSize, need - buf.length))
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, fileOffset)
      if (bytesRead === 0) eof = true
      fileOffset += bytesRead
      buf = buf.length === 0 ? chunk.subarray(0, bytesRead) : Buffer.concat([buf, chunk.subarray(0, bytesRead)])
    }
    return buf.length >= need
  }
  try {
    for (;;) {
      if (!(await fill(4))) {
        if (buf.length !== 0) reason = `truncated length prefix (${buf.length} bytes)`
        break
      }
      const len = buf.readInt32LE(0)
      if (len < 5 || len > MAX_MESSAGE_LENGTH) {
        reason = `bad message length ${len}`
        break
      }
      if (!(await fill(len))) {
        reason = `truncated message: ${buf.length} of ${len} bytes`
        break
      }
      let doc: BsonDocument
      try {
        doc = decodeBson(buf.subarray(0, len))
      } catch (err) {
        reason = `undecodable message: ${(err as Error).message}`
        break
      }
      buf = buf.subarray(len)
      consumed += len
      yield doc
    }
  } finally {
    await fh.close()
    onEnd?.({ complete: reason === null, offset: consumed, reason })
  }
}
