// Plays a console recording (src/shared/console-recording.ts) into noVNC: a stand-in for the
// websocket that hands RFB the server's recorded bytes at their recorded times, scaled by the
// speed. RFB draws them as it drew them live (its decoders are deterministic for the same bytes),
// and what the replayed client sends back goes nowhere. Seeking forward feeds the bytes up to the
// new point at once; seeking back starts again from the beginning, since a screen can only be
// rebuilt from the first frame.
import RFB, { type RfbChannel } from '@novnc/novnc'
import { RecordKind, type Recording } from '../../../shared/console-recording'

class ReplayChannel implements RfbChannel {
  binaryType = 'arraybuffer'
  protocol = ''
  readyState = 0
  onopen: ((e: Event) => void) | null = null
  onmessage: ((e: MessageEvent) => void) | null = null
  onclose: ((e: CloseEvent) => void) | null = null
  onerror: ((e: Event) => void) | null = null

  send(): void {
    // The replayed client's requests: the recording already holds the answers.
  }

  close(): void {
    if (this.readyState === 3) return
    this.readyState = 3
    setTimeout(() => this.onclose?.(new CloseEvent('close', { code: 1000, wasClean: true })), 0)
  }

  open(): void {
    this.readyState = 1
    this.onopen?.(new Event('open'))
  }

  deliver(bytes: Uint8Array): void {
    if (this.readyState !== 1) return
    this.onmessage?.(new MessageEvent('message', { data: bytes.slice().buffer }))
  }
}

export class Replayer {
  private rfb: RFB | null = null
  private channel: ReplayChannel | null = null
  /** The next record to hand over, and the recording's time reached (ms). */
  private next = 0
  position = 0
  private timer: ReturnType<typeof setInterval> | null = null
  private last = 0
  speed = 1

  constructor(private readonly target: HTMLElement, private readonly rec: Recording, private readonly bytes: Uint8Array,
    private readonly onTick: (position: number, playing: boolean) => void) {}

  get duration(): number {
    return this.rec.duration
  }

  get playing(): boolean {
    return this.timer !== null
  }

  private restart(): void {
    this.rfb?.disconnect()
    this.target.replaceChildren()
    this.channel = new ReplayChannel()
    this.rfb = new RFB(this.target, this.channel, { shared: true })
    this.rfb.viewOnly = true
    this.rfb.scaleViewport = true
    this.rfb.background = 'rgb(24,24,27)'
    this.channel.open()
    this.next = 0
    this.position = 0
  }

  /** Hands RFB every server record up to `time`. */
  private feed(time: number): void {
    if (!this.channel) this.restart()
    const records = this.rec.records
    while (this.next < records.length && records[this.next]!.time <= time) {
      const r = records[this.next++]!
      if (r.kind === RecordKind.server) this.channel!.deliver(this.bytes.subarray(r.offset, r.offset + r.length))
    }
    this.position = Math.min(time, this.rec.duration)
  }

  seek(time: number): void {
    const t = Math.max(0, Math.min(time, this.rec.duration))
    if (!this.channel || t < this.position) this.restart()
    this.feed(t)
    this.last = performance.now()
    this.onTick(this.position, this.playing)
  }

  play(): void {
    if (this.timer) return
    if (this.position >= this.rec.duration) this.seek(0)
    if (!this.channel) this.restart()
    this.last = performance.now()
    this.timer = setInterval(() => {
      const now = performance.now()
      this.feed(this.position + (now - this.last) * this.speed)
      this.last = now
      if (this.position >= this.rec.duration) this.pause()
      else this.onTick(this.position, true)
    }, 30)
    this.onTick(this.position, true)
  }

  pause(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.onTick(this.position, false)
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.rfb?.disconnect()
    this.rfb = null
    this.channel = null
  }
}
