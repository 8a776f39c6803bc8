// TCP reassembly of one direction: segments arriving out of order, duplicated, overlapping, across
// the 2^32 sequence wrap, or cut by the snap length must give the sink exactly the bytes of the
// stream, in order, or stop cleanly. (Real captures of in-order streams are in network.test.ts.)
import { describe, expect, it } from 'vitest'
import { TcpDirection, type StreamSink } from './reassembly'

function collector(): { sink: StreamSink; got: () => Buffer; finished: () => boolean; gaps: () => number } {
  const parts: Buffer[] = []
  let finished = false
  let gaps = 0
  const sink: StreamSink = {
    push: (b) => { parts.push(Buffer.from(b)); return true },
    finish: () => { finished = true },
    gap: () => { gaps++; return true }
  }
  return { sink, got: () => Buffer.concat(parts), finished: () => finished, gaps: () => gaps }
}

/** A deterministic shuffle. */
function shuffle<T>(a: T[], seed: number): T[] {
  const out = [...a]
  for (let i = out.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    const j = seed % (i + 1)
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

describe('TcpDirection', () => {
  const stream = Buffer.from(Array.from({ length: 20000 }, (_, i) => (i * 7 + (i >> 8)) & 0xff))

  for (const isn of [1000, 0xffffff00]) {
    it(`delivers the exact stream from shuffled, duplicated and overlapping segments (ISN ${isn.toString(16)})`, () => {
      const c = collector()
      const d = new TcpDirection(() => c.sink)
      const segs: [number, number][] = []
      for (let o = 0; o < stream.length; o += 1000) segs.push([o, Math.min(o + 1000, stream.length)])
      // Retransmissions and a repacketized overlap.
      segs.push([3000, 4000], [2500, 4500], [19500, 20000])
      d.segment(isn, true, Buffer.alloc(0), 0) // SYN
      // Keep the first 3 in order, shuffle the rest within the out-of-order budget.
      for (const [a, b] of [...segs.slice(0, 3), ...shuffle(segs.slice(3, 12), 7), ...shuffle(segs.slice(12), 3)]) {
        d.segment((isn + 1 + a) >>> 0, false, stream.subarray(a, b), b - a)
      }
      expect(c.got().equals(stream)).toBe(true)
      d.end()
      expect(c.finished()).toBe(true)
    })
  }

  it('gives up when the out-of-order budget is exceeded', () => {
    const c = collector()
    const d = new TcpDirection(() => c.sink)
    d.segment(0, true, Buffer.alloc(0), 0)
    for (let o = 1000; o < 200000; o += 1000) d.segment(1 + o, false, Buffer.alloc(1000), 1000) // the first 1000 never come
    expect(d.active).toBe(false)
    expect(c.got().length).toBe(0)
  })

  it('hands a cut segment over, then tells the sink about the gap and goes on', () => {
    const c = collector()
    const d = new TcpDirection(() => c.sink)
    d.segment(0, true, Buffer.alloc(0), 0)
    d.segment(1, false, Buffer.from('GET /a HT'), 30) // 30 bytes on the wire, 9 captured
    d.segment(31, false, Buffer.from('GET /b'), 6)
    expect(c.got().toString()).toBe('GET /a HTGET /b')
    expect(c.gaps()).toBe(1)
    expect(d.active).toBe(true)
  })

  it('starts at the first data when the SYN was not captured, and ignores old retransmissions', () => {
    const c = collector()
    const d = new TcpDirection(() => c.sink)
    d.segment(5000, false, Buffer.from('world'), 5)
    d.segment(4995, false, Buffer.from('hello'), 5)
    d.segment(5005, false, Buffer.from('!'), 1)
    expect(c.got().toString()).toBe('world!')
  })
})
