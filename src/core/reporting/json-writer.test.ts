// The streamed report.json writer: its output is JSON.stringify's for plain data (so Cuckoo
// consumers parse it unchanged), a failure leaves the previous report in place, and a report of
// a million API calls is written with memory growth far below its size (measured in a child process,
// so the test runner's own heap does not blur the figure).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { build } from 'esbuild'
import { writeJsonReport } from './json-writer'

let dir = ''
beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'aviary-jsonw-')) })
afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

function sampleReport(): Record<string, unknown> {
  return {
    info: { id: 7, version: '2.0.7', started: 1763900000.25, ended: 1763900060.5, duration: 60, score: 3.4, machine: { name: 'win7', label: null } },
    target: { category: 'file', file: { name: 'invoice\u202Egpj.exe', size: 1024, yara: [], urls: [] } },
    strings: ['a"b\\c', 'line\nbreak', '\u0000\u001f\u007f', 'lone \ud800 surrogate', 'emoji 🐦', '</script>'],
    behavior: {
      processes: [{ pid: 1, ppid: 0, calls: [{ api: 'NtCreateFile', arguments: { a: 1, b: [1, 2, { c: null }] }, flags: {}, stacktrace: [] }] }],
      processtree: [], summary: {}
    },
    network: { hosts: [], dns: [{ request: 'x', answers: [] }], weird: [undefined, () => 1, Number.NaN, Infinity, -0, 1e21, 5e-7] },
    nested: [[[[[]]]], {}, [{}], { k: undefined, f: () => 2, s: Symbol('x') }],
    boxed: [Object(1), Object('s'), Object(true)],
    custom: { toJSON: (k: string) => `custom:${k}` }
  }
}

describe('writeJsonReport', () => {
  it('writes exactly JSON.stringify(report, null, indent) for indents 4 (default), 2 and 0', async () => {
    const r = sampleReport()
    const file = path.join(dir, 'report.json')
    await writeJsonReport(file, r)
    expect(readFileSync(file, 'utf8')).toBe(JSON.stringify(r, null, 4) + '\n')
    for (const indent of [2, 0]) {
      await writeJsonReport(file, r, { indent })
      expect(readFileSync(file, 'utf8')).toBe(JSON.stringify(r, null, indent) + '\n')
    }
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(JSON.parse(JSON.stringify(r)))
  })

  it('writes a Date as epoch seconds (Cuckoo jsondump) and a bigint as digits', async () => {
    const file = path.join(dir, 'dates.json')
    await writeJsonReport(file, { started: new Date(Date.UTC(2026, 10, 23, 13, 0, 0, 500)), big: 12345678901234567890n, list: [new Date(0)] }, { indent: 0 })
    expect(readFileSync(file, 'utf8')).toBe('{"started":' + (Date.UTC(2026, 10, 23, 13, 0, 0, 500) / 1000) + ',"big":12345678901234567890,"list":[0]}\n')
  })

  it('a failure (circular report) leaves the previous report and no temporary file', async () => {
    const file = path.join(dir, 'keep.json')
    writeFileSync(file, '{"old":true}\n')
    const cyclic: Record<string, unknown> = { a: { b: [] as unknown[] } }
    ;((cyclic.a as Record<string, unknown>).b as unknown[]).push(cyclic)
    await expect(writeJsonReport(file, cyclic)).rejects.toThrow(/circular/)
    expect(readFileSync(file, 'utf8')).toBe('{"old":true}\n')
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([])
    // A shared (non-circular) object is fine, as with JSON.stringify.
    const shared = { x: 1 }
    await writeJsonReport(file, { a: shared, b: [shared, shared] }, { indent: 0 })
    expect(readFileSync(file, 'utf8')).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}\n')
  })

  it('writes a report of 1,000,000 API calls with RSS growth far below its size', async () => {
    const bundle = path.join(dir, 'json-writer.mjs')
    await build({ entryPoints: [path.join(__dirname, 'json-writer.ts')], bundle: true, platform: 'node', format: 'esm', outfile: bundle, logLevel: 'silent' })
    const script = path.join(dir, 'big.mjs')
    writeFileSync(script, `
import { writeJsonReport } from './json-writer.mjs'
const calls = []
for (let i = 0; i < 1_000_000; i++) {
  calls.push({ api: 'NtWriteFile', category: 'file', status: true, return_value: 0,
    arguments: { file_handle: '0x' + (i * 4).toString(16), buffer: 'data ' + i, length: i % 4096 },
    flags: {}, time: 1763900000 + i / 1000, tid: 1000 + (i % 7), stacktrace: [] })
}
const report = { info: { id: 1 }, behavior: { processes: [{ pid: 4, calls }] } }
globalThis.gc()
const before = process.memoryUsage().rss
let peak = before
const t = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 2)
await writeJsonReport(process.argv[2], report)
clearInterval(t)
peak = Math.max(peak, process.memoryUsage().rss)
process.stdout.write(JSON.stringify({ before, peak, calls: calls.length }))
`)
    const out = path.join(dir, 'big.json')
    const res = JSON.parse(execFileSync(process.execPath, ['--expose-gc', script, out], { encoding: 'utf8', maxBuffer: 1 << 20 })) as { before: number; peak: number; calls: number }
    const size = statSync(out).size
    const growth = res.peak - res.before
    console.log(JSON.stringify({ bytes: size, rss_before: res.before, rss_growth: growth }))
    expect(size).toBeGreaterThan(200 * 1024 * 1024)
    expect(growth).toBeLessThan(size / 8)
    // The end of the file is the well-formed close of the structure.
    const fd = openSync(out, 'r')
    const tailBuf = Buffer.alloc(200)
    readSync(fd, tailBuf, 0, 200, size - 200)
    closeSync(fd)
    const tail = tailBuf.toString('utf8')
    expect(tail).toMatch(/"stacktrace": \[\]\n {20}\}\n {16}\]\n {12}\}\n {8}\]\n {4}\}\n\}\n$/)
    // Every call is there (grep counts lines; one "api" key per call).
    expect(execFileSync('grep', ['-c', '"api": "NtWriteFile"', out], { encoding: 'utf8' }).trim()).toBe('1000000')
    rmSync(out)
    // 15 s of computing on an idle core; at a low priority beside the guests (a mode `npm test`
    // had once) it took over 60 s.
  }, 240_000)
})
