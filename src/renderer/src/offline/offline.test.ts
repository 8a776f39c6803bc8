// The offline reader on real archives: an analysis folder packed by the real tar (bzip2, gzip,
// plain) and zip tools, read back with the page's code (inline here: Node has no Worker), and the
// bzip2 decoder run with no Buffer at all, as in a browser.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { resolveObjectURL } from 'node:buffer'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { detectFormat, readArchive, unpack } from './archive'
import { bunzip2 } from './bunzip'
import { findRoot, openAnalysis } from './analysis'

let dir: string
const report = { info: { id: 7, score: 4.2 }, target: { category: 'file', file: { name: 'invoice\u202Egpj.exe' } }, screenshots: [{ path: '/x/shots/0001.jpg' }],
  dropped: [{ name: 'note.txt', relpath: 'files/0123456789abcdef_note.txt', path: '/data/analyses/7/files/0123456789abcdef_note.txt' }] }

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-offline-'))
  const a = path.join(dir, '7')
  for (const d of ['reports', 'shots', 'memory', 'files', 'mitm']) mkdirSync(path.join(a, d), { recursive: true })
  writeFileSync(path.join(a, 'reports/report.json'), JSON.stringify(report))
  writeFileSync(path.join(a, 'shots/0001.jpg'), 'jpeg-1')
  writeFileSync(path.join(a, 'shots/0002.jpg'), 'jpeg-2')
  writeFileSync(path.join(a, 'shots/0001_small.jpg'), 'thumb-1')
  writeFileSync(path.join(a, 'memory/1234-1.dmp'), Buffer.alloc(70_000, 7))
  writeFileSync(path.join(a, 'dump.pcap'), 'pcap')
  writeFileSync(path.join(a, 'mitm/dump.mitm'), 'mitm flows')
  writeFileSync(path.join(a, 'files/0123456789abcdef_note.txt'), 'dropped!')
  // A long name (GNU tar writes it as a ././@LongLink entry) and a lot of compressible bytes.
  writeFileSync(path.join(a, 'files', `${'x'.repeat(120)}.bin`), Buffer.alloc(3 * 1024 * 1024, 'ab'))
  execFileSync('tar', ['-cjf', 'a.tar.bz2', '-C', dir, '7'], { cwd: dir })
  execFileSync('tar', ['-czf', 'a.tar.gz', '-C', path.join(dir, '7'), '.'], { cwd: dir })
  execFileSync('tar', ['-cf', 'a.tar', '-C', dir, '7'], { cwd: dir })
  execFileSync('zip', ['-qr', path.join(dir, 'a.zip'), '7'], { cwd: dir })
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const blobOf = (name: string) => new Blob([readFileSync(path.join(dir, name))])

describe('offline archives', () => {
  it.each(['a.tar.bz2', 'a.tar.gz', 'a.tar', 'a.zip'])('reads %s made by the real tool', async (name) => {
    const analysis = await openAnalysis(await readArchive(blobOf(name)))
    expect((analysis.report as typeof report).target.file.name).toBe('invoice\u202Egpj.exe')
    expect(analysis.root).toBe(name === 'a.tar.gz' ? '' : '7')
    expect(analysis.sources.screenshotNames?.()).toEqual(['0001.jpg', '0002.jpg'])
    expect(analysis.sources.memoryNames?.()).toEqual([{ name: '1234-1.dmp', size: 70_000 }])
    expect(analysis.files.get(`files/${'x'.repeat(120)}.bin`)?.size).toBe(3 * 1024 * 1024)
    // blob: URLs that really hold the files' bytes.
    const text = async (u: string | null) => (u === null ? null : await resolveObjectURL(u)?.text())
    expect(await text(analysis.sources.screenshot('0001.jpg', true))).toBe('thumb-1')
    expect(await text(analysis.sources.screenshot('0002.jpg', false))).toBe('jpeg-2')
    expect(await text(analysis.sources.pcap())).toBe('pcap')
    expect(await text(analysis.sources.flows?.() ?? null)).toBe('mitm flows')
    expect(await text(analysis.sources.droppedFile(report.dropped[0] as Record<string, unknown>))).toBe('dropped!')
    expect(analysis.sources.screenshot('0002.jpg', true)).toBeNull()
    const shot = analysis.sources.screenshot('0001.jpg', false) as string
    analysis.close()
    expect(resolveObjectURL(shot)).toBeUndefined()
  })

  it('decodes bzip2 with no Buffer in the global scope, as in a page', () => {
    const bytes = new Uint8Array(readFileSync(path.join(dir, 'a.tar.bz2')))
    const saved = globalThis.Buffer
    // @ts-expect-error -- removed on purpose, as a browser has none
    delete globalThis.Buffer
    let out: Uint8Array
    try {
      out = bunzip2(bytes)
      expect(typeof (globalThis as { Buffer?: unknown }).Buffer).toBe('undefined')
    } finally {
      globalThis.Buffer = saved
    }
    expect(detectFormat(out)).toBe('tar')
    expect(out.length).toBe(readFileSync(path.join(dir, 'a.tar')).length)
  })

  it('refuses what is not an analysis or not an archive, with a reason', async () => {
    await expect(readArchive(new Blob(['hello, not an archive']))).rejects.toThrow(/Not a tar, tar.gz, tar.bz2 or zip/)
    await expect(openAnalysis([{ name: 'a/b.txt', blob: new Blob(['x']) }])).rejects.toThrow(/No analysis here/)
    await expect(openAnalysis([{ name: 'a/reports/report.json', blob: new Blob(['{bad']) }])).rejects.toThrow(/not valid JSON/)
    expect(() => unpack(new Uint8Array([0x42, 0x5a, 0x68, 0x39, 1, 2, 3]))).toThrow()
    // Paths that climb out are dropped; the shallowest report wins.
    expect(findRoot(['x/7/reports/report.json', 'x/7/files/y/reports/report.json'])).toEqual({ root: 'x/7', hasReport: true })
  })
})
