// Saved connections and the proxy to them, over real sockets: the local service and a second,
// token-protected instance (the remote), each with its own SQLite file. The page never sends
// the remote's token: the proxy adds it.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, form, type Harness } from '../../../test/service-harness'

const TOKEN = 'remote-secret-token'
let local: Harness
let remote: Harness

beforeAll(async () => {
  ;[local, remote] = await Promise.all([startHarness(), startHarness({ apiToken: TOKEN })])
})
afterAll(async () => Promise.all([local?.stop(), remote?.stop()]))

interface Conn { id: number; name: string; url: string; kind: string; has_token: boolean; created_on: string }

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } }
  if (body instanceof URLSearchParams || body instanceof FormData) init.body = body
  else if (body !== undefined) {
    init.body = JSON.stringify(body)
    ;(init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const res = await fetch(local.url + path, init)
  const text = await res.text()
  return { status: res.status, body: JSON.parse(text) as Record<string, unknown>, text, res }
}

/** A plain HTTP server on a free port (a stand-in where no real counterpart exists here). */
async function server(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const s = http.createServer(handler)
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`
  return { url, close: () => new Promise((r) => { s.closeAllConnections(); s.close(() => r()) }) }
}

async function deadUrl(): Promise<string> {
  const s = await server(() => undefined)
  await s.close()
  return s.url
}

async function save(name: string, url: string, token?: string): Promise<Conn> {
  const r = await call('POST', '/aviary/connections', { name, url, ...(token ? { token } : {}) })
  expect(r.status, r.text).toBe(200)
  return r.body.connection as Conn
}

describe('saved connections', () => {
  it('validates, detects the kind, never returns the token, and can be renamed and deleted', async () => {
    expect((await call('GET', '/aviary/connections')).body).toEqual({ connections: [] })

    const cases: [unknown, RegExp][] = [
      [{ url: remote.url }, /^name: required/],
      [{ name: 'x' }, /^url: required/],
      [{ name: 'x', url: 'ftp://example.com' }, /^url: must be http or https/],
      [{ name: 'x', url: 'not a url' }, /^url: not a URL/],
      [{ name: 'x', url: 'http://u:p@127.0.0.1:1' }, /^url: must not contain credentials/],
      [{ name: 'x', url: remote.url, token: 'has space' }, /^token: visible ASCII/],
      [{ name: 'evil\u202Egpj', url: remote.url }, /^name: control and bidi/],
      [{ name: 'ev\u200Bil', url: remote.url }, /^name: control and bidi characters, and other invisible ones/],
      [{ name: 'x', url: remote.url }, /^token: the server refused it: GET \/cuckoo\/status answered HTTP 401/],
      [{ name: 'x', url: remote.url, token: 'wrong' }, /^token: the server refused it/],
      [{ name: 'x', url: await deadUrl() }, /^url: no answer from http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/]
    ]
    for (const [body, message] of cases) {
      const r = await call('POST', '/aviary/connections', body)
      expect(r.status, JSON.stringify(body)).toBe(400)
      expect(r.body.message).toMatch(message)
    }

    // A web server that is not a Cuckoo API: the message says what it answered.
    const web = await server((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>nope</h1>'))
    try {
      const r = await call('POST', '/aviary/connections', { name: 'web', url: web.url })
      expect(r.status).toBe(400)
      expect(r.body.message).toBe('url: not a Cuckoo-compatible instance or dispatcher: GET /cuckoo/status answered HTTP 404 (text/html), GET /api/node answered HTTP 404 (text/html), GET /node answered HTTP 404 (text/html)')
    } finally {
      await web.close()
    }

    // Form-encoded, as a plain HTML form or curl -d would send it; a trailing slash is dropped.
    const created = await call('POST', '/aviary/connections', new URLSearchParams({ name: 'lab', url: `${remote.url}/`, token: TOKEN }))
    expect(created.status, created.text).toBe(200)
    const conn = created.body.connection as Conn
    expect(conn).toMatchObject({ name: 'lab', url: remote.url, kind: 'analysis', has_token: true })
    expect(conn.created_on).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
    const list = await call('GET', '/aviary/connections')
    expect(list.body.connections).toEqual([conn])
    expect(list.text).not.toContain(TOKEN)
    expect(created.text).not.toContain(TOKEN)

    const renamed = await call('PUT', `/aviary/connections/${conn.id}`, { name: 'lab 2' })
    expect(renamed.status).toBe(200)
    expect(renamed.body.connection).toEqual({ ...conn, name: 'lab 2' })
    // A new token is checked before it replaces the old one.
    const badToken = await call('PUT', `/aviary/connections/${conn.id}`, { token: 'wrong' })
    expect(badToken.status).toBe(400)
    expect(badToken.body.message).toMatch(/^token: /)
    expect((await call('GET', `/aviary/connections/${conn.id}`)).body.connection).toEqual({ ...conn, name: 'lab 2' })

    for (const path of ['/aviary/connections/999', '/aviary/connections/abc', '/aviary/connections/1e3']) {
      expect((await call('PUT', path, { name: 'y' })).status).toBe(404)
      expect((await call('GET', path)).status).toBe(404)
    }
    expect((await call('DELETE', `/aviary/connections/${conn.id}`)).status).toBe(200)
    expect((await call('DELETE', `/aviary/connections/${conn.id}`)).status).toBe(404)
    expect((await call('GET', '/aviary/connections')).body).toEqual({ connections: [] })
  })

  it('is described in the OpenAPI document', async () => {
    const doc = (await call('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> }
    expect(Object.keys(doc.paths['/aviary/connections']!).sort()).toEqual(['get', 'post'])
    expect(Object.keys(doc.paths['/aviary/connections/{id}']!).sort()).toEqual(['delete', 'get', 'put'])
    expect(Object.keys(doc.paths).filter((p) => p.includes('/proxy')).length).toBeGreaterThan(0)
  })

  it('detects a dispatcher by its node list', async () => {
    // No dispatcher runs in this repository yet: a server answering the dispatcher spec's node list.
    const seen: string[] = []
    const dist = await server((req, res) => {
      seen.push(`${req.url} ${req.headers.authorization ?? ''}`)
      if (req.url === '/api/node') res.writeHead(200, { 'content-type': 'application/json' }).end('{"success": true, "nodes": {}}')
      else res.writeHead(404, { 'content-type': 'application/json' }).end('{"message": "not found"}')
    })
    try {
      const conn = await save('dist', dist.url, 'dtok')
      expect(conn.kind).toBe('dispatcher')
      expect(seen).toEqual(['/cuckoo/status Bearer dtok', '/api/node Bearer dtok'])
    } finally {
      await dist.close()
    }
  })
})

describe('the proxy', () => {
  let conn: Conn
  beforeAll(async () => {
    conn = await save('remote', remote.url, TOKEN)
  })
  const proxy = (path: string) => `${local.url}/aviary/connections/${conn.id}/proxy${path}`

  it('adds the saved token and drops the page\'s own credentials and browser headers', async () => {
    // A same-origin page of the local service: its Origin and Cookie must not reach the remote
    // (which would refuse a foreign Origin), nor its Authorization.
    const res = await fetch(proxy('/cuckoo/status'), {
      headers: { origin: local.url, 'sec-fetch-site': 'same-origin', cookie: 'a=b', authorization: 'Bearer local-one' }
    })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { version: string }).version).toBeTruthy()
    // Without the proxy, the remote refuses the same request.
    expect((await fetch(`${remote.url}/cuckoo/status`)).status).toBe(401)
    // Query strings pass on: the remote validates `task` itself.
    const bad = await fetch(proxy('/events?task=abc'))
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { message: string }).message).toMatch(/task/)
  })

  it('uploads a file, lists it and downloads a file of it', async () => {
    const data = Buffer.from('MZ proxied sample \u00e9'.repeat(1000))
    const up = await fetch(proxy('/tasks/create/file'), { method: 'POST', body: form({ package: 'exe' }, [{ name: 'sample.exe', data }]) })
    expect(up.status).toBe(200)
    const { task_id } = (await up.json()) as { task_id: number }
    const list = await fetch(proxy('/tasks/list'))
    const tasks = ((await list.json()) as { tasks: { id: number; target: string; sample: { sha256: string } }[] }).tasks
    const task = tasks.find((t) => t.id === task_id)!
    expect(task.target).toMatch(/sample\.exe$/)
    const { createHash } = await import('node:crypto')
    expect(task.sample.sha256).toBe(createHash('sha256').update(data).digest('hex'))

    // A download: the remote's pcap of that task, with its headers.
    const { writeFileSync } = await import('node:fs')
    const pcap = Buffer.alloc(70_000, 7)
    writeFileSync(`${remote.analysisDir(task_id)}/dump.pcap`, pcap)
    const dl = await fetch(proxy(`/pcap/get/${task_id}`))
    expect(dl.status).toBe(200)
    expect(dl.headers.get('content-length')).toBe(String(pcap.length))
    expect(dl.headers.get('content-disposition')).toMatch(/attachment/)
    expect(Buffer.from(await dl.arrayBuffer()).equals(pcap)).toBe(true)
    // Remote errors pass through as they are.
    const missing = await fetch(proxy('/tasks/view/999999'))
    expect(missing.status).toBe(404)
    expect(await missing.json()).toMatchObject({ message: 'Task not found' })
  })

  it('passes server-sent events through live, and closes the remote stream when the page does', async () => {
    const listeners = () => remote.service.events!.listenerCount('task')
    const before = listeners()
    const ctl = new AbortController()
    const res = await fetch(proxy('/events'), { signal: ctl.signal })
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const reader = res.body!.getReader()
    let text = ''
    const decoder = new TextDecoder()
    // The stream is open before the task exists: the event must arrive while it stays open.
    const submitted = remote.post('/tasks/create/url', new URLSearchParams({ url: 'http://proxied.example/' }), { authorization: `Bearer ${TOKEN}` })
    const deadline = Date.now() + 10_000
    while (!text.includes('proxied.example') && Date.now() < deadline) {
      const { value, done } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
    expect((await submitted).status).toBe(200)
    expect(text).toMatch(/event: task\ndata: .*proxied\.example/)
    expect(listeners()).toBe(before + 1)
    ctl.abort()
    const until = Date.now() + 5000
    while (listeners() !== before && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
    expect(listeners()).toBe(before)
  })

  it('closes the remote exchange when the page gives up before the remote has answered', async () => {
    // A remote that accepts the request and never answers: the page aborts after 200 ms.
    let opened = 0
    let closed = 0
    const slow = await server((req, res) => {
      if (req.url === '/cuckoo/status') { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ version: '2.0.7', hostname: 'slow' })); return }
      opened++
      req.socket.once('close', () => closed++)
    })
    try {
      const c = await save('slow lab', slow.url)
      const ctl = new AbortController()
      const pending = fetch(`${local.url}/aviary/connections/${c.id}/proxy/tasks/list`, { signal: ctl.signal }).catch(() => 'aborted')
      const until = Date.now() + 5000
      while (opened === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
      expect(opened).toBe(1)
      ctl.abort()
      expect(await pending).toBe('aborted')
      // Before the fix the remote exchange stayed open until the 120 s idle timeout.
      while (closed === 0 && Date.now() < until + 5000) await new Promise((r) => setTimeout(r, 20))
      expect(closed).toBe(1)
    } finally {
      await slow.close()
    }
  })

  it('answers 404 for an unknown connection and 502 naming the connection when the remote is down', async () => {
    expect((await fetch(`${local.url}/aviary/connections/4242/proxy/tasks/list`)).status).toBe(404)
    const doomed = await startHarness()
    const c = await save('doomed lab', doomed.url)
    await doomed.stop()
    for (const init of [{}, { method: 'POST', body: form({}, [{ name: 'x.bin', data: 'abc' }]) }]) {
      const res = await fetch(`${local.url}/aviary/connections/${c.id}/proxy/tasks/create/file`, init)
      expect(res.status).toBe(502)
      const body = (await res.json()) as { message: string }
      expect(body.message).toMatch(/^Connection "doomed lab" \(http:\/\/127\.0\.0\.1:\d+\): the remote server cannot be reached \(ECONNREFUSED\)$/)
    }
  })

  it('streams a 1 GiB upload with flat memory and its Content-Length kept', async () => {
    const SIZE = 1024 ** 3
    let received = 0
    let length: string | undefined
    const sink = await server((req, res) => {
      if (req.url === '/cuckoo/status') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"version": "sink"}')
      length = req.headers['content-length']
      req.on('data', (c: Buffer) => { received += c.length })
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received })))
    })
    try {
      const c = await save('sink', sink.url)
      global.gc?.()
      const base = process.memoryUsage().rss
      let peak = base
      const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 50)
      const chunk = Buffer.alloc(1024 * 1024, 0x41)
      const answer = await new Promise<string>((resolve, reject) => {
        const req = http.request(`${local.url}/aviary/connections/${c.id}/proxy/tasks/create/file`, {
          method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(SIZE) }
        }, (res) => {
          let body = ''
          res.on('data', (d) => { body += d })
          res.on('end', () => resolve(body))
        })
        req.on('error', reject)
        let sent = 0
        const pump = () => {
          while (sent < SIZE) {
            sent += chunk.length
            if (!req.write(chunk)) return void req.once('drain', pump)
          }
          req.end()
        }
        pump()
      })
      clearInterval(sampler)
      expect(JSON.parse(answer)).toEqual({ received: SIZE })
      expect(length).toBe(String(SIZE))
      // Client, proxy and sink share this process: all three together stay far below the size.
      console.log(`1 GiB through the proxy: peak RSS growth ${Math.round((peak - base) / 1024 ** 2)} MiB`)
      expect(peak - base).toBeLessThan(150 * 1024 * 1024)
    } finally {
      await sink.close()
    }
  }, 120_000)
})

describe('from the desktop renderer (app://aviary, a cross-origin page the service allows)', () => {
  it('may edit and delete connections: the preflight allows PUT and DELETE', async () => {
    const desk = await startHarness({ allowedOrigins: ['app://aviary'] })
    try {
      for (const method of ['PUT', 'DELETE']) {
        const res = await fetch(`${desk.url}/aviary/connections/1`, {
          method: 'OPTIONS', headers: { origin: 'app://aviary', 'access-control-request-method': method, 'access-control-request-headers': 'content-type' }
        })
        expect(res.status).toBe(204)
        expect(res.headers.get('access-control-allow-origin')).toBe('app://aviary')
        expect(res.headers.get('access-control-allow-methods')).toContain(method)
      }
    } finally {
      await desk.stop()
    }
  })
})
