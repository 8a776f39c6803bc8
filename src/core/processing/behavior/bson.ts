// Reads the BSON streams Cuckoo's Windows monitor writes (logs/<pid>.bson): a plain concatenation
// of BSON documents, each prefixed by its own int32 length (Cuckoo 2.0.7's
// cuckoo/common/netlog.py, BsonParser). The framing is here: a *streaming* reader that takes one document at a time from a file of
// hundreds of MB with flat memory, and stops cleanly on a truncated or garbled tail (a guest is
// hostile; a VM can be cut off mid-write). Each document is decoded by the maintained `bson`
// package (MongoDB's), then brought to the plain values the monitor parser reads: int64 as a number
// (a bigint beyond ±2^53), binary as a Buffer, a UTC datetime as epoch seconds.
import { open } from 'node:fs/promises'
import { BSONError, deserialize } from 'bson'

/** A decoded BSON value. int64 values outside ±2^53 stay exact as bigint. */
export type BsonValue = number | bigint | string | boolean | null | Buffer | BsonValue[] | BsonDocument
export interface BsonDocument {
  [key: string]: BsonValue
}

/** Cuckoo's netlog.py stops at a message over 20 MiB; so do we. */
export const MAX_MESSAGE_LENGTH = 20 * 1024 * 1024

export class BsonError extends Error {}

const MAX_DEPTH = 64
const SAFE = { min: BigInt(Number.MIN_SAFE_INTEGER), max: BigInt(Number.MAX_SAFE_INTEGER) }

/** The package's values as the monitor parser reads them; other BSON types (the monitor sends none) are null. */
function plainValue(v: unknown, depth: number): BsonValue {
  if (depth > MAX_DEPTH) throw new BsonError('documents nested too deep')
  if (v === null || v === undefined) return null
  switch (typeof v) {
    case 'number': case 'string': case 'boolean': return v
    case 'bigint': return v >= SAFE.min && v <= SAFE.max ? Number(v) : v
    default: break
  }
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength)
  if (v instanceof Date) return v.getTime() / 1000
  if (Array.isArray(v)) return v.map((x) => plainValue(x, depth + 1))
  if (typeof v === 'object' && (v as { _bsontype?: unknown })._bsontype === undefined) {
    const doc: BsonDocument = {}
    for (const [k, x] of Object.entries(v)) doc[k] = plainValue(x, depth + 1)
    return doc
  }
  return null
}

/** Decodes one whole BSON document (length prefix included). */
export function decodeBson(buf: Buffer): BsonDocument {
  let doc: Record<string, unknown>
  try {
    // useBigInt64: int64 as bigint (made a number when it fits); promoteBuffers: binary as bytes;
    // no UTF-8 validation: the monitor writes what the sample gave it, decoded with replacement.
    doc = deserialize(buf, { useBigInt64: true, promoteBuffers: true, validation: { utf8: false }, allowObjectSmallerThanBufferSize: false })
  } catch (err) {
    if (err instanceof BSONError || err instanceof RangeError) throw new BsonError(err.message)
    throw err
  }
  return plainValue(doc, 0) as BsonDocument
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
