// One console client: its websocket on one side, its own TCP connection to the machine's VNC
// server on the other (QEMU serves several clients at once, each with its own pixel format and
// updates). Every byte is bounded:
// - from the client: websocket messages of at most MAX_FRAME_BYTES (ws closes with 1009 past it),
//   at most MAX_FRAMES_PER_SECOND and MAX_BYTES_PER_SECOND, binary only, read as RFB by
//   RfbClientFilter; anything else ends the session at once with the reason;
// - towards the VNC server: if it does not read what the client sends (more than
//   MAX_UNREAD_BYTES waiting), the session ends;
// - from the VNC server (the guest's screen, which a sample draws): the service stops reading it
//   while the client has more than MAX_UNSENT_BYTES unsent or the recording has a backlog, so a
//   slow client or disk never piles the screen up in memory.
import net from 'node:net'
import type { WebSocket } from 'ws'
import { RfbClientFilter, RfbViolation } from './rfb-client-filter'
import type { Recorder } from './recorder'
import type { VncEndpoint } from '../machinery/driver'

export const MAX_FRAME_BYTES = 128 * 1024
export const MAX_FRAMES_PER_SECOND = 500
export const MAX_BYTES_PER_SECOND = 2 * 1024 * 1024
const MAX_UNREAD_BYTES = 1024 * 1024
const MAX_UNSENT_BYTES = 4 * 1024 * 1024
const CONNECT_MS = 5000
/** Keys and clicks are reported (timeline, recording) at most this often per session. */
const ACTIVITY_MS = 1000

/** Websocket close codes (4000-4999 are the application's): the UI says the reason. */
export const CloseCodes = {
  ended: 4000,
  violation: 4400,
  flood: 4429,
  vnc: 4502,
  service: 1001
} as const

export type { VncEndpoint }

export interface SessionHooks {
  /** Keys pressed and clicks, coalesced per ACTIVITY_MS. */
  activity(keys: number, clicks: number): void
  closed(reason: string): void
}

export class ConsoleSession {
  private readonly filter: RfbClientFilter
  private vnc: net.Socket | null = null
  private closed = false
  private window = { start: Date.now(), frames: 0, bytes: 0 }
  private pendingKeys = 0
  private pendingClicks = 0
  private activityTimer: NodeJS.Timeout | null = null
  private resumeTimer: NodeJS.Timeout | null = null
  /** What the client sent before the VNC server was reached. */
  private readonly early: Buffer[] = []
  private earlyBytes = 0
  readonly openedAt = Date.now()
  keys = 0
  clicks = 0
  dropped = 0

  constructor(
    readonly id: number,
    readonly role: 'interactive' | 'view',
    private readonly ws: WebSocket,
    private readonly recorder: Recorder | null,
    private readonly hooks: SessionHooks
  ) {
    this.filter = new RfbClientFilter(role === 'view')
  }

  /**
   * Starts reading the client at once, before the VNC server is reached: ws does not keep the
   * messages of a socket nobody listens to, and a hostile client must meet the bounds from its
   * first frame. What the client sends meanwhile waits (bounded) for the connection.
   */
  listen(): void {
    this.ws.on('message', (data, isBinary) => this.fromClient(data, isBinary))
    this.ws.on('close', () => this.close(CloseCodes.ended, 'the client left'))
    this.ws.on('error', (err) => this.close(CloseCodes.violation, `websocket: ${err.message}`))
  }

  /** Connects to the VNC server and starts carrying bytes; the websocket is already open. */
  start(endpoint: VncEndpoint): void {
    if (this.closed) return
    const connectTimer = setTimeout(() => this.close(CloseCodes.vnc, "the machine's VNC server did not answer"), CONNECT_MS)
    const attempt = (): void => {
      if (this.closed) return clearTimeout(connectTimer)
      const vnc = 'path' in endpoint ? net.connect(endpoint.path) : net.connect(endpoint.port, endpoint.host)
      vnc.setNoDelay(true)
      let connected = false
      vnc.once('connect', () => {
        connected = true
        clearTimeout(connectTimer)
        if (this.closed) return void vnc.destroy()
        // What the client sent meanwhile waited in `early` (bounded): it goes first.
        this.vnc = vnc
        for (const part of this.early.splice(0)) vnc.write(part)
      })
      vnc.on('data', (chunk: Buffer) => this.fromServer(chunk))
      vnc.on('error', (err: NodeJS.ErrnoException) => {
        // A unix socket whose listen queue is full refuses at once with EAGAIN (QEMU starved of
        // CPU accepts late): tried again until the connect time is up.
        if (!connected && err.code === 'EAGAIN' && !this.closed) return void setTimeout(attempt, 100)
        this.close(CloseCodes.vnc, `the machine's VNC server: ${err.message}`)
      })
      vnc.on('close', () => {
        if (!connected) return
        this.close(CloseCodes.vnc, "the machine's VNC server closed the connection")
      })
    }
    attempt()
  }

  private fromClient(data: unknown, isBinary: boolean): void {
    if (this.closed) return
    if (!isBinary || !Buffer.isBuffer(data)) return this.close(CloseCodes.violation, 'text frames are not RFB')
    const now = Date.now()
    if (now - this.window.start >= 1000) this.window = { start: now, frames: 0, bytes: 0 }
    this.window.frames++
    this.window.bytes += data.length
    if (this.window.frames > MAX_FRAMES_PER_SECOND || this.window.bytes > MAX_BYTES_PER_SECOND) {
      return this.close(CloseCodes.flood, `more than ${MAX_FRAMES_PER_SECOND} frames or ${MAX_BYTES_PER_SECOND} bytes in a second`)
    }
    let r
    try {
      r = this.filter.push(data)
    } catch (err) {
      if (err instanceof RfbViolation) return this.close(CloseCodes.violation, `not RFB: ${err.message}`)
      throw err
    }
    this.dropped += r.dropped
    if (this.vnc === null) {
      this.early.push(...r.forward)
      this.earlyBytes += r.forward.reduce((a, b) => a + b.length, 0)
      if (this.earlyBytes > MAX_UNREAD_BYTES) return this.close(CloseCodes.flood, 'the client sent too much before the machine\'s VNC server answered')
    } else {
      for (const part of r.forward) this.vnc.write(part)
      if (this.vnc.writableLength > MAX_UNREAD_BYTES) return this.close(CloseCodes.flood, "the machine's VNC server does not read what the client sends")
    }
    if (r.keys + r.clicks > 0) this.noteInput(r.keys, r.clicks)
  }

  private noteInput(keys: number, clicks: number): void {
    this.keys += keys
    this.clicks += clicks
    this.pendingKeys += keys
    this.pendingClicks += clicks
    this.activityTimer ??= setTimeout(() => this.flushActivity(), ACTIVITY_MS)
  }

  private flushActivity(): void {
    if (this.activityTimer) clearTimeout(this.activityTimer)
    this.activityTimer = null
    if (this.pendingKeys + this.pendingClicks === 0) return
    this.recorder?.input(this.pendingKeys, this.pendingClicks)
    this.hooks.activity(this.pendingKeys, this.pendingClicks)
    this.pendingKeys = 0
    this.pendingClicks = 0
  }

  private fromServer(chunk: Buffer): void {
    if (this.closed) return
    this.ws.send(chunk, { binary: true })
    this.recorder?.server(chunk)
    if (this.ws.bufferedAmount > MAX_UNSENT_BYTES || this.recorder?.backlogged) this.pauseServer()
  }

  /** Stops reading the VNC server until the client and the recording have caught up. */
  private pauseServer(): void {
    if (this.resumeTimer || !this.vnc) return
    this.vnc.pause()
    // ws has no drain event of its own: look again shortly.
    this.resumeTimer = setInterval(() => {
      if (this.closed) return
      if (this.ws.bufferedAmount <= MAX_UNSENT_BYTES / 4 && !this.recorder?.backlogged) {
        clearInterval(this.resumeTimer!)
        this.resumeTimer = null
        this.vnc?.resume()
      }
    }, 20)
  }

  /** Ends the session (idempotent): the client is told why, the recording closed with the reason. */
  close(code: number, reason: string): void {
    if (this.closed) return
    this.closed = true
    this.flushActivity()
    if (this.resumeTimer) clearInterval(this.resumeTimer)
    this.vnc?.destroy()
    // A close reason is at most 123 bytes.
    const short = Buffer.from(reason).subarray(0, 120).toString()
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, short)
    // A client that does not answer the close handshake is dropped.
    setTimeout(() => this.ws.terminate(), 2000).unref()
    void this.recorder?.end(reason)
    this.hooks.closed(reason)
  }

  get isClosed(): boolean {
    return this.closed
  }
}
