// Reports, archives, screenshots, memory dumps and pcaps, read from analysis folders that the
// test builds itself (the engine that writes them comes later). Archives are checked with tar.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, ftruncateSync, symlinkSync, writeFileSync, readFileSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { get as httpGet, type IncomingMessage } from 'node:http'
import { startHarness, type Harness } from '../../../test/service-harness'

let h: Harness
let id: number
let dir: string
const report = { info: { id: 1 }, target: { category: 'file' }, behavior: { generic: [1], summary: { x: 1 } }, debug: { log: [] } }
const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(2000)])

beforeAll(async () => {
  h = await startHarness()
  id = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com' }))).body.task_id as number
  dir = h.analysisDir(id)
  for (const sub of ['reports', 'shots', 'memory', 'files', 'logs', 'package_files']) mkdirSync(path.join(dir, sub))
  writeFileSync(path.join(dir, 'reports', 'report.json'), JSON.stringify(report))
  writeFileSync(path.join(dir, 'reports', 'report.html'), '<html><body>report</body></html>')
  writeFileSync(path.join(dir, 'reports', 'report.maec-1.1.xml'), '<maec/>')
  writeFileSync(path.join(dir, 'shots', '0001.jpg'), jpeg)
  writeFileSync(path.join(dir, 'shots', '0001_small.jpg'), jpeg.subarray(0, 100))
  writeFileSync(path.join(dir, 'shots', '0002.jpg'), jpeg.subarray(0, 500))
  writeFileSync(path.join(dir, 'memory', '1234-1.dmp'), 'dump one')
  writeFileSync(path.join(dir, 'memory', '1234-2.dmp'), 'dump two')
  writeFileSync(path.join(dir, 'files', 'abc_dropped.exe'), 'dropped')
  writeFileSync(path.join(dir, 'package_files', 'extra.txt'), 'pkg')
  writeFileSync(path.join(dir, 'logs', '1234.bson'), 'bson')
  writeFileSync(path.join(dir, 'dump.pcap'), Buffer.from('d4c3b2a1020004000000000000000000ffff000001000000', 'hex'))
  writeFileSync(path.join(dir, 'memory.dmp'), 'full vm dump')
  writeFileSync(path.join(dir, 'analysis.log'), 'log')
})
afterAll(async () => h.stop())

const bytes = async (p: string) => {
  const res = await h.get(p)
  return { res, buf: Buffer.from(await res.arrayBuffer()) }
}
function tarList(buf: Buffer, flag: string): string[] {
  const tmp = mkdtempSync(path.join(tmpdir(), 'aviary-tar-'))
  try {
    const file = path.join(tmp, 'a.tar')
    writeFileSync(file, buf)
    return execFileSync('tar', [`-t${flag}f`, file], { encoding: 'utf8' }).trim().split('\n').map((l) => l.replace(/\/$/, '')).sort()
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

describe('GET /tasks/report', () => {
  it('serves report.json verbatim as JSON, by default and by name', async () => {
    for (const p of [`/tasks/report/${id}`, `/tasks/report/${id}/json`, `/v1/tasks/report/${id}/JSON`]) {
      const { res, buf } = await bytes(p)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(JSON.parse(buf.toString())).toEqual(report)
    }
  })

  it('serves html and the older maec format, with their content types', async () => {
    const html = await bytes(`/tasks/report/${id}/html`)
    expect(html.res.headers.get('content-type')).toMatch(/^text\/html/)
    expect(html.res.headers.get('content-security-policy')).toMatch(/sandbox/)
    expect(html.buf.toString()).toContain('report')
    const maec = await bytes(`/tasks/report/${id}/maec`)
    expect(maec.res.headers.get('content-type')).toMatch(/xml/)
    expect((await h.json(`/tasks/report/${id}/metadata`)).status).toBe(404)
  })

  it('returns one element of the report, and the summary without heavy keys', async () => {
    expect((await h.json(`/tasks/report/${id}/json?elements=target`)).body).toEqual(report.target)
    expect(await h.json(`/tasks/report/${id}/json?elements=nope`)).toMatchObject({ status: 404 })
    expect((await h.json(`/tasks/summary/${id}`)).body).toEqual({ info: { id: 1 }, target: { category: 'file' }, behavior: { summary: { x: 1 } } })
  })

  it('serves elements and the summary of a report rewritten since (no stale index), and refuses a damaged one with 404', async () => {
    const other = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.org' }))).body.task_id as number
    const file = path.join(h.analysisDir(other), 'reports', 'report.json')
    mkdirSync(path.dirname(file), { recursive: true })
    const first = { info: { id: other, score: 2 }, strings: ['"}', '\\'], behavior: { processes: [{ calls: [] }], processtree: [{ pid: 1 }], apistats: {} }, procmemory: [] }
    writeFileSync(file, JSON.stringify(first, null, 4))
    expect((await h.json(`/tasks/report/${other}/json?elements=strings`)).body).toEqual(first.strings)
    expect((await h.json(`/tasks/summary/${other}`)).body).toEqual({ info: first.info, strings: first.strings, behavior: { processtree: [{ pid: 1 }] } })
    const second = { info: { id: other, score: 9 }, behavior: 'not an object' }
    writeFileSync(file, JSON.stringify(second))
    expect((await h.json(`/tasks/report/${other}/json?elements=info`)).body).toEqual(second.info)
    expect((await h.json(`/tasks/summary/${other}`)).body).toEqual(second)
    writeFileSync(file, '{"info": {"id": 1}, "cut": [1, 2')
    const damaged = await h.json<{ message: string }>(`/tasks/summary/${other}`)
    expect(damaged.status).toBe(404)
    expect(damaged.body.message).toMatch(/^Report not readable/)
  })

  it('answers 400 for an unknown format and 404 for a missing report', async () => {
    const bad = await h.json<{ message: string }>(`/tasks/report/${id}/pdf`)
    expect(bad.status).toBe(400)
    expect(bad.body.message).toMatch(/^Invalid report format/)
    expect(await h.json('/tasks/report/999999')).toMatchObject({ status: 404, body: { message: 'Report not found' } })
    expect(await h.json('/tasks/report/999999/all')).toMatchObject({ status: 404, body: { message: 'Report not found' } })
  })

  it('streams the all archive without memory.dmp, bzip2 by default, gzip and plain on request', async () => {
    const expected = ['analysis.log', 'dump.pcap', 'files', 'files/abc_dropped.exe', 'logs', 'logs/1234.bson', 'memory', 'memory/1234-1.dmp',
      'memory/1234-2.dmp', 'package_files', 'package_files/extra.txt', 'reports', 'reports/report.html', 'reports/report.json',
      'reports/report.maec-1.1.xml', 'shots', 'shots/0001.jpg', 'shots/0001_small.jpg', 'shots/0002.jpg']
    for (const [q, flag] of [['', 'j'], ['?tar=bz2', 'j'], ['?tar=gz', 'z'], ['?tar=tar', '']] as const) {
      const { res, buf } = await bytes(`/tasks/report/${id}/all${q}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^application\/x-tar/)
      expect(tarList(buf, flag)).toEqual(expected)
    }
    expect((await h.json(`/tasks/report/${id}/all?tar=zip`)).status).toBe(400)
  })

  it('streams dropped and package_files archives', async () => {
    expect(tarList((await bytes(`/tasks/report/${id}/dropped`)).buf, 'j')).toEqual(['files', 'files/abc_dropped.exe'])
    expect(tarList((await bytes(`/tasks/report/${id}/package_files?tar=gz`)).buf, 'z')).toEqual(['package_files', 'package_files/extra.txt'])
  })
})

describe('GET /tasks/screenshots', () => {
  it('serves one screenshot as JPEG, padding the number', async () => {
    for (const n of ['0001', '1']) {
      const { res, buf } = await bytes(`/tasks/screenshots/${id}/${n}`)
      expect(res.headers.get('content-type')).toBe('image/jpeg')
      expect(buf.equals(jpeg)).toBe(true)
    }
    expect((await bytes(`/tasks/screenshots/${id}/0001_small`)).buf.length).toBe(100)
    expect(await h.json(`/tasks/screenshots/${id}/0009`)).toMatchObject({ status: 404, body: { message: 'Screenshot not found!' } })
    expect((await h.json(`/tasks/screenshots/${id}/..%2F..%2Fetc`)).status).toBe(400)
  })

  it('serves all screenshots as a stored zip', async () => {
    const { res, buf } = await bytes(`/tasks/screenshots/${id}`)
    expect(res.headers.get('content-type')).toBe('application/zip')
    const tmp = mkdtempSync(path.join(tmpdir(), 'aviary-zip-'))
    onTestFinished(() => rmSync(tmp, { recursive: true, force: true }))
    writeFileSync(path.join(tmp, 's.zip'), buf)
    const listing = execFileSync('unzip', ['-Z1', path.join(tmp, 's.zip')], { encoding: 'utf8' }).trim().split('\n')
    expect(listing).toEqual(['0001.jpg', '0001_small.jpg', '0002.jpg'])
    expect(execFileSync('unzip', ['-p', path.join(tmp, 's.zip'), '0001.jpg']).equals(jpeg)).toBe(true)
    expect(await h.json('/tasks/screenshots/999999')).toMatchObject({ status: 404, body: { message: 'Task not found' } })
  })
})

describe('memory and pcap', () => {
  it('lists and serves process dumps', async () => {
    expect((await h.json(`/memory/list/${id}`)).body).toEqual({ dump_files: ['1234-1', '1234-2'] })
    const { res, buf } = await bytes(`/memory/get/${id}/1234-2`)
    expect(res.headers.get('content-type')).toMatch(/^application\/octet-stream/)
    expect(buf.toString()).toBe('dump two')
    expect(await h.json(`/memory/get/${id}/9999-1`)).toMatchObject({ status: 404, body: { message: 'Memory dump not found' } })
    expect(await h.json('/memory/list/999999')).toMatchObject({ status: 404, body: { message: 'Memory dump not found' } })
  })

  it('serves the pcap and byte ranges of it', async () => {
    const { res, buf } = await bytes(`/pcap/get/${id}`)
    expect(res.status).toBe(200)
    expect(buf.equals(readFileSync(path.join(dir, 'dump.pcap')))).toBe(true)
    const part = await h.get(`/pcap/get/${id}`, { range: 'bytes=0-3' })
    expect(part.status).toBe(206)
    expect(Buffer.from(await part.arrayBuffer()).toString('hex')).toBe('d4c3b2a1')
    expect(await h.json('/pcap/get/999999')).toMatchObject({ status: 404, body: { message: 'File not found' } })
  })

  it('does not follow links out of the data directory', async () => {
    const other = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com/l' }))).body.task_id as number
    const d = h.analysisDir(other)
    symlinkSync('/etc/passwd', path.join(d, 'dump.pcap'))
    mkdirSync(path.join(d, 'reports'))
    symlinkSync('/etc/hostname', path.join(d, 'reports', 'report.json'))
    expect((await h.json(`/pcap/get/${other}`)).status).toBe(404)
    expect((await h.json(`/tasks/report/${other}`)).status).toBe(404)
  })

  it('streams a 4 GiB memory dump with flat memory', async () => {
    const big = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com/big' }))).body.task_id as number
    const mem = path.join(h.analysisDir(big), 'memory')
    mkdirSync(mem)
    const size = 4 * 1024 ** 3
    const fd = openSync(path.join(mem, '4242-1.dmp'), 'w')
    ftruncateSync(fd, size) // sparse: no disk used
    closeSync(fd)
    // Read with node:http rather than fetch, whose web stream costs more per byte (the test took
    // 26 s instead of 32 s on a quiet 2-core machine): the point is the server's memory.
    const res = await new Promise<IncomingMessage>((resolve, reject) => httpGet(`${h.url}/memory/get/${big}/4242-1`, resolve).once('error', reject))
    expect(res.headers['content-length']).toBe(String(size))
    const before = process.memoryUsage().rss
    let peak = before
    let total = 0
    for await (const chunk of res as AsyncIterable<Buffer>) {
      total += chunk.length
      if ((total & 0x3ffffff) < chunk.length) peak = Math.max(peak, process.memoryUsage().rss)
    }
    expect(total).toBe(size)
    // client and server share this process: both together stay within 200 MB of the start
    expect(peak - before).toBeLessThan(200 * 1024 * 1024)
  }, 180_000)
})

describe('results of a task that does not exist', () => {
  it('are 404 on every task route, even with its analysis folder still on disk', async () => {
    const gone = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com/gone' }))).body.task_id as number
    const d = h.analysisDir(gone)
    cpSync(dir, d, { recursive: true })
    // Every GET route that takes a task id, from the API's own description.
    const fill: Record<string, string> = { id: String(gone), task: String(gone), format: 'json', screenshot: '1', pid: '1234-1', priority: '2' }
    const { body: api } = await h.json<{ paths: Record<string, { get?: { parameters?: { name: string; in: string }[] } }> }>('/openapi.json')
    const routes = Object.entries(api.paths)
      .filter(([p, ops]) => ops.get && !/^\/(v1\/)?(files|aviary)\//.test(p) && (ops.get.parameters ?? []).some((x) => x.in === 'path' && (x.name === 'id' || x.name === 'task')))
      .map(([p]) => p.replace(/\{(\w+)\}/g, (_, name: string) => fill[name]!))
    const results = routes.filter((p) => /\/(report|summary|screenshots|memory|pcap|timeline)\//.test(p))
    results.push(`/tasks/report/${gone}/html`, `/tasks/report/${gone}/all`, `/tasks/report/${gone}/json?elements=info`, `/tasks/screenshots/${gone}/0001_small`)
    expect(results.length).toBeGreaterThanOrEqual(18)
    for (const p of results) expect((await h.get(p)).status, p).toBe(200) // served while the task exists

    // The row goes, the folder stays (a delete that could not remove it, or a copy restored by hand).
    for (const sql of ['DELETE FROM task_events WHERE task_id = ?', 'DELETE FROM task_json WHERE id = ?', 'DELETE FROM tasks WHERE id = ?']) h.sql(sql, gone)
    for (const p of [...routes, ...results]) {
      const res = await h.get(p)
      expect(res.status, p).toBe(404)
      expect(await res.json(), p).toEqual({ message: expect.any(String), code: expect.stringMatching(/^AVIARY_/) })
    }
    expect(existsSync(path.join(d, 'reports', 'report.json'))).toBe(true)
  })
})
