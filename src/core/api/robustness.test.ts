// Hostile and malformed requests on every route: never a 5xx (outside the spec's own 500s),
// always a JSON {"message"}, never a stack trace or a path of the host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import net from 'node:net'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { startHarness, type Harness } from '../../../test/service-harness'

let h: Harness
beforeAll(async () => {
  h = await startHarness()
  await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com' }))
})
afterAll(async () => h.stop())

const VALUES = ['0', '-1', 'abc', '1.5', '1e3', '99999999999999999999999', '%00', '..%2F..%2Fetc%2Fpasswd', '%2e%2e', '%E2%80%AE',
  '%C0%AE', 'x'.repeat(3000), '%F0%9F%90%A6', '1%0A2', "'%20OR%201=1", '%25', '%ZZ']
const ROUTES = ['/tasks/view/:x', '/tasks/list/:x', '/tasks/list/1/:x', '/tasks/sample/:x', '/tasks/delete/:x', '/tasks/reschedule/:x',
  '/tasks/reschedule/1/:x', '/tasks/reboot/:x', '/tasks/rereport/:x', '/tasks/report/:x', '/tasks/report/1/:x', '/tasks/screenshots/:x',
  '/tasks/screenshots/1/:x', '/memory/list/:x', '/memory/get/1/:x', '/memory/get/:x/1', '/files/view/md5/:x', '/files/view/sha256/:x',
  '/files/view/id/:x', '/files/get/:x', '/pcap/get/:x', '/machines/view/:x', '/tasks/summary/:x', '/v1/tasks/view/:x',
  '/tasks/list?status=:x', '/tasks/list?completed_after=:x', '/tasks/report/1/all?tar=:x', '/tasks/report/1/json?elements=:x']

function checkBody(status: number, text: string, where: string) {
  expect(status, where).toBeLessThan(500)
  expect(text, where).not.toContain(h.dataDir)
  expect(text, where).not.toMatch(/\n\s+at .+:\d+:\d+/)
  if (status >= 400) {
    const body = JSON.parse(text) as { message?: unknown }
    expect(typeof body.message, where).toBe('string')
  }
}

describe('hostile path and query values', () => {
  it('answers every combination without a server error', async () => {
    for (const route of ROUTES) {
      for (const v of VALUES) {
        const p = route.replace(':x', v)
        const res = await h.get(p)
        checkBody(res.status, await res.text(), p)
      }
    }
  }, 120_000)
})

async function raw(request: string | Buffer): Promise<{ status: number; body: string }> {
  const { port, hostname } = new URL(h.url)
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname, () => sock.end(request))
    let data = ''
    sock.on('data', (d) => (data += d.toString('latin1')))
    sock.on('error', reject)
    sock.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0)
      resolve({ status, body: data.slice(data.indexOf('\r\n\r\n') + 4) })
    })
  })
}

describe('malformed bodies', () => {
  // [path, content type, body, expected status class]; 200s are Cuckoo's "accepted with errors"
  const posts: [string, string, string, number?][] = [
    ['/tasks/create/url', 'text/plain', 'url=http://a.com'],
    ['/tasks/create/url', 'application/xml', '<url/>'],
    ['/tasks/create/url', 'application/json', '{"url": '],
    ['/tasks/create/url', 'application/json', '[1,2]'],
    ['/tasks/create/url', 'application/json', '{"url": {"$ne": 1}}'],
    ['/tasks/create/url', 'application/json', '{"__proto__": {"x": 1}, "url": "http://a.com"}'],
    ['/tasks/create/url', 'application/x-www-form-urlencoded', 'url=http://a.com&priority=1&priority=2'],
    ['/tasks/create/file', 'multipart/form-data', 'no boundary here'],
    ['/tasks/create/file', 'multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc'],
    ['/tasks/create/file', 'multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="__proto__"\r\n\r\nx\r\n--XX--\r\n'],
    ['/tasks/create/submit', 'multipart/form-data; boundary=XX', '--XX\r\nContent-Disposition: form-data; name="strings"\r\n\r\n\u0000\u0001\r\n--XX--\r\n', 200],
    ['/tasks/create/submit', 'application/json', '{"strings": 5}', 200],
    ['/tasks/create/file', 'application/octet-stream', 'MZ....']
  ]
  for (const [p, type, body, expected] of posts) {
    it(`POST ${p} with ${type}: ${JSON.stringify(body).slice(0, 40)}`, async () => {
      const res = await fetch(h.url + p, { method: 'POST', headers: { 'content-type': type }, body })
      const text = await res.text()
      checkBody(res.status, text, `${p} ${body}`)
      if (expected === 200) {
        expect(res.status).toBe(200)
        expect((JSON.parse(text) as { errors: string[] }).errors.length).toBeGreaterThan(0)
      } else {
        expect(res.status).toBeGreaterThanOrEqual(400)
      }
    })
  }

  it('survives raw protocol abuse: lying content-length, unknown method, truncated upload', async () => {
    const lying = await raw('POST /tasks/create/url HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{"url": "http://a.com"}')
    expect(lying.status).toBeGreaterThanOrEqual(400)
    expect(lying.status).toBeLessThan(500)
    const method = await raw('BREW /tasks/list HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    expect(method.status).toBeGreaterThanOrEqual(400)
    expect(method.status).toBeLessThan(500)
    const truncated = await raw('POST /tasks/create/file HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000\r\n\r\n--B\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\npartial')
    expect(truncated.status === 0 || truncated.status < 500).toBe(true)
    // the service is still answering, and the aborted upload was not kept
    expect((await h.json('/cuckoo/status')).status).toBe(200)
    await new Promise((r) => setTimeout(r, 200))
    expect(readdirSync(path.join(h.dataDir, 'tmp'))).toEqual([])
  })

  it('refuses dot segments that a browser would have normalized away', async () => {
    for (const p of ['/memory/get/1/..', '/memory/get/1/.', '/tasks/screenshots/1/..', '/tasks/report/1/..']) {
      const r = await raw(`GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
      expect(r.status, p).toBeGreaterThanOrEqual(400)
      expect(r.status, p).toBeLessThan(500)
      expect(r.body).not.toContain(h.dataDir)
    }
  })
})
