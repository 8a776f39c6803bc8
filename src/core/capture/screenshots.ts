// Screenshots of a running analysis taken from the hypervisor (CAPE's "machinery screenshots"):
// every interval grab a frame from the driver, drop it if it shows the same picture as the last one
// kept, else write shots/NNNN.jpg (JPEG quality 75, what Cuckoo's guest-side module uploads) and
// shots/NNNN_small.jpg (the thumbnail Cuckoo's processing makes), numbered from 0001 without gaps.
//
// Frames arrive as PNG or as binary PPM (P6): libvirt's virDomainScreenshot gives PPM for QEMU's
// VGA console. sharp (libvips) cannot read PPM from a buffer (its ppmload only reads files), so P6
// is decoded here by hand — a dozen lines of header parsing; the pixel rows are used as they are.
//
// "Same picture" = the SHA-1 of the decoded RGB(A) pixels and the size are equal. Cuckoo's guest
// module uses a perceptual test (RMS of the difference histogram < 8); an exact test is cheaper,
// deterministic, and only costs an extra shot when e.g. a cursor blinks.
import { createHash } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { shotFile } from '../storage/layout'
import type { Sharp } from 'sharp'

export interface ScreenshotOptions {
  /** One frame from the hypervisor (PNG, JPEG or PPM P6 bytes). */
  grab: () => Promise<Buffer>
  /** The analysis's shots/ folder (created if missing). */
  dir: string
  intervalSeconds: number
  /** Stop grabbing after this many kept shots. Default 10,000 (Cuckoo's counter is 4 digits). */
  maxShots?: number
  log: (msg: string) => void
}

export interface Screenshots {
  /** Stops the loop, waits for the grab in flight, resolves with the number of shots kept. */
  stop(): Promise<number>
}

/** Longest side of a thumbnail, like the `_small.jpg` files of Cuckoo's processing. */
export const THUMBNAIL_SIZE = 320
export const JPEG_QUALITY = 75
const DEFAULT_MAX_SHOTS = 10_000

export interface RawFrame {
  data: Buffer
  width: number
  height: number
  channels: 1 | 2 | 3 | 4
}

export function startScreenshots(o: ScreenshotOptions): Screenshots {
  const maxShots = o.maxShots ?? DEFAULT_MAX_SHOTS
  const intervalMs = Math.max(0.05, o.intervalSeconds) * 1000
  const reported = new Set<string>()
  let kept = 0
  let lastHash = ''
  let stopped = false
  let wake: (() => void) | undefined
  let timer: NodeJS.Timeout | undefined

  const failure = (kind: string, err: unknown): void => {
    const text = err instanceof Error ? err.message : String(err)
    // One log line per kind of failure (digits masked so "after 52 ms" and "after 60 ms" are one kind).
    const key = `${kind}: ${(text.split('\n')[0] ?? '').replace(/\d+/g, '#')}`
    if (reported.has(key)) return
    reported.add(key)
    o.log(`screenshot ${kind} failed (logged once, will keep trying): ${text}`)
  }

  const takeOne = async (): Promise<void> => {
    let bytes: Buffer
    try {
      bytes = await o.grab()
    } catch (err) {
      failure('grab', err)
      return
    }
    let frame: RawFrame
    try {
      frame = await decodeFrame(bytes)
    } catch (err) {
      failure('decode', err)
      return
    }
    const hash = frameHash(frame)
    if (hash === lastHash) return
    try {
      await writeShot(o.dir, kept + 1, frame)
    } catch (err) {
      failure('write', err)
      return
    }
    lastHash = hash
    kept++
    if (kept >= maxShots) {
      o.log(`screenshot limit of ${maxShots} reached: no more screenshots for this analysis`)
      stopped = true
    }
  }

  // One grab at a time: the next one is scheduled only after the previous finished, so a slow
  // hypervisor stretches the interval instead of piling up grabs.
  const loop = (async (): Promise<void> => {
    await mkdir(o.dir, { recursive: true }).catch((err: unknown) => failure('folder', err))
    while (!stopped) {
      const started = Date.now()
      await takeOne()
      if (stopped) break
      const wait = Math.max(0, intervalMs - (Date.now() - started))
      await new Promise<void>((resolve) => {
        wake = resolve
        timer = setTimeout(resolve, wait)
      })
    }
  })()

  return {
    stop: async () => {
      stopped = true
      clearTimeout(timer)
      wake?.()
      await loop
      return kept
    }
  }
}

/** sharp (libvips: ~10 MB once loaded) comes with the first screenshot, not with the service. */
export const loadSharp = async (): Promise<typeof import('sharp').default> => (await import('sharp')).default

/** Decodes a PPM (P6) by hand, anything else (PNG, JPEG…) with sharp, to raw pixels. */
export async function decodeFrame(bytes: Buffer): Promise<RawFrame> {
  if (bytes.length >= 2 && bytes[0] === 0x50 && bytes[1] === 0x36) return decodePpm(bytes)
  const sharp = await loadSharp()
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true })
  return { data, width: info.width, height: info.height, channels: info.channels }
}

/**
 * Binary PPM (netpbm "P6"): `P6`, width, height, maxval as ASCII decimals separated by whitespace
 * (with `#` comments to end of line), one whitespace byte, then rows of RGB samples, one byte each
 * if maxval < 256, else two bytes big-endian (scaled down to 8 bits here).
 */
export function decodePpm(bytes: Buffer): RawFrame {
  const at = (i: number): number => bytes[i] ?? -1
  let pos = 2
  const fields: number[] = []
  while (fields.length < 3) {
    while (isSpace(at(pos)) || at(pos) === 0x23) {
      if (at(pos) === 0x23) while (pos < bytes.length && at(pos) !== 0x0a) pos++
      else pos++
    }
    const start = pos
    while (at(pos) >= 0x30 && at(pos) <= 0x39) pos++
    if (pos === start) throw new Error('PPM header is malformed')
    fields.push(Number(bytes.subarray(start, pos).toString('ascii')))
  }
  if (!isSpace(at(pos))) throw new Error('PPM header is malformed')
  pos++
  const [width = 0, height = 0, maxval = 0] = fields
  if (width < 1 || height < 1 || maxval < 1 || maxval > 65535) throw new Error(`PPM header has bad values ${width}x${height} maxval ${maxval}`)
  const wide = maxval > 255
  const samples = width * height * 3
  const need = samples * (wide ? 2 : 1)
  if (bytes.length - pos < need) throw new Error(`PPM pixel data is truncated (${bytes.length - pos} of ${need} bytes)`)
  if (maxval === 255) return { data: Buffer.from(bytes.subarray(pos, pos + samples)), width, height, channels: 3 }
  const data = Buffer.alloc(samples)
  for (let i = 0; i < samples; i++) {
    const v = wide ? bytes.readUInt16BE(pos + 2 * i) : at(pos + i)
    data[i] = Math.round((v * 255) / maxval)
  }
  return { data, width, height, channels: 3 }
}

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d || b === 0x0b || b === 0x0c
}

function frameHash(f: RawFrame): string {
  return createHash('sha1').update(`${f.width}x${f.height}x${f.channels}\n`).update(f.data).digest('hex')
}

/** NNNN.jpg and NNNN_small.jpg for shot number n (1-based) in dir. */
export async function writeShot(dir: string, n: number, f: RawFrame): Promise<void> {
  const sharp = await loadSharp()
  const img = (): Sharp => sharp(f.data, { raw: { width: f.width, height: f.height, channels: f.channels } })
  const full = await img().jpeg({ quality: JPEG_QUALITY }).toBuffer()
  const small = await img()
    .resize(THUMBNAIL_SIZE, THUMBNAIL_SIZE, { fit: 'inside', withoutEnlargement: true })
    .jpeg({ quality: JPEG_QUALITY })
    .toBuffer()
  // The thumbnail first: whoever sees NNNN.jpg can count on its _small twin.
  await writeFile(path.join(dir, shotFile(n, true)), small)
  await writeFile(path.join(dir, shotFile(n)), full)
}
