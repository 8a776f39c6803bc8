// Memory-dump triage against a baseline: a "clean" dump made of real system content (libraries,
// programs and Debian's copyright files: thousands of URLs, host names and addresses), and the
// same dump after a run, with strings planted in it: as ASCII, as UTF-16LE, one across the
// boundary of the 4 MiB pieces the scan reads, and one the baseline already had. Only the planted
// ones that are new are reported.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { readIndicators, scanIndicators, triage, writeIndicators, type Indicators } from './memory-triage'

const PIECE = 4 * 1024 * 1024
const URL = 'http://planted-c2.example.org/gate.php?id=42'
const WIDE = 'wide-planted.example.info'
const IP = '203.0.113.77'

function realContent(limit: number): Buffer {
  const parts: Buffer[] = []
  let n = 0
  const add = (f: string): void => {
    if (n >= limit) return
    try {
      if (!statSync(f).isFile()) return
      const b = readFileSync(f)
      parts.push(b)
      n += b.length
    } catch { /* unreadable */ }
  }
  for (const d of readdirSync('/usr/share/doc').slice(0, 400)) add(path.join('/usr/share/doc', d, 'copyright'))
  for (const f of ['/usr/bin/curl', '/usr/bin/wget', '/usr/lib/x86_64-linux-gnu/libcurl.so.4', '/usr/bin/openssl', '/usr/bin/ssh']) add(f)
  return Buffer.concat(parts).subarray(0, limit)
}

describe('memory-dump triage', () => {
  let dir: string
  let before: Indicators
  let baselineDomain: string
  let after: string
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'triage-'))
    const clean = realContent(10 * 1024 * 1024)
    writeFileSync(path.join(dir, 'clean.dmp'), clean)
    before = await scanIndicators(path.join(dir, 'clean.dmp'))
    baselineDomain = before.domains.find((d) => d.endsWith('.org')) ?? before.domains[0]!
    const dump = Buffer.concat([clean, Buffer.alloc(8 * 1024 * 1024)])
    const at = clean.length + 4096
    dump.write(`\0${URL}\0`, at, 'latin1')
    dump.write(`\0\0${WIDE}\0\0`, at + 1000, 'utf16le')
    dump.write(`\0${baselineDomain}\0`, at + 3000, 'latin1')
    const boundary = Math.ceil((at + 5000) / PIECE) * PIECE
    dump.write(`\0ip=${IP};\0`, boundary - 7, 'latin1')
    after = path.join(dir, 'after.dmp')
    writeFileSync(after, dump)
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('the clean dump has plenty to be told apart from', () => {
    expect(before.complete).toBe(true)
    expect(before.urls.length).toBeGreaterThan(50)
    expect(before.domains.length).toBeGreaterThan(50)
    expect(before.domains).not.toContain('planted-c2.example.org')
  })

  it('reports exactly what was planted after the baseline, through a kept baseline file', async () => {
    await writeIndicators(path.join(dir, 'baseline.json'), before, 'vm1/clean')
    const base = await readIndicators(path.join(dir, 'baseline.json'))
    expect(base?.source).toBe('vm1/clean')
    const t = triage(await scanIndicators(after), base!.indicators, base!.source)
    expect(t).toEqual({
      baseline: 'vm1/clean', urls: [URL], domains: ['planted-c2.example.org', WIDE], ips: [IP],
      bytes: statSync(after).size, complete: true
    })
  })

  it('finds strings whole beside pages of zeros, which it skips, and across pieces that start with them', async () => {
    // A dump that is mostly zero pages, as a guest's is. Each name ends where a zero page begins: an
    // ASCII one at a page's end, a UTF-16LE one whose last zero byte is the next page's first, and
    // the same two at the end of a 4 MiB piece whose next piece starts with a zero page.
    const dump = Buffer.alloc(3 * PIECE)
    const ascii = (name: string, end: number): void => void dump.write(name, end - name.length, 'latin1')
    const wide = (name: string, end: number): void => void dump.write(name, end - 2 * name.length, 'utf16le')
    ascii('edge-a.example.net', 2 * 4096)
    wide('edge-w.example.net', 3 * 4096 + 1)
    dump.write('after-zeros.example.org', 5 * 4096, 'latin1')
    ascii('piece-a.example.com', PIECE)
    wide('piece-w.example.com', 2 * PIECE + 1)
    const file = path.join(dir, 'zeros.dmp')
    writeFileSync(file, dump)
    const r = await scanIndicators(file)
    expect(r.domains.sort()).toEqual(['after-zeros.example.org', 'edge-a.example.net', 'edge-w.example.net', 'piece-a.example.com', 'piece-w.example.com'])
    expect(r).toMatchObject({ urls: [], ips: [], bytes: dump.length, complete: true })
  })

  it('stops at its time bound and says so', async () => {
    const r = await scanIndicators(after, { seconds: -1 })
    expect(r.complete).toBe(false)
    expect(r.bytes).toBe(0)
  })

  it('refuses a baseline file that is not one', async () => {
    writeFileSync(path.join(dir, 'bad.json'), '{"urls": 3}')
    expect(await readIndicators(path.join(dir, 'bad.json'))).toBeNull()
    expect(await readIndicators(path.join(dir, 'missing.json'))).toBeNull()
  })
})
