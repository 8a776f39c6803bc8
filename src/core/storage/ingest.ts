// Streams an upload to a temporary file in the data directory while hashing it, in one pass
// with backpressure, so memory stays flat whatever the size.
import { open, unlink } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import type { Readable } from 'node:stream'
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
  const file = await open(tmpPath, 'wx', 0o600)
  // The hashing job also writes the bytes to the file: one copy into shared memory serves
  // both hashing lanes and the disk.
  const job = opts.pool.start(file.fd)
  let size = 0
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      size += chunk.length
      if (size > opts.maxBytes) throw new TooLargeError(opts.maxBytes)
      await job.update(chunk)
    }
    const hashes = await job.digest()
    await file.close()
    return { ...hashes, tmpPath }
  } catch (err) {
    job.abort()
    await file.close().catch(() => undefined)
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
