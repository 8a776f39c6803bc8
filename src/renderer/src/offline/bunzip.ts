// bzip2 in the browser with seek-bzip (pure JS). seek-bzip calls Node's `Buffer` for a few scratch
// arrays (`new Buffer(n)`, `.copy`, `.toString('hex')`), which a page does not have. Rather than
// bundling the whole `buffer` polyfill, a minimal stand-in with exactly those three members is
// installed for the length of one synchronous decode and removed after (in the archive worker,
// where nothing else sees it). Output goes to our own growable array, not to a Buffer.
import Bunzip from 'seek-bzip'

class ScratchBuffer extends Uint8Array {
  copy(target: Uint8Array, targetStart = 0, start = 0, end = this.length): number {
    target.set(this.subarray(start, end), targetStart)
    return end - start
  }
  override toString(encoding?: string): string {
    if (encoding !== 'hex') return super.toString()
    let s = ''
    for (const b of this) s += b.toString(16).padStart(2, '0')
    return s
  }
}

/** Grows by doubling; reports progress every 8 MiB written. */
class Output {
  buf = new Uint8Array(1 << 20)
  pos = 0
  constructor(private readonly progress?: (bytes: number) => void, private readonly limit = Infinity) {}
  writeByte(b: number): void {
    if (this.pos >= this.buf.length) {
      if (this.pos >= this.limit) throw new RangeError(`the archive unpacks to more than ${this.limit} bytes`)
      const next = new Uint8Array(Math.min(this.buf.length * 2, this.limit))
      next.set(this.buf)
      this.buf = next
    }
    this.buf[this.pos++] = b
    if ((this.pos & 0x7fffff) === 0) this.progress?.(this.pos)
  }
}

/** Decompresses a (possibly multi-stream, as pbzip2 writes) bzip2 file. */
export function bunzip2(data: Uint8Array, progress?: (bytes: number) => void, limit?: number): Uint8Array {
  const g = globalThis as { Buffer?: unknown }
  const installed = g.Buffer === undefined
  if (installed) g.Buffer = ScratchBuffer
  try {
    const out = new Output(progress, limit)
    Bunzip.decode(data, out, true)
    return out.buf.subarray(0, out.pos)
  } finally {
    if (installed) delete g.Buffer
  }
}
