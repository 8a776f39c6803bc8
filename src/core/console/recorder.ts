// One console session's recording (src/shared/console-recording.ts has the format), written into
// the analysis folder's console/ as the bytes pass. All sessions of one run share one byte budget:
// when it is spent the recording says so (a `capped` record) and stops keeping the screen, while
// the session itself goes on. A disk slower than the guest's screen cannot grow the service's
// memory: `backlogged` tells the session to stop reading the VNC server until the file catches up.
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs'
import path from 'node:path'
import { inputPayload, recordHeader, recordingHeader, RecordKind, type RecordingMeta } from '../../shared/console-recording'

/** The bytes the recordings of one run may take together. */
export class RecordingBudget {
  used = 0
  constructor(readonly cap: number) {}
  take(n: number): boolean {
    if (this.used + n > this.cap) return false
    this.used += n
    return true
  }
}

/** Pending writes past which the session stops reading the VNC server. */
const BACKLOG_BYTES = 2 * 1024 * 1024

export class Recorder {
  private readonly out: WriteStream
  private readonly t0 = Date.now()
  private capped = false
  private ended = false
  /** Set when the file could not be written; the session goes on unrecorded. */
  failure: string | null = null

  constructor(readonly file: string, meta: RecordingMeta, private readonly budget: RecordingBudget, private readonly onCapped: () => void) {
    mkdirSync(path.dirname(file), { recursive: true })
    this.out = createWriteStream(file, { flags: 'wx', mode: 0o640 })
    this.out.on('error', (err) => {
      this.failure ??= err.message
    })
    const head = recordingHeader(meta)
    this.budget.used += head.length
    this.out.write(head)
  }

  get backlogged(): boolean {
    return !this.ended && this.out.writableLength > BACKLOG_BYTES
  }

  /** Resolves when the file has taken what is pending. */
  drained(): Promise<void> {
    return this.backlogged ? new Promise((ok) => this.out.once('drain', ok)) : Promise.resolve()
  }

  server(chunk: Buffer): void {
    if (this.ended || this.capped || this.failure !== null) return
    if (!this.budget.take(chunk.length + 9)) {
      this.capped = true
      this.write(RecordKind.capped, Buffer.from(`the recording reached its cap of ${this.budget.cap} bytes`))
      this.onCapped()
      return
    }
    this.out.write(recordHeader(RecordKind.server, Date.now() - this.t0, chunk.length))
    this.out.write(chunk)
  }

  input(keys: number, clicks: number): void {
    if (keys + clicks > 0 && !this.capped) this.write(RecordKind.input, inputPayload(keys, clicks))
  }

  /** Ends the recording with the reason; resolves once the file is closed. */
  end(reason: string): Promise<void> {
    if (this.ended) return Promise.resolve()
    this.write(RecordKind.end, Buffer.from(reason.slice(0, 200)))
    this.ended = true
    return new Promise((ok) => this.out.end(ok))
  }

  private write(kind: number, payload: Uint8Array): void {
    if (this.ended || this.failure !== null) return
    // The end and the cap's note are written past the cap (a few bytes), so the player knows why the screen stops.
    this.budget.used += payload.length + 9
    this.out.write(recordHeader(kind, Date.now() - this.t0, payload.length))
    this.out.write(payload)
  }
}
