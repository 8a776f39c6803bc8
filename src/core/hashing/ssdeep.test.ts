// The oracle is the real tool: every digest is compared with what the Debian `ssdeep` CLI
// (2.14.x) prints for the same bytes, never with digests written down here.
import { execFileSync } from 'node:child_process'
import { lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SsdeepHasher, ssdeep } from './ssdeep'

const MISSING_TOOL =
  'The `ssdeep` CLI is the oracle for these tests and is not on PATH: install the Debian ' +
  'dependencies with `sudo scripts/install-debian-deps.sh`.'

/** Seeded PRNG (mulberry32), so that a failure reproduces. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function randomBytes(rand: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n)
  for (let i = 0; i < n; i++) out[i] = (rand() * 256) | 0
  return out
}

function pattern(period: Uint8Array, n: number): Uint8Array {
  const out = new Uint8Array(n)
  for (let i = 0; i < n; i++) out[i] = period[i % period.length]!
  return out
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

const WORDS = ('the of and to in is that for it as was with be by on not he this are or his from at ' +
  'which but have an they you were her she there been one all we their has would when if so no ' +
  'sample malware analysis sandbox report process registry network file hash signature').split(' ')

function text(rand: () => number, n: number): Uint8Array {
  let s = ''
  while (s.length < n) s += WORDS[(rand() * WORDS.length) | 0] + (rand() < 0.08 ? '.\n' : ' ')
  return new TextEncoder().encode(s.slice(0, n))
}

/** Feeds data to a fresh hasher in chunks whose sizes come from next(). */
function chunked(data: Uint8Array, next: () => number): string {
  const h = new SsdeepHasher()
  for (let at = 0; at < data.length; ) {
    const n = Math.max(1, next())
    h.update(data.subarray(at, at + n))
    at += n
  }
  return h.digest()
}

let dir = ''
let fileNo = 0

/** `ssdeep -s -b` on the files (distinct base names), as a map from base name to digest. */
function oracle(paths: string[]): Map<string, string> {
  const out = execFileSync('ssdeep', ['-s', '-b', ...paths], { encoding: 'utf8', maxBuffer: 64 << 20 })
  const digests = new Map<string, string>()
  for (const line of out.split('\n').slice(1)) {
    const m = /^([^,]+),"(.*)"$/.exec(line)
    if (m) digests.set(m[2]!, m[1]!)
  }
  return digests
}

/** Writes the inputs, runs the tool once on all of them, returns the names whose digest differ. */
function mismatches(inputs: Array<[label: string, data: Uint8Array]>): string[] {
  const files = inputs.map(([label, data]) => {
    const file = join(dir, `${fileNo++}.bin`)
    writeFileSync(file, data)
    return { label, data, file }
  })
  const want = oracle(files.map((f) => f.file))
  const bad: string[] = []
  for (const { label, data, file } of files) {
    const expected = want.get(basename(file))
    const got = ssdeep(data)
    const streamed = chunked(data, () => 65536)
    if (expected === undefined || got !== expected || streamed !== expected) {
      bad.push(`${label} (${data.length} bytes): ssdeep ${expected}, ours ${got}, in 64 KiB chunks ${streamed}`)
    }
  }
  return bad
}

/** Regular files of a system directory, a spread of them, sorted for reproducibility. */
function systemFiles(dirs: string[], count: number, maxBytes: number): string[] {
  for (const d of dirs) {
    if (!existsSync(d)) continue
    const files = readdirSync(d)
      .sort()
      .map((name) => join(d, name))
      .filter((p) => {
        const st = lstatSync(p)
        return st.isFile() && st.size > 1024 && st.size < maxBytes
      })
    if (files.length === 0) continue
    const step = Math.max(1, Math.floor(files.length / count))
    return files.filter((_, i) => i % step === 0).slice(0, count)
  }
  return []
}

describe('ssdeep', () => {
  beforeAll(() => {
    try {
      execFileSync('ssdeep', ['-V'], { stdio: 'pipe' })
    } catch {
      throw new Error(MISSING_TOOL)
    }
    dir = mkdtempSync(join(tmpdir(), 'aviary-ssdeep-'))
  })
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('matches the tool on the empty input and on 1 to 10 bytes', () => {
    const rand = prng(1)
    const inputs: Array<[string, Uint8Array]> = [['empty', new Uint8Array(0)]]
    for (let n = 1; n <= 10; n++) {
      inputs.push([`random ${n}`, randomBytes(rand, n)], [`zeros ${n}`, new Uint8Array(n)])
      inputs.push([`0xff ${n}`, new Uint8Array(n).fill(0xff)])
    }
    expect(mismatches(inputs)).toEqual([])
    expect(ssdeep(new Uint8Array(0))).toBe('3::')
  })

  it('matches the tool around the block-size thresholds', () => {
    const rand = prng(2)
    const inputs: Array<[string, Uint8Array]> = []
    for (let bs = 3; bs <= 3 * 2 ** 12; bs *= 2) {
      for (const n of [bs * 64 - 1, bs * 64, bs * 64 + 1, bs * 32 - 1, bs * 32, bs * 32 + 1]) {
        inputs.push([`random ${n} (block size ${bs})`, randomBytes(rand, n)])
      }
    }
    expect(mismatches(inputs)).toEqual([])
  })

  it('matches the tool on 200 random inputs of random lengths', () => {
    const rand = prng(3)
    const inputs: Array<[string, Uint8Array]> = []
    for (let k = 0; k < 200; k++) {
      const n = Math.floor(rand() ** 3 * 1_000_000)
      const data = randomBytes(rand, n)
      // Some end on 7+ zeros: a zero rolling hash at the end takes other branches of the digest.
      if (k % 5 === 0) data.fill(0, Math.max(0, n - 7 - ((rand() * 100) | 0)))
      inputs.push([`random #${k} (seed 3)`, data])
    }
    expect(mismatches(inputs)).toEqual([])
  })

  it('matches the tool on low-entropy and repetitive data', () => {
    const rand = prng(4)
    const inputs: Array<[string, Uint8Array]> = []
    for (const n of [100, 4096, 65_536, 1 << 20]) {
      inputs.push([`zeros ${n}`, new Uint8Array(n)], [`0xff ${n}`, new Uint8Array(n).fill(0xff)])
    }
    for (let period = 1; period <= 48; period++) {
      const n = 20_000 + ((rand() * 400_000) | 0)
      inputs.push([`period ${period}`, pattern(randomBytes(rand, period), n)])
    }
    for (const period of [64, 100, 255, 256, 1000, 4096, 65_536]) {
      inputs.push([`period ${period}`, pattern(randomBytes(rand, period), 600_000)])
    }
    const counter = new Uint8Array(500_000).map((_, i) => i & 0xff)
    const slow = new Uint8Array(500_000).map((_, i) => (i >> 10) & 0xff)
    const sparse = new Uint8Array(800_000)
    for (let i = 0; i < sparse.length; i += 1 + ((rand() * 2000) | 0)) sparse[i] = (rand() * 256) | 0
    const lowBits = randomBytes(rand, 400_000).map((b) => b & 3)
    inputs.push(['counter', counter], ['slow counter', slow], ['sparse', sparse], ['two-bit', lowBits])
    // Runs of a byte value that is a reset point of block size 3 at every byte (0x90 is one).
    for (const b of [0x04, 0x90, 0xf0]) {
      const run = new Uint8Array(200_000).fill(b)
      inputs.push([`run of 0x${b.toString(16)}`, run])
      inputs.push([`random, run of 0x${b.toString(16)}, random`, concat(randomBytes(rand, 5000), run, randomBytes(rand, 5000))])
    }
    inputs.push(['zeros then random', concat(new Uint8Array(300_000), randomBytes(rand, 300_000))])
    inputs.push(['random then zeros', concat(randomBytes(rand, 300_000), new Uint8Array(300_000))])
    expect(mismatches(inputs)).toEqual([])
  })

  it('matches the tool on text', () => {
    const rand = prng(5)
    const inputs: Array<[string, Uint8Array]> = []
    for (const n of [50, 700, 5000, 40_000, 300_000, 2_000_000]) inputs.push([`text ${n}`, text(rand, n)])
    const licence = '/usr/share/common-licenses/GPL-3'
    if (existsSync(licence)) inputs.push([licence, readFileSync(licence)])
    expect(mismatches(inputs)).toEqual([])
  })

  it('matches the tool on real binaries', () => {
    const paths = ['/usr/bin/ls', '/usr/bin/ssdeep', '/usr/bin/node', process.execPath]
      .filter((p, i, all) => existsSync(p) && all.indexOf(p) === i)
      .concat(systemFiles(['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib'], 8, 16 << 20))
    expect(paths.length).toBeGreaterThanOrEqual(6)
    const bad: string[] = []
    for (const p of paths) {
      const want = oracle([p]).get(basename(p))
      const data = readFileSync(p)
      const got = ssdeep(data)
      if (got !== want) bad.push(`${p}: ssdeep ${want}, ours ${got}`)
    }
    expect(bad).toEqual([])
  })

  it('matches the tool on a multi-MiB mixed file', () => {
    const rand = prng(6)
    const parts: Uint8Array[] = []
    for (let k = 0; k < 24; k++) {
      const n = 100_000 + ((rand() * 400_000) | 0)
      const kind = k % 4
      if (kind === 0) parts.push(randomBytes(rand, n))
      else if (kind === 1) parts.push(new Uint8Array(n))
      else if (kind === 2) parts.push(text(rand, n))
      else parts.push(pattern(randomBytes(rand, 1 + ((rand() * 30) | 0)), n))
    }
    const data = concat(...parts)
    expect(data.length).toBeGreaterThan(4 << 20)
    expect(mismatches([['mixed', data]])).toEqual([])
  })

  it('gives the same digest whatever the chunk sizes', () => {
    const rand = prng(7)
    const inputs: Array<[string, Uint8Array]> = [
      ['random', randomBytes(rand, 1_500_000)],
      ['ls', readFileSync(existsSync('/usr/bin/ls') ? '/usr/bin/ls' : process.execPath)],
      ['period 13', pattern(randomBytes(rand, 13), 400_000)],
      ['run of 0x90', concat(randomBytes(rand, 3000), new Uint8Array(300_000).fill(0x90))],
      ['text', text(rand, 700_000)],
      ['short', randomBytes(rand, 300)]
    ]
    expect(mismatches(inputs)).toEqual([])
    for (const [label, data] of inputs) {
      const whole = ssdeep(data)
      // Sizes around the 7-byte rolling window, bigger ones, and runs of 1-byte chunks.
      const sizes = () => (rand() < 0.5 ? 1 + ((rand() * 9) | 0) : 1 + ((rand() * 100_000) | 0))
      expect(chunked(data, sizes), `${label}, random chunks`).toBe(whole)
      expect(chunked(data.subarray(0, 200_000), () => 1), `${label}, 1-byte chunks`).toBe(
        ssdeep(data.subarray(0, 200_000))
      )
      const h = new SsdeepHasher().update(new Uint8Array(0)).update(data).update(new Uint8Array(0))
      expect(h.digest(), `${label}, empty chunks`).toBe(whole)
    }
  })
})
