// Opens a tar file, plain or compressed, as one stream of tar bytes. bzip2 goes through the
// system binary: pure-JS decoders are far too slow for large samples.
import { spawn } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { pipeline, type Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import type { ArchiveFormat } from './unpack-common'

export interface Decompressed {
  stream: Readable
  /** compressed bytes read so far; undefined for an uncompressed tar */
  consumed(): number | undefined
  /** the decompressor's own verdict once it is done: null when it ended cleanly or was closed by us */
  finished: Promise<Error | null>
  /** stops everything early and waits for a child process to exit */
  close(): Promise<void>
}

export const BZIP2_MISSING = 'the bzip2 program is not installed on this host (it is needed for .bz2 archives)'

export function openDecompressed(file: string, format: Exclude<ArchiveFormat, 'zip'>): Decompressed {
  const input = createReadStream(file, { highWaterMark: 64 * 1024 })
  if (format === 'tar') {
    const finished = new Promise<Error | null>((resolve) => {
      input.once('error', resolve)
      input.once('close', () => resolve(null))
    })
    return { stream: input, consumed: () => undefined, finished, close: async () => void input.destroy() }
  }
  if (format === 'tar.gz') {
    const gunzip = createGunzip()
    let closing = false
    const finished = new Promise<Error | null>((resolve) => {
      pipeline(input, gunzip, () => undefined) // errors reach gunzip, which is watched below
      gunzip.once('error', (err) => resolve(closing ? null : err))
      gunzip.once('end', () => resolve(null))
      gunzip.once('close', () => resolve(null))
    })
    return {
      stream: gunzip,
      consumed: () => gunzip.bytesWritten,
      finished,
      close: async () => {
        closing = true
        gunzip.destroy()
        input.destroy()
      }
    }
  }
  return openBzip2(input)
}

function openBzip2(input: Readable): Decompressed {
  const child = spawn('bzip2', ['-dc'], { stdio: ['pipe', 'pipe', 'pipe'] })
  let read = 0
  let stderr = ''
  let killed = false
  input.on('data', (chunk: Buffer) => (read += chunk.length))
  // EPIPE once bzip2 is gone is expected: its exit status tells what happened.
  pipeline(input, child.stdin, () => undefined)
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 2000) stderr += chunk.toString('utf8')
  })
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()))
  const finished = new Promise<Error | null>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => {
      const failure = err.code === 'ENOENT' ? new Error(BZIP2_MISSING) : err
      child.stdout.destroy(failure)
      input.destroy()
      resolve(failure)
    })
    child.once('close', (code, signal) => {
      if (killed || code === 0) return resolve(null)
      const said = stderr.replace(/^bzip2:\s*/gm, '').replace(/\s+/g, ' ').trim()
      const failure = new Error(said || `bzip2 failed (${signal ?? `exit code ${code}`})`)
      if (!child.stdout.readableEnded) child.stdout.destroy(failure)
      resolve(failure)
    })
  })
  return {
    stream: child.stdout,
    consumed: () => read,
    finished,
    close: async () => {
      input.destroy()
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        killed = true
        child.kill('SIGKILL')
      }
      child.stdout.destroy()
      if (child.pid !== undefined) await exited
    }
  }
}

/** The first bytes of the decompressed data, or fewer when it is shorter or broken. */
export async function readDecompressedHead(file: string, format: 'tar.gz' | 'tar.bz2', n: number): Promise<Buffer> {
  const dec = openDecompressed(file, format)
  const chunks: Buffer[] = []
  let length = 0
  try {
    for await (const chunk of dec.stream as AsyncIterable<Buffer>) {
      chunks.push(chunk)
      length += chunk.length
      if (length >= n) break
    }
  } catch {
    // corrupt data: judge on what came out
  }
  if (length < n) {
    const failure = await dec.finished
    if (failure?.message === BZIP2_MISSING) throw failure
  }
  await dec.close()
  return Buffer.concat(chunks).subarray(0, n)
}
