// Where the bytes of a result-server connection go once the header is read: a file (FILE, BSON)
// with the per-file cap and Cuckoo's `... (truncated)` marker, or the task log (LOG) line by line.
// Both charge a per-task budget, so one guest cannot fill the disk over many connections. They
// are Writables fed by stream.pipeline, so a guest faster than the disk is slowed by TCP
// backpressure instead of filling memory. Hand-written because the caps, the marker and the
// budget shared by several streams are this protocol's own rules.
import { Writable } from 'node:stream'
import type { FileHandle } from 'node:fs/promises'

/** The bytes a task may still store, shared by all its connections (taskMaxSize). */
export class TaskBudget {
  private used = 0
  private over = false

  constructor(private readonly max: number, private readonly onExceeded: () => void) {}

  get exceeded(): boolean {
    return this.over
  }

  /** How many of `n` bytes may be stored; the first shortfall marks the task as over its cap. */
  take(n: number): number {
    if (this.over) return 0
    const room = this.max - this.used
    if (n <= room) {
      this.used += n
      return n
    }
    this.used = this.max
    this.over = true
    this.onExceeded()
    return room
  }
}

/** Cuckoo's marker after the first byte beyond upload_max_size (the marker itself is not capped). */
export const TRUNCATED_MARKER = Buffer.from('... (truncated)')

/**
 * Batches of up to 512 KiB per writev (8 socket reads of 64 KiB): few syscalls, and the batch is
 * still in the CPU cache when it is copied into the page cache. Measured larger (8 MiB) batches
 * were slower, not faster (bench/resultserver.bench.mjs).
 */
const FILE_HIGH_WATER = 512 * 1024

async function writeAll(fh: FileHandle, bufs: Buffer[]): Promise<void> {
  let rest = bufs.filter((b) => b.length > 0)
  while (rest.length > 0) {
    const { bytesWritten } = await fh.writev(rest)
    let skip = bytesWritten
    const next: Buffer[] = []
    for (const b of rest) {
      if (skip >= b.length) {
        skip -= b.length
      } else {
        next.push(skip > 0 ? b.subarray(skip) : b)
        skip = 0
      }
    }
    rest = next
  }
}

/**
 * Writes a stream into an open file, storing at most `fileCap` bytes (null: no per-file cap) and
 * what the task budget allows; the rest is read and dropped. Owns `fh`: it is closed on finish,
 * error or destroy, and `fileClosed` resolves after that.
 */
export class FileSink extends Writable {
  stored = 0
  /** The `... (truncated)` marker was written (per-file cap). */
  truncated = false
  /** Bytes were dropped, by the per-file cap or the task cap. */
  dropped = false
  readonly fileClosed: Promise<void>
  private markClosed!: () => void
  private inflight: Promise<void> = Promise.resolve()

  constructor(private readonly fh: FileHandle, private readonly fileCap: number | null, private readonly budget: TaskBudget) {
    super({ highWaterMark: FILE_HIGH_WATER })
    this.fileClosed = new Promise((resolve) => { this.markClosed = resolve })
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    const out: Buffer[] = []
    for (const { chunk } of chunks) {
      if (this.truncated || this.budget.exceeded) {
        this.dropped = true
        break
      }
      let b = chunk
      let cut = false
      if (this.fileCap !== null && this.stored + b.length > this.fileCap) {
        b = b.subarray(0, this.fileCap - this.stored)
        cut = true
      }
      const allowed = this.budget.take(b.length + (cut ? TRUNCATED_MARKER.length : 0))
      if (cut) this.dropped = true
      if (allowed < b.length) {
        b = b.subarray(0, allowed)
        this.dropped = true
      }
      if (b.length > 0) out.push(b)
      this.stored += b.length
      if (cut && !this.budget.exceeded) {
        out.push(TRUNCATED_MARKER)
        this.truncated = true
      }
    }
    if (out.length === 0) {
      cb()
      return
    }
    this.inflight = writeAll(this.fh, out)
    this.inflight.then(() => cb(), (err: Error) => cb(err))
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this._writev([{ chunk }], cb)
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    // A write may still be running when the connection is cut: close only after it.
    this.inflight.catch(() => undefined)
      .then(() => this.fh.close())
      .catch(() => undefined)
      .then(() => {
        this.markClosed()
        cb(err)
      })
  }
}

/**
 * Splits the LOG channel into lines for `onLine`: '\n'-terminated, a trailing '\r' dropped, each
 * cut at `maxLine` bytes (the rest of an over-long line is dropped up to its '\n'). A last line
 * without '\n' is delivered when the stream ends. Every byte received counts toward the budget:
 * a line as what storing it costs (`cost`: the bytes its consumer writes, which may add a prefix;
 * a line the budget cannot take whole is not delivered), the dropped rest of an over-long line as
 * it came. So what the task stores of its log never goes past the cap.
 */
export class LogLineSink extends Writable {
  private parts: Buffer[] = []
  private partLen = 0
  private pending = false

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly budget: TaskBudget,
    private readonly maxLine: number,
    private readonly cost: (line: string) => number = (line) => Buffer.byteLength(line) + 1
  ) {
    super()
  }

  override _write(b: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.budget.exceeded) {
      cb()
      return
    }
    let from = 0
    while (from < b.length) {
      const nl = b.indexOf(10, from)
      this.append(b.subarray(from, nl === -1 ? b.length : nl))
      if (nl === -1) break
      this.emit_()
      from = nl + 1
    }
    cb()
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.pending) this.emit_()
    cb()
  }

  private append(part: Buffer): void {
    this.pending = true
    const room = this.maxLine - this.partLen
    if (part.length > Math.max(room, 0)) this.budget.take(part.length - Math.max(room, 0))
    if (room <= 0 || part.length === 0) return
    const kept = part.length > room ? part.subarray(0, room) : part
    // Copied: the socket's buffer is not ours to keep.
    this.parts.push(Buffer.from(kept))
    this.partLen += kept.length
  }

  private emit_(): void {
    const line = Buffer.concat(this.parts, this.partLen).toString('utf8').replace(/\r$/, '')
    this.parts = []
    this.partLen = 0
    this.pending = false
    try {
      const n = this.cost(line)
      if (this.budget.take(n) === n) this.onLine(line)
    } catch {
      // The consumer's failure is not the guest's: keep reading.
    }
  }
}
