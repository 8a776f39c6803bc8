// Screenshots from a generated sequence of frames (sharp-made PNGs, hand-made P6 PPMs with 8- and
// 16-bit samples, repeats, failures): the right JPEGs and thumbnails, repeats skipped, numbering
// without gaps, failures logged once per kind, one grab at a time, stop() waiting for the grab in flight.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import sharp from 'sharp'
import { afterEach, describe, expect, it } from 'vitest'
import { decodePpm, startScreenshots } from './screenshots'

const dirs: string[] = []
function shotsDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'aviary-shots-'))
  dirs.push(d)
  return path.join(d, 'shots')
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function png(width: number, height: number, rgb: [number, number, number]): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } }).png().toBuffer()
}

/** A binary PPM made by hand; `pixel` gives [r, g, b] (0..maxval) per position. */
function ppm(width: number, height: number, pixel: (x: number, y: number) => [number, number, number], maxval = 255): Buffer {
  const wide = maxval > 255
  const body = Buffer.alloc(width * height * 3 * (wide ? 2 : 1))
  let i = 0
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (const v of pixel(x, y)) {
        if (wide) { body.writeUInt16BE(v, i); i += 2 } else body[i++] = v
      }
    }
  }
  // A comment in the header, as netpbm allows.
  return Buffer.concat([Buffer.from(`P6\n# made by a test\n${width} ${height}\n${maxval}\n`, 'ascii'), body])
}

async function meanRgb(file: string): Promise<number[]> {
  const stats = await sharp(file).stats()
  return stats.channels.slice(0, 3).map((c) => Math.round(c.mean))
}

/** A grab that plays `frames` (a Buffer, or an Error to throw) once, then repeats the last one. */
function sequence(frames: (Buffer | Error)[]): { grab: () => Promise<Buffer>; done: Promise<void> } {
  let i = 0
  let finish: () => void = () => undefined
  const done = new Promise<void>((r) => { finish = r })
  return {
    done,
    grab: async () => {
      const f = frames[Math.min(i, frames.length - 1)]
      i++
      if (i >= frames.length) finish()
      if (f instanceof Error) throw f
      return f as Buffer
    }
  }
}

describe('screenshots', () => {
  it('decodes P6 by hand, 8- and 16-bit, with comments', () => {
    const f = decodePpm(ppm(2, 1, (x) => (x === 0 ? [65535, 0, 32768] : [0, 65535, 0]), 65535))
    expect([f.width, f.height, f.channels]).toEqual([2, 1, 3])
    expect([...f.data]).toEqual([255, 0, 128, 0, 255, 0])
    expect(() => decodePpm(Buffer.from('P6\n2 2\n255\n\x00\x00'))).toThrow(/truncated/)
    expect(() => decodePpm(Buffer.from('P6\nx'))).toThrow(/malformed/)
  })

  it('writes NNNN.jpg and NNNN_small.jpg, skips repeats, logs each kind of failure once', async () => {
    const red = await png(720, 400, [255, 0, 0])
    const gradient = ppm(720, 400, (x, y) => [x % 256, y % 256, 90])
    const blue = await png(1024, 768, [0, 0, 255])
    const seq = sequence([
      red, red, // 0001, repeat
      ppm(720, 400, () => [255, 0, 0]), // same pixels as a PPM: a repeat too
      gradient, Buffer.from(gradient), // 0002, repeat
      new Error('virsh: domain is not running (after 52 ms)'), new Error('virsh: domain is not running (after 60 ms)'),
      Buffer.from('not an image'),
      red, // 0003: differs from the last kept one
      blue, // 0004
      ppm(100, 50, () => [0, 32768, 0], 65535), // 0005: 16-bit samples, smaller than a thumbnail
      blue // 0006, then repeated until stop
    ])
    const logs: string[] = []
    const dir = shotsDir()
    const shots = startScreenshots({ grab: seq.grab, dir, intervalSeconds: 0.05, log: (m) => logs.push(m) })
    await seq.done
    expect(await shots.stop()).toBe(6)

    const names = ['0001', '0002', '0003', '0004', '0005', '0006']
    expect(readdirSync(dir).sort()).toEqual(names.flatMap((n) => [`${n}.jpg`, `${n}_small.jpg`]).sort())
    const sizes = await Promise.all(names.map(async (n) => {
      const full = await sharp(path.join(dir, `${n}.jpg`)).metadata()
      const small = await sharp(path.join(dir, `${n}_small.jpg`)).metadata()
      expect(full.format).toBe('jpeg')
      expect(small.format).toBe('jpeg')
      return [full.width, full.height, small.width, small.height]
    }))
    expect(sizes).toEqual([
      [720, 400, 320, 178], [720, 400, 320, 178], [720, 400, 320, 178],
      [1024, 768, 320, 240], [100, 50, 100, 50], [1024, 768, 320, 240]
    ])
    const [r, g, b] = await meanRgb(path.join(dir, '0001.jpg'))
    expect(r).toBeGreaterThan(240)
    expect((g ?? 255) + (b ?? 255)).toBeLessThan(20)
    const green = await meanRgb(path.join(dir, '0005.jpg'))
    expect(green[1]).toBeGreaterThan(118)
    expect(green[1]).toBeLessThan(138)

    expect(logs.filter((l) => l.includes('grab failed'))).toHaveLength(1)
    expect(logs.filter((l) => l.includes('decode failed'))).toHaveLength(1)
    expect(logs.find((l) => l.includes('grab failed'))).toContain('domain is not running')
  })

  it('grabs one frame at a time, and stop() waits for the grab in flight', async () => {
    let inFlight = 0
    let maxInFlight = 0
    let calls = 0
    let stopped = false
    let grabbedAfterStop = false
    let secondStarted: () => void = () => undefined
    const second = new Promise<void>((r) => { secondStarted = r })
    const shots = startScreenshots({
      dir: shotsDir(), intervalSeconds: 0.05, log: () => undefined,
      grab: async () => {
        if (stopped) grabbedAfterStop = true
        inFlight++
        maxInFlight = Math.max(maxInFlight, inFlight)
        const n = ++calls
        if (n === 2) secondStarted()
        // Slower than the interval.
        await new Promise((r) => setTimeout(r, 200))
        inFlight--
        return ppm(16, 16, () => [n, n, n])
      }
    })
    await second
    const kept = await shots.stop()
    stopped = true
    expect(inFlight).toBe(0)
    expect(maxInFlight).toBe(1)
    // The frame in flight at stop() is kept.
    expect(kept).toBe(2)
    await new Promise((r) => setTimeout(r, 150))
    expect(grabbedAfterStop).toBe(false)
  })

  it('stops at maxShots and says so', async () => {
    let n = 0
    const logs: string[] = []
    const dir = shotsDir()
    const shots = startScreenshots({
      dir, intervalSeconds: 0.05, maxShots: 3, log: (m) => logs.push(m),
      grab: async () => { n++; return ppm(8, 8, () => [n * 10, 0, 0]) }
    })
    for (let i = 0; i < 250 && !logs.some((l) => l.includes('limit of 3')); i++) await new Promise((r) => setTimeout(r, 20))
    expect(logs.some((l) => l.includes('limit of 3'))).toBe(true)
    // The loop has ended by itself: no grab after the third.
    await new Promise((r) => setTimeout(r, 150))
    expect(n).toBe(3)
    expect(await shots.stop()).toBe(3)
    expect(readdirSync(dir).filter((f) => !f.includes('_small')).sort()).toEqual(['0001.jpg', '0002.jpg', '0003.jpg'])
  })
})
