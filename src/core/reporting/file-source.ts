// Careful reads of files a hostile guest may have shaped: no link following on open, no
// blocking on fifos, and exactly the announced number of bytes (archive headers carry sizes).
import { constants, type Stats } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import path from 'node:path'

// O_NONBLOCK: a fifo swapped in after lstat must not park a threadpool thread in open().
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK
const CHUNK = 256 * 1024 // 3x the throughput of 64 KiB; a few chunks in flight at most
const SEP = Buffer.from(path.sep)

/** A file got shorter between its header and its last byte; the archive cannot be completed. */
export class FileChangedError extends Error {}

export function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code
}

/** `dir/name` on raw bytes, so names that are not valid UTF-8 still reach the file. */
export function childPath(dir: Buffer, name: Buffer): Buffer {
  return Buffer.concat([dir, SEP, name])
}

/** Whether `candidate` (a realpath) is `root` (a realpath) or below it. */
export function isInside(root: Buffer, candidate: Buffer): boolean {
  if (candidate.equals(root)) return true
  const prefix = root.at(-1) === SEP[0] ? root : Buffer.concat([root, SEP])
  return candidate.length > prefix.length && candidate.subarray(0, prefix.length).equals(prefix)
}

/** Byte-order comparison: stable across locales, so archives are deterministic. */
export function compareNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

/**
 * Opens `p` if it is a regular file right now (checked on the descriptor, after opening); null
 * when it has become a link, fifo, socket or directory since it was listed.
 */
export async function openRegular(p: Buffer): Promise<{ fh: FileHandle; stats: Stats } | null> {
  let fh: FileHandle
  try {
    fh = await open(p, READ_FLAGS)
  } catch (err) {
    if (errorCode(err) === 'ELOOP' || errorCode(err) === 'ENXIO') return null // a link; a socket
    throw err
  }
  try {
    const stats = await fh.stat()
    if (stats.isFile()) return { fh, stats }
  } catch (err) {
    await fh.close()
    throw err
  }
  await fh.close()
  return null
}

/**
 * Yields exactly `size` bytes of `fh`. A file that grows while read is cut at `size` (the tail
 * written after the header is left out); one that shrinks throws FileChangedError, since padding
 * would hand out silently corrupted content. Fresh buffers: consumers keep them queued.
 */
export async function* readExactly(fh: FileHandle, size: number, label: string): AsyncGenerator<Buffer> {
  let position = 0
  while (position < size) {
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - position))
    const { bytesRead } = await fh.read(buf, 0, buf.length, position)
    if (bytesRead === 0) throw new FileChangedError(`${label} shrank while being archived (${position} of ${size} bytes)`)
    position += bytesRead
    yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead)
  }
}
