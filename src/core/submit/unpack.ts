// Unpacks a submitted archive into members, one analysis task each. Archives are hostile:
// names are checked before use, bytes are counted as they flow (headers lie), nested archives
// are spooled to the caller's scratch directory only, and every problem becomes a message for
// the analyst while the good members still come through.
import { randomUUID } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { open, rm, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import {
  BOMB_STOP,
  MemberError,
  MemberSource,
  Meter,
  UnpackLimitError,
  describeError,
  resolveLimits,
  safeMemberPath,
  showName,
  type ArchiveFormat,
  type RawEntry,
  type UnpackLimits,
  type WalkContext
} from './unpack-common'
import { SNIFF_BYTES, detectArchive, detectNestedArchive, sniffArchive } from './unpack-detect'

export { DEFAULT_UNPACK_LIMITS, RATIO_FLOOR_BYTES, UnpackLimitError } from './unpack-common'
export type { ArchiveFormat, UnpackLimits } from './unpack-common'
export { detectArchive, resolveCompressed, sniffArchive } from './unpack-detect'

export interface ArchiveMember {
  /** normalized path inside its innermost archive, forward slashes */
  path: string
  /** enclosing archives, outer to inner; the first is the caller's archiveName */
  containers: string[]
  /** must be consumed (or destroyed) before onMember's promise settles; the rest is dropped */
  source: Readable
}

export interface UnpackOptions {
  archiveName: string
  format?: ArchiveFormat
  /** for encrypted zip entries, "infected" by default */
  password?: string
  /** scratch for nested archives, owned by the caller; left as it was found */
  tmpDir: string
  limits?: Partial<UnpackLimits>
  onMember: (m: ArchiveMember) => Promise<void>
}

export interface UnpackResult {
  format: ArchiveFormat
  /** members handed to onMember */
  members: number
  errors: string[]
}

/** State shared by an archive and everything nested in it: one budget for the whole unpack. */
interface Unpack {
  limits: UnpackLimits
  password: string
  tmpDir: string
  onMember: (m: ArchiveMember) => Promise<void>
  errors: string[]
  total: { bytes: number }
  entries: number
  yielded: number
  stopped: boolean
  fatal: { error: unknown } | null
  spools: Set<string>
}

export async function unpackArchive(filePath: string, opts: UnpackOptions): Promise<UnpackResult> {
  const limits = resolveLimits(opts.limits)
  const format = opts.format ?? (await detectArchive(filePath))
  if (!format) throw new Error(`${showName(opts.archiveName)} is not a zip or tar archive`)
  const u: Unpack = {
    limits,
    password: opts.password ?? 'infected',
    tmpDir: opts.tmpDir,
    onMember: opts.onMember,
    errors: [],
    total: { bytes: 0 },
    entries: 0,
    yielded: 0,
    stopped: false,
    fatal: null,
    spools: new Set()
  }
  try {
    await walk(u, filePath, format, [opts.archiveName], 1)
  } finally {
    await Promise.all([...u.spools].map((p) => rm(p, { force: true })))
  }
  if (u.fatal) throw u.fatal.error
  return { format, members: u.yielded, errors: u.errors }
}

async function walk(u: Unpack, file: string, format: ArchiveFormat, containers: string[], depth: number): Promise<void> {
  const label = containers.map(showName).join(' > ')
  const w: WalkContext = {
    label,
    password: u.password,
    limits: u.limits,
    remainingBytes: () => u.limits.maxTotalBytes - u.total.bytes,
    remainingMembers: () => u.limits.maxMembers - u.entries,
    report: (message) => void u.errors.push(message),
    stop: (message) => {
      u.errors.push(message)
      u.stopped = true
    },
    get halted() {
      return u.stopped || u.fatal !== null
    }
  }
  const visit = (e: RawEntry) => visitEntry(u, w, e, containers, depth)
  // The readers and their libraries (zip.js, tar-stream) load with the first archive submitted:
  // the service does not carry them for plain uploads.
  if (format === 'zip') await (await import('./unpack-zip')).walkZip(file, w, visit)
  else await (await import('./unpack-tar')).walkTar(file, format, w, visit)
}

/** Where a member's bytes go once its first bytes have said what it is. */
interface Output {
  write(chunk: Uint8Array): Promise<void>
  /** all bytes are in: hand over, recurse, clean up */
  finish(): Promise<void>
  fail(err: Error): Promise<void>
}

async function visitEntry(u: Unpack, w: WalkContext, e: RawEntry, containers: string[], depth: number): Promise<void> {
  if (w.halted || e.kind === 'directory') return
  // Skipped entries count too: millions of links are as much a bomb as millions of files.
  if (++u.entries > u.limits.maxMembers) {
    return w.stop(`${w.label}: more than ${u.limits.maxMembers} members; ${BOMB_STOP}`)
  }
  const shown = `${w.label}: '${showName(e.name)}'`
  const meter = new Meter(u.limits, u.total, e.ratio)
  const failed = (err: unknown): void => {
    const limit = meter.error ?? (err instanceof UnpackLimitError ? err : null)
    if (limit) return w.stop(`${shown}: ${limit.message}; ${BOMB_STOP}`)
    w.report(`${shown}: ${err instanceof MemberError ? err.message : `could not be read (${describeError(err)})`}`)
  }
  const skip = async (why: string): Promise<void> => {
    w.report(`${shown}: ${why}, skipped`)
    await e.drain?.(async (chunk) => meter.add(chunk.byteLength)).catch(failed)
  }
  if (e.kind !== 'file') return skip(e.kind)
  const safe = safeMemberPath(e.name)
  if (!safe) return skip('unsafe path in archive')
  if (safe.directory) return

  const nestable = depth < u.limits.maxDepth
  const head: Uint8Array[] = []
  let headLength = 0
  // Set once the first bytes have said whether this may be a nested archive.
  const to: { out: Output | null } = { out: null }
  const begin = async (): Promise<Output> => {
    const first = Buffer.concat(head)
    const spool = nestable && sniffArchive(first) !== null
    const out = spool ? await spoolOutput(u, safe.path, containers, depth) : streamOutput(u, safe.path, containers)
    to.out = out
    if (first.length) await out.write(first)
    return out
  }
  const write = async (chunk: Uint8Array): Promise<void> => {
    if (u.fatal) throw u.fatal.error
    meter.add(chunk.byteLength)
    if (to.out) return to.out.write(chunk)
    head.push(chunk)
    headLength += chunk.byteLength
    if (headLength >= SNIFF_BYTES) await begin()
  }

  let out: Output
  try {
    await e.pump(write)
    out = to.out ?? (await begin())
  } catch (err) {
    if (u.fatal) return to.out?.fail(new Error('unpacking was aborted'))
    failed(err)
    // The consumer gets the limit error itself, or the message the analyst gets.
    return to.out?.fail(meter.error ?? new MemberError(u.errors[u.errors.length - 1]))
  }
  await out.finish()
}

/** The member goes straight to the consumer. */
function streamOutput(u: Unpack, memberPath: string, containers: string[]): Output {
  const source = new MemberSource()
  u.yielded++
  const done = handOver(u, { path: memberPath, containers, source }, () => source.failedByUs)
  return {
    write: (chunk) => source.write(chunk),
    finish: async () => {
      source.end()
      await done
    },
    fail: async (err) => {
      source.fail(err)
      await done
    }
  }
}

/**
 * Calls onMember and watches it. When it settles, an unconsumed stream is destroyed so the
 * walker cannot wait on it forever; a rejection we did not cause aborts the whole unpack.
 */
function handOver(u: Unpack, member: ArchiveMember, causedByUs: () => boolean): Promise<void> {
  return Promise.resolve()
    .then(() => u.onMember(member))
    .then(
      () => void member.source.destroy(),
      (error: unknown) => {
        member.source.destroy()
        if (!causedByUs()) u.fatal ??= { error }
      }
    )
}

/** A possible nested archive: spooled to tmpDir, then unpacked or handed over from there. */
async function spoolOutput(u: Unpack, memberPath: string, containers: string[], depth: number): Promise<Output> {
  const tmp = path.join(u.tmpDir, `aviary-unpack-${randomUUID()}.tmp`)
  // The scratch directory failing is the host's problem, not the archive's: abort, and keep
  // absolute paths out of the message.
  const scratchFailed = (err: unknown): never => {
    const code = (err as NodeJS.ErrnoException).code ?? 'error'
    u.fatal ??= { error: new Error(`cannot write to the scratch directory (${code})`) }
    throw u.fatal.error
  }
  u.spools.add(tmp)
  let fh: FileHandle | null = await open(tmp, 'wx', 0o600).catch(scratchFailed)
  const close = async () => {
    const handle = fh
    fh = null
    await handle?.close()
  }
  const discard = async () => {
    await close()
    await rm(tmp, { force: true })
    u.spools.delete(tmp)
  }
  return {
    write: async (chunk) => {
      // FileHandle.write may write less than asked (a full disk, say): loop until it is all out.
      for (let done = 0; fh && done < chunk.byteLength; ) {
        const { bytesWritten } = await fh.write(chunk, done, chunk.byteLength - done).catch(scratchFailed)
        done += bytesWritten
      }
    },
    fail: discard,
    finish: async () => {
      try {
        await close()
        const format = await detectNestedArchive(tmp).catch((err: unknown) => {
          u.errors.push(`${containers.map(showName).join(' > ')}: '${showName(memberPath)}': ${describeError(err)}`)
          return null
        })
        if (format) await walk(u, tmp, format, [...containers, memberPath], depth + 1)
        else await yieldFile(u, tmp, memberPath, containers)
      } finally {
        await discard()
      }
    }
  }
}

async function yieldFile(u: Unpack, file: string, memberPath: string, containers: string[]): Promise<void> {
  if (u.stopped || u.fatal) return
  const source = createReadStream(file)
  let readFailed: unknown = null
  source.on('error', (err) => (readFailed = err))
  u.yielded++
  await handOver(u, { path: memberPath, containers, source }, () => readFailed !== null)
  if (readFailed) {
    u.errors.push(`${containers.map(showName).join(' > ')}: '${showName(memberPath)}': could not be read back (${describeError(readFailed)})`)
  }
}
