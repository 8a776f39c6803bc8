// In-order reassembly of one direction of a TCP connection, just far enough for the application
// parsers (HTTP heads, TLS hellos, DNS over TCP) that only need the start of each stream or a
// streaming view of it. Retransmitted and overlapping bytes are trimmed; out-of-order segments wait
// (at most OOO_CAP bytes per direction, beyond that the direction is given up); a segment cut by the
// snap length delivers what was captured and then ends the stream, since the rest is unknown.
// Written by hand: no maintained JS TCP reassembler exists.

const OOO_CAP = 64 * 1024

export interface StreamSink {
  /** Next in-order bytes (a view valid only during the call); false = no more wanted. */
  push(data: Buffer): boolean
  /** No more bytes will come (end of capture, FIN): flush what is pending. */
  finish(): void
  /**
   * Bytes are missing here (a segment cut by the snap length): flush what is pending and expect
   * the next bytes to start a new message. Returns false when the sink cannot resynchronise.
   */
  gap?(): boolean
}

export class TcpDirection {
  private nextSeq = -1
  private ooo: { seq: number; data: Buffer }[] = []
  private oooBytes = 0
  private off = false

  /** `sink` is chosen on the first in-order bytes (null = nothing to parse in this direction). */
  constructor(private readonly chooseSink: (first: Buffer) => StreamSink | null) {}

  private sink: StreamSink | null = null

  get active(): boolean { return !this.off }

  /** One segment: `captured` is the payload as captured, `announced` its length on the wire. */
  segment(seq: number, syn: boolean, captured: Buffer, announced: number): void {
    if (this.off) return
    if (syn) {
      if (this.nextSeq < 0) this.nextSeq = (seq + 1) >>> 0
      seq = (seq + 1) >>> 0
    }
    if (announced === 0) return
    if (this.nextSeq < 0) this.nextSeq = seq // the SYN was not captured: start here
    const rel = (seq - this.nextSeq) | 0
    if (rel > 0) {
      if (captured.length < announced || this.oooBytes + captured.length > OOO_CAP) { this.end(); return }
      this.ooo.push({ seq, data: Buffer.from(captured) })
      this.oooBytes += captured.length
      return
    }
    this.deliver(captured, announced, -rel)
    while (!this.off && this.ooo.length) {
      const i = this.ooo.findIndex((s) => ((s.seq - this.nextSeq) | 0) <= 0)
      if (i < 0) break
      const s = this.ooo.splice(i, 1)[0]!
      this.oooBytes -= s.data.length
      this.deliver(s.data, s.data.length, (this.nextSeq - s.seq) | 0)
    }
  }

  /** Delivers `data` minus its first `skip` bytes (already delivered). */
  private deliver(data: Buffer, announced: number, skip: number): void {
    if (skip >= announced) return
    const fresh = data.subarray(Math.min(skip, data.length))
    this.nextSeq = (this.nextSeq + announced - skip) >>> 0
    if (fresh.length) {
      if (!this.sink) {
        this.sink = this.chooseSink(fresh)
        if (!this.sink) { this.end(); return }
      }
      if (!this.sink.push(fresh)) { this.end(); return }
    }
    // Cut by the snap length: a gap follows. Parsers of message-per-segment protocols (HTTP
    // keep-alive) resume at the next segment; the others end here.
    if (data.length < announced && this.sink && !this.sink.gap?.()) this.end()
  }

  /** Stream over (FIN/RST seen, gap, or end of capture). */
  end(): void {
    if (this.off) return
    this.off = true
    this.ooo = []
    this.oooBytes = 0
    this.sink?.finish()
    this.sink = null
  }
}
