// Pieces shared by the zip and tar walkers: limits, error types, member-name safety, and the
// readable handed to the consumer. Nothing here touches the file system.
import { Readable } from 'node:stream'
import { formatBytes } from '../storage/ingest'
import { replaceInvisible } from '../../shared/invisible'

export type ArchiveFormat = 'zip' | 'tar' | 'tar.gz' | 'tar.bz2'

export interface UnpackLimits {
  /** entries other than directories, skipped ones included, over all nesting levels */
  maxMembers: number
  /** uncompressed bytes produced in all, nested archives' spooled bytes included */
  maxTotalBytes: number
  maxMemberBytes: number
  /** uncompressed/compressed for a member, judged once it passes RATIO_FLOOR_BYTES */
  maxRatio: number
  /** archive levels unpacked, the submitted one being 1; deeper archives are yielded as files */
  maxDepth: number
}

export const DEFAULT_UNPACK_LIMITS: Readonly<UnpackLimits> = Object.freeze({
  maxMembers: 10_000,
  maxTotalBytes: 4 * 1024 ** 3,
  maxMemberBytes: 1024 ** 3,
  maxRatio: 1000,
  maxDepth: 2
})

/** The ratio is only judged past this size: tiny members of zeros compress absurdly well. */
export const RATIO_FLOOR_BYTES = 1024 * 1024

export const BOMB_STOP = 'unpacking stopped, remaining members were not extracted'

/** A limit was exceeded while a member flowed: it errors that member's stream. */
export class UnpackLimitError extends Error {
  override name = 'UnpackLimitError'
}

/** A member could not be read (wrong password, corrupt data...): the message is for analysts. */
export class MemberError extends Error {
  override name = 'MemberError'
}

export function resolveLimits(partial: Partial<UnpackLimits> | undefined): UnpackLimits {
  const limits = { ...DEFAULT_UNPACK_LIMITS, ...partial }
  for (const [key, value] of Object.entries(limits)) {
    if (typeof value !== 'number' || !(value > 0)) throw new TypeError(`unpack limit ${key} must be a positive number`)
  }
  return limits
}

/** An entry as a walker sees it, before any policy is applied. */
export interface RawEntry {
  name: string
  /** 'file', 'directory', or what the entry is, for the skip message ("symbolic link") */
  kind: string
  /** uncompressed/compressed so far for a member that produced n bytes; absent when uncompressed */
  ratio?: (memberBytes: number) => number
  /** Streams the content into write, which applies backpressure and may throw to abort. */
  pump(write: (chunk: Uint8Array) => Promise<void>): Promise<void>
  /** Set when a skipped entry still has to be read past (streams): it is metered all the same. */
  drain?: (write: (chunk: Uint8Array) => Promise<void>) => Promise<void>
}

/** What a walker may know and do about the unpack it is part of. */
export interface WalkContext {
  label: string
  password: string
  limits: UnpackLimits
  /** bytes the rest of the unpack may still produce */
  remainingBytes(): number
  /** entries (directories aside) the rest of the unpack may still visit */
  remainingMembers(): number
  report(message: string): void
  /** reports and stops the whole unpack (bombs) */
  stop(message: string): void
  readonly halted: boolean
}

// A member name with a control character is refused (safeMemberPath): no file system should get
// one. Other invisible characters (bidi, zero-width) are kept, as a submitted name keeps them
// (storage/filenames.ts), and escaped wherever the name is shown (showName).
// eslint-disable-next-line no-control-regex -- control characters are what is refused
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** A name made printable for a message: the invisible set (src/shared/invisible.ts) becomes \xNN / \uNNNN / \u{NNNNN}. */
export function showName(name: string): string {
  return replaceInvisible(name, (code) => code < 0x100
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`)
}

/**
 * The normalized member path, or null when the name could escape a directory or is unusable.
 * Both separators count because the consumer may run on Windows; segments made only of dots
 * and spaces are refused too, since Windows trims trailing dots and spaces (".. " is "..").
 */
export function safeMemberPath(name: string): { path: string; directory: boolean } | null {
  if (name === '' || CONTROL.test(name)) return null
  if (/^[\\/]/.test(name) || /^[A-Za-z]:/.test(name)) return null
  const segments = name.split(/[\\/]/)
  if (segments.some((s) => s !== '.' && /^[. ]+$/.test(s))) return null
  const kept = segments.filter((s) => s !== '' && s !== '.')
  if (kept.length === 0) return null
  return { path: kept.join('/'), directory: /[\\/]$/.test(name) }
}

export function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return showName(message.replace(/\s+/g, ' ').trim()) || 'unknown error'
}

/** Counts what a member produces and throws once a limit is crossed, before the bytes go on. */
export class Meter {
  bytes = 0
  error: UnpackLimitError | null = null

  constructor(
    private readonly limits: UnpackLimits,
    private readonly total: { bytes: number },
    private readonly ratio: RawEntry['ratio']
  ) {}

  add(n: number): void {
    if (this.error) throw this.error
    this.bytes += n
    this.total.bytes += n
    const l = this.limits
    let why: string | null = null
    if (this.bytes > l.maxMemberBytes) why = `expands beyond ${formatBytes(l.maxMemberBytes)}`
    else if (this.total.bytes > l.maxTotalBytes) why = `takes the archive beyond ${formatBytes(l.maxTotalBytes)} in total`
    else if (this.ratio && this.bytes > RATIO_FLOOR_BYTES && this.ratio(this.bytes) > l.maxRatio) {
      why = `expands more than ${l.maxRatio} times its compressed size`
    }
    if (why) {
      this.error = new UnpackLimitError(`${why}, skipped (decompression bomb?)`)
      throw this.error
    }
  }
}

/**
 * The member stream given to the consumer. write() resolves only once the consumer has room,
 * which is what carries backpressure back to the decompressor. Once the consumer destroys it,
 * writes are dropped so the walker can move on.
 */
export class MemberSource extends Readable {
  private waiting: (() => void) | null = null
  failedByUs = false

  constructor() {
    super({ highWaterMark: 64 * 1024 })
    // A consumer without an error listener must not crash the process: errors are also reported.
    this.on('error', () => undefined)
  }

  override _read(): void {
    this.wake()
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.wake()
    cb(err)
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (this.destroyed || chunk.byteLength === 0) return
    if (!this.push(chunk)) await new Promise<void>((resolve) => (this.waiting = resolve))
  }

  end(): void {
    if (!this.destroyed) this.push(null)
  }

  fail(err: Error): void {
    if (this.destroyed || this.readableEnded) return
    this.failedByUs = true
    this.destroy(err)
  }

  private wake(): void {
    const waiting = this.waiting
    this.waiting = null
    waiting?.()
  }
}
