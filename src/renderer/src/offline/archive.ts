// Reads an analysis archive entirely in the page: the `all` archive of Aviary or any
// Cuckoo-compatible server (tar, tar.gz, tar.bz2) or a zip. Decompression and tar parsing run in a
// worker (archive.worker.ts) so a big archive does not freeze the page; where no Worker exists
// (tests) the same code runs inline. Entries come back as Blobs, so the unpacked bytes are held
// once, by the browser's blob store, and shown through blob: URLs.
import { gunzipSync, unzipSync } from 'fflate'
import { readTar } from './tar'
import { bunzip2 } from './bunzip'

export type ArchiveFormat = 'tar' | 'gzip' | 'bzip2' | 'zip'

/**
 * Largest archive read: the whole file and its unpacked tar are held in memory (fflate, the tar reader and
 * seek-bzip work on whole arrays), and a browser's ArrayBuffer tops out at 2–4 GiB. A bigger
 * analysis is opened as a folder instead, where every file is read only when shown.
 */
export const MAX_ARCHIVE_BYTES = 1024 ** 3
export const MAX_UNPACKED_BYTES = 2 * 1024 ** 3

export class ArchiveError extends Error {}

/** A Blob's bytes (FileReader where Blob.arrayBuffer is missing: older engines, jsdom). */
export function readBlob(blob: Blob): Promise<ArrayBuffer> {
  if (typeof blob.arrayBuffer === 'function') return blob.arrayBuffer()
  return new Promise((resolve, reject) => {
    const r = new FileReader()
    r.onload = () => resolve(r.result as ArrayBuffer)
    r.onerror = () => reject(r.error ?? new Error('the file could not be read'))
    r.readAsArrayBuffer(blob)
  })
}

export function detectFormat(head: Uint8Array): ArchiveFormat | null {
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip'
  if (head[0] === 0x42 && head[1] === 0x5a && head[2] === 0x68) return 'bzip2'
  if (head[0] === 0x50 && head[1] === 0x4b && (head[2] === 0x03 || head[2] === 0x05)) return 'zip'
  // ustar magic at 257; an old v7 tar has none but a valid header checksum.
  const magic = String.fromCharCode(...head.subarray(257, 262))
  if (magic === 'ustar' || (head.length >= 512 && tarChecksumOk(head))) return 'tar'
  return null
}

function tarChecksumOk(h: Uint8Array): boolean {
  const stored = parseInt(String.fromCharCode(...h.subarray(148, 156)).replace(/\0/g, ' ').trim(), 8)
  if (!Number.isFinite(stored)) return false
  let sum = 0
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : (h[i] as number)
  return sum === stored
}

export interface RawEntry { name: string; data: Uint8Array }

/** A path as the archive gives it, made relative and safe to use as a key ("./a//b" → "a/b"). */
export function cleanPath(name: string): string | null {
  const parts = name.replace(/\\/g, '/').split('/').filter((p) => p !== '' && p !== '.')
  if (parts.some((p) => p === '..')) return null
  return parts.length > 0 ? parts.join('/') : null
}

/** Unpacks an archive (synchronously: run it in a worker). */
export function unpack(bytes: Uint8Array, progress?: (phase: string, bytes: number) => void): RawEntry[] {
  const format = detectFormat(bytes)
  if (format === null) throw new ArchiveError('Not a tar, tar.gz, tar.bz2 or zip archive.')
  if (format === 'zip') {
    progress?.('unzipping', 0)
    const files = unzipSync(bytes)
    return Object.entries(files).filter(([n]) => !n.endsWith('/')).map(([name, data]) => ({ name, data }))
  }
  let tar = bytes
  if (format === 'gzip') {
    progress?.('gunzip', 0)
    tar = gunzipSync(bytes)
  } else if (format === 'bzip2') {
    progress?.('bunzip2', 0)
    tar = bunzip2(bytes, (n) => progress?.('bunzip2', n), MAX_UNPACKED_BYTES)
  }
  if (detectFormat(tar) !== 'tar') throw new ArchiveError(`The ${format} file does not hold a tar archive.`)
  progress?.('reading tar', tar.length)
  return readTar(tar).filter((e) => e.name !== '')
}

export interface WorkerRequest { file: Blob }
export type WorkerReply =
  | { kind: 'progress'; phase: string; bytes: number }
  | { kind: 'done'; entries: { name: string; blob: Blob }[] }
  | { kind: 'error'; message: string }

/** The worker's job, also run inline where there is no Worker. */
export async function readToBlobs(file: Blob, progress?: (phase: string, bytes: number) => void): Promise<{ name: string; blob: Blob }[]> {
  if (file.size > MAX_ARCHIVE_BYTES) {
    throw new ArchiveError(`The archive is ${(file.size / 1024 ** 3).toFixed(1)} GiB; archives up to 1 GiB are read in the page. Unpack it and open the folder instead.`)
  }
  const bytes = new Uint8Array(await readBlob(file))
  let entries: RawEntry[]
  try {
    entries = unpack(bytes, progress)
  } catch (err) {
    if (err instanceof ArchiveError) throw err
    throw new ArchiveError(`The archive could not be read: ${(err as Error).message}`)
  }
  const out: { name: string; blob: Blob }[] = []
  for (const e of entries) {
    const name = cleanPath(e.name)
    if (name !== null) out.push({ name, blob: new Blob([e.data as Uint8Array<ArrayBuffer>]) })
  }
  return out
}

/** Reads an archive in a worker when the platform has one; progress says what it is doing. */
export function readArchive(file: Blob, progress?: (phase: string, bytes: number) => void): Promise<{ name: string; blob: Blob }[]> {
  if (typeof Worker === 'undefined') return readToBlobs(file, progress)
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./archive.worker.ts', import.meta.url), { type: 'module' })
    worker.onmessage = (e: MessageEvent<WorkerReply>) => {
      const m = e.data
      if (m.kind === 'progress') { progress?.(m.phase, m.bytes); return }
      worker.terminate()
      if (m.kind === 'done') resolve(m.entries)
      else reject(new ArchiveError(m.message))
    }
    worker.onerror = (e) => { worker.terminate(); reject(new ArchiveError(`The archive reader stopped: ${e.message || 'out of memory?'}`)) }
    worker.postMessage({ file } satisfies WorkerRequest)
  })
}
