// Streams an upload to a temporary file in the data directory while hashing it, in one pass
// with backpressure, so memory stays flat whatever the size.
import { createWriteStream } from 'node:fs'
import { unlink } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { HashPool } from '../hashing/hash-pool'
import type { Hashes } from '../hashing/multihash'

export interface IngestedFile extends Hashes {
  tmpPath: string
}

export class TooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`exceeds the limit of ${formatBytes(limit)}`)
  }
}

export async function ingestStream(
  source: Readable,
  opts: { tmpDir: string; pool: HashPool; maxBytes: number }
): Promise<IngestedFile> {
  const tmpPath = path.join(opts.tmpDir, `upload-${randomBytes(12).toString('hex')}`)
  const job = opts.pool.start()
  let size = 0
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length
      if (size > opts.maxBytes) return done(new TooLargeError(opts.maxBytes))
      let pending
      try {
        pending = job.update(chunk)
      } catch (err) {
        return done(err as Error)
      }
      if (pending) pending.then(() => done(null, chunk), done)
      else done(null, chunk)
    }
  })
  try {
    await pipeline(source, tap, createWriteStream(tmpPath, { flags: 'wx', mode: 0o600 }))
    const hashes = await job.digest()
    return { ...hashes, tmpPath }
  } catch (err) {
    job.abort()
    await unlink(tmpPath).catch(() => undefined)
    throw err
  }
}

export function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  let v = n
  while (v >= 1024 && i < units.length - 1 && Number.isInteger(v / 1024)) {
    v /= 1024
    i++
  }
  return `${v} ${units[i]}`
}
