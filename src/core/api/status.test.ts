// Status, machines, VPN, /exit, the Bearer token, browser guards and the OpenAPI description.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { AviaryService } from '../service'
import { form, startHarness, type Harness } from '../../../test/service-harness'

let h: Harness
const machines = {
  driver: 'kvm',
  resultserver: { ip: '192.168.122.1', port: 2042 },
  machines: [
    { name: 'win7', label: 'cuckoo1', ip: '192.168.122.101', tags: ['x64', 'office'], snapshot: 'clean' },
    { name: 'ubuntu', ip: '192.168.122.102', platform: 'linux', driver: 'virtualbox', resultserver_port: 2043 }
  ]
}

beforeAll(async () => {
  h = await startHarness({ machines })
  await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com' }))
})
afterAll(async () => h.stop())

describe('status', () => {
  for (const p of ['/cuckoo/status', '/v1/cuckoo/status', '/sandbox/status', '/v1/sandbox/status']) {
    it(`${p} answers the superset status object`, async () => {
      const { status, body } = await h.json<Record<string, any>>(p) // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(status).toBe(200)
      expect(body.tasks).toEqual({ total: 1, pending: 1, running: 0, completed: 0, reported: 0 })
      expect(body.machines).toEqual({ total: 2, available: 2 })
      expect(body.version).toMatch(/^\d+\.\d+\.\d+/)
      expect(body.protocol_version).toBe(1)
      expect(typeof body.hostname).toBe('string')
      for (const k of ['analyses', 'binaries', 'temporary']) {
        expect(body.diskspace[k].total).toBeGreaterThan(0)
        expect(body.diskspace[k].used + body.diskspace[k].free).toBe(body.diskspace[k].total)
      }
      expect(body.cpuload).toHaveLength(3)
      expect(Array.isArray(body.tools)).toBe(true)
      expect(body.tools).toContain('file')
    })
  }
})

describe('machines', () => {
  it('lists the configured machines with the Cuckoo fields', async () => {
    const { body } = await h.json<{ machines: Record<string, unknown>[] }>('/machines/list')
    expect(body.machines).toHaveLength(2)
    expect(body.machines[0]).toMatchObject({
      name: 'win7', label: 'cuckoo1', ip: '192.168.122.101', platform: 'windows', tags: ['x64', 'office'], locked: false,
      snapshot: 'clean', resultserver_ip: '192.168.122.1', resultserver_port: '2042', driver: 'kvm', status: null, interface: null
    })
    expect(body.machines[1]).toMatchObject({ name: 'ubuntu', label: 'ubuntu', platform: 'linux', driver: 'virtualbox', resultserver_port: '2043' })
  })

  it('views one machine by name', async () => {
    expect((await h.json<{ machine: { name: string } }>('/v1/machines/view/ubuntu')).body.machine.name).toBe('ubuntu')
    expect(await h.json('/machines/view/nope')).toMatchObject({ status: 404, body: { message: 'Machine not found' } })
  })

  it('refuses to start on a machines.json that is wrong, naming the field', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'aviary-bad-'))
    onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }))
    writeFileSync(path.join(dataDir, 'machines.json'), JSON.stringify({ machines: [{ name: 'a', ip: 'not-an-ip' }] }))
    await expect(new AviaryService({ dataDir, port: 0, logLevel: 'warn' }).start()).rejects.toThrow(/machines\.0\.ip/)
    writeFileSync(path.join(dataDir, 'machines.json'), '{ nope')
    await expect(new AviaryService({ dataDir, port: 0, logLevel: 'warn' }).start()).rejects.toThrow(/not valid JSON/)
  })
})

describe('vpn and exit', () => {
  it('says that no VPN is configured', async () => {
    expect(await h.json('/vpn/status')).toMatchObject({ status: 200, body: { vpns: {} } })
  })

  it('refuses /exit outside debug mode and stops the service in debug mode', async () => {
    expect(await h.json('/exit')).toMatchObject({ status: 403, body: { message: 'This call can only be used in debug mode' } })
    const debug = await startHarness({ debug: true })
    expect(await debug.json('/exit')).toMatchObject({ status: 200, body: { message: 'Server stopped' } })
    let closed = false
    for (let i = 0; i < 50 && !closed; i++) {
      closed = await fetch(debug.url + '/cuckoo/status').then(() => false, () => true)
      if (!closed) await new Promise((r) => setTimeout(r, 100))
    }
    expect(closed).toBe(true)
    await debug.stop()
  })
})

describe('Bearer token', () => {
  it('requires the token on every path when one is set', async () => {
    const secured = await startHarness({ apiToken: 's3cret' })
    try {
      for (const p of ['/cuckoo/status', '/tasks/list', '/no/such/path']) {
        const r = await secured.json<{ message: string }>(p)
        expect(r.status, p).toBe(401)
        expect(r.body.message).toBe("Authentication in the form of an 'Authorization: Bearer <TOKEN>' header is required")
        expect((await secured.json(p, { authorization: 'Bearer wrong' })).status).toBe(401)
      }
      expect((await secured.json('/cuckoo/status', { authorization: 'Bearer s3cret' })).status).toBe(200)
      const post = await secured.post('/tasks/create/url', new URLSearchParams({ url: 'http://a.com' }), { authorization: 'Bearer s3cret' })
      expect(post.status).toBe(200)
    } finally {
      await secured.stop()
    }
  })

  it('ignores an Authorization header when no token is set', async () => {
    expect((await h.json('/cuckoo/status', { authorization: 'Bearer anything' })).status).toBe(200)
  })
})

describe('browser guards and headers', () => {
  it('refuses requests a foreign web page makes', async () => {
    expect((await h.json('/tasks/delete/1', { origin: 'https://evil.example' })).status).toBe(403)
    expect((await h.json('/tasks/delete/1', { 'sec-fetch-site': 'cross-site' })).status).toBe(403)
    const post = await h.post('/tasks/create/url', form({ url: 'http://x.com' }), { origin: 'null' })
    expect(post.status).toBe(403)
    expect((await h.json('/tasks/view/1', { 'sec-fetch-site': 'none' })).status).toBe(200)
  })

  it('sets protective headers', async () => {
    const res = await h.get('/cuckoo/status')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/)
    expect(res.headers.get('cache-control')).toBe('no-cache')
  })
})

describe('OpenAPI', () => {
  it('describes every route, with multipart uploads as binary', async () => {
    const { status, body } = await h.json<{ openapi: string; paths: Record<string, any> }>('/openapi.json') // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(status).toBe(200)
    expect(body.openapi).toBe('3.1.0')
    for (const p of ['/tasks/create/file', '/tasks/create/url', '/tasks/create/submit', '/tasks/list/{limit}/{offset}', '/tasks/view/{id}',
      '/tasks/delete/{id}', '/tasks/reschedule/{id}/{priority}', '/tasks/reboot/{id}', '/tasks/rereport/{id}', '/tasks/report/{id}/{format}',
      '/tasks/screenshots/{id}/{screenshot}', '/memory/list/{id}', '/memory/get/{id}/{pid}', '/files/view/md5/{md5}', '/files/get/{sha256}',
      '/pcap/get/{task}', '/machines/list', '/machines/view/{name}', '/cuckoo/status', '/sandbox/status', '/vpn/status', '/exit', '/v1/tasks/list']) {
      expect(body.paths[p], p).toBeDefined()
    }
    const upload = body.paths['/tasks/create/file'].post.requestBody.content['multipart/form-data'].schema
    expect(upload.properties.file).toMatchObject({ type: 'string', format: 'binary' })
    expect(upload.properties.priority).toMatchObject({ type: 'integer', minimum: 1, maximum: 3 })
    expect(upload.required).toContain('file')
  })
})

describe('CORS for the desktop renderer', () => {
  it('answers an allowed origin with CORS headers and preflights, and no one else', async () => {
    const app = await startHarness({ allowedOrigins: ['app://aviary'], apiToken: 't' })
    try {
      const pre = await fetch(app.url + '/tasks/list', {
        method: 'OPTIONS', headers: { origin: 'app://aviary', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' }
      })
      expect(pre.status).toBe(204)
      expect(pre.headers.get('access-control-allow-origin')).toBe('app://aviary')
      expect(pre.headers.get('access-control-allow-headers')).toMatch(/Authorization/)
      const res = await app.get('/tasks/list', { origin: 'app://aviary', 'sec-fetch-site': 'cross-site', authorization: 'Bearer t' })
      expect(res.status).toBe(200)
      expect(res.headers.get('access-control-allow-origin')).toBe('app://aviary')
      const other = await app.get('/tasks/list', { origin: 'app://evil', authorization: 'Bearer t' })
      expect(other.status).toBe(403)
      expect(other.headers.get('access-control-allow-origin')).toBeNull()
    } finally {
      await app.stop()
    }
  })
})
