// What a report says of a file's bytes, from one read of it: its size, the six hashes
// (multihash.ts) and the http(s) URLs written in it (urls.ts). Processing asks for many files at
// once (a run's dropped files: tens of thousands for ransomware) through FileHashing: the hashing
// workers read and digest them on both cores (HashPool.files), or this thread does where there is
// no worker bundle (running from sources), with the same code and results.
import { closeSync, openSync, readSync } from 'node:fs'
import { MultiHasher, type Hashes } from './multihash'
import { UrlScanner } from './urls'

export interface FileDigest extends Hashes {
  urls: string[]
}

export interface FileHashing {
  /** The digest of each file, in order; an Error for a file that could not be read. */
  files(paths: readonly string[]): Promise<(FileDigest | Error)[]>
}

/** Bytes read at a time: all of most dropped files, and a bounded buffer for any file. */
export const READ_BYTES = 1 << 20

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * Reads `file` through `buf` (the hashers and the URL scanner keep copies of what they need, so
 * the caller may reuse it at once). Reads are synchronous: a small file is read in microseconds,
 * and a read through the thread pool costs more in waiting than that (10,000 files of 8 KiB,
 * open-read-close: 0.2–0.4 s synchronous, 1.4–6 s through fs/promises or callbacks on a loaded
 * 2-core machine). The event loop gets a turn after each full buffer, so that a large file does not
 * hold up what else the thread serves.
 */
export async function digestFile(file: string, buf: Buffer): Promise<FileDigest> {
  const hasher = new MultiHasher()
  const urls = new UrlScanner()
  const fd = openSync(file, 'r')
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null)
      if (n === 0) break
      const chunk = buf.subarray(0, n)
      hasher.update(chunk)
      urls.update(chunk)
      if (n === buf.length) await turn()
    }
  } finally {
    closeSync(fd)
  }
  return { ...hasher.digest(), urls: urls.result() }
}

/** One file after the other in this thread, through one buffer; a turn of the event loop after each. */
export const inlineFileHashing: FileHashing = {
  async files(paths) {
    const buf = Buffer.allocUnsafe(READ_BYTES)
    const out: (FileDigest | Error)[] = []
    for (const p of paths) {
      out.push(await digestFile(p, buf).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))))
      await turn()
    }
    return out
  }
}
