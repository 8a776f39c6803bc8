// Integer path parameters take decimal digits only, as Flask's int converter does: anything else
// (exponents, signs, spaces, hex, fractions, Infinity) is no route, 404 JSON, and so is a digit
// string beyond 2^53. The routes are found from /openapi.json, so new ones are checked too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/service-harness'

let h: Harness
const intRoutes: string[] = []
beforeAll(async () => {
  h = await startHarness()
  await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com' }))
  const doc = (await h.json<{ paths: Record<string, Record<string, { parameters?: { in: string; name: string; schema?: { type?: string } }[] }>> }>('/openapi.json')).body
  for (const [p, ops] of Object.entries(doc.paths)) {
    const get = ops.get
    if (!get) continue
    const ints = (get.parameters ?? []).filter((q) => q.in === 'path' && q.schema?.type === 'integer').map((q) => q.name)
    for (const name of ints) {
      // the other path parameters get a harmless valid value
      intRoutes.push(p.replace(`{${name}}`, ':x').replace(/\{[^}]+\}/g, (m) => (m === '{pid}' ? '1234-1' : m === '{screenshot}' ? '0001' : m === '{format}' ? 'json' : '1')))
    }
  }
})
afterAll(async () => h.stop())

const BAD = ['1e309', '1e5', '1.0', '+1', '%201', '1%20', '0x1', '-1', 'Infinity', 'NaN', '1_000', '١', '9007199254740993', '99999999999999999999999']

describe('integer path parameters', () => {
  it('finds the id routes of both generations', () => {
    for (const p of ['/tasks/view/:x', '/v1/tasks/view/:x', '/tasks/report/:x', '/tasks/report/:x/json', '/pcap/get/:x', '/tasks/screenshots/:x',
      '/memory/list/:x', '/memory/get/:x/1234-1', '/tasks/summary/:x', '/tasks/delete/:x', '/tasks/reschedule/:x', '/tasks/reschedule/1/:x',
      '/tasks/reboot/:x', '/tasks/rereport/:x', '/tasks/timeline/:x', '/files/view/id/:x', '/tasks/sample/:x', '/tasks/list/:x', '/tasks/list/1/:x']) {
      expect(intRoutes, p).toContain(p)
    }
  })

  it('answers 404 JSON for anything but decimal digits, on every such route', async () => {
    for (const route of intRoutes) {
      for (const v of BAD) {
        const p = route.replace(':x', v)
        const res = await h.get(p)
        const text = await res.text()
        expect(res.status, p).toBe(404)
        expect(res.headers.get('content-type'), p).toMatch(/^application\/json/)
        expect((JSON.parse(text) as { message: string }).message, p).toMatch(/must be decimal digits/)
      }
    }
  })

  it('still takes plain digits, leading zeros included (Flask does)', async () => {
    expect((await h.json('/tasks/view/1')).status).toBe(200)
    expect((await h.json('/tasks/view/0001')).status).toBe(200)
    expect((await h.json('/v1/tasks/view/1')).status).toBe(200)
    expect((await h.json('/tasks/view/9007199254740991')).body).toMatchObject({ message: 'Task not found' })
    expect((await h.json('/tasks/list/1/0')).status).toBe(200)
    // a range the schema refuses is still its 400 naming the field
    expect((await h.json('/tasks/list/2000000')).body.message).toMatch(/^limit:/)
  })

  it('keeps HEAD working and applies the same rule to it', async () => {
    expect((await fetch(`${h.url}/tasks/view/1`, { method: 'HEAD' })).status).toBe(200)
    expect((await fetch(`${h.url}/tasks/view/1e309`, { method: 'HEAD' })).status).toBe(404)
  })
})

describe('integer query and body fields', () => {
  it('refuse exponents, hex, fractions and Infinity with the 400 naming the field (Ajv would coerce them)', async () => {
    for (const v of ['1e309', '1e2', '0x1', '1.0', ' 1', '99999999999999999999']) {
      const q = await h.json<{ message: string }>(`/tasks/list?completed_after=${encodeURIComponent(v)}`)
      expect(q.status, v).toBe(400)
      expect(q.body.message, v).toMatch(/^completed_after: /)
      const b = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com', timeout: v }))
      expect(b.status, v).toBe(400)
      expect(b.body.message, v).toMatch(/^timeout: /)
    }
    const json = await h.post('/tasks/create/url', JSON.stringify({ url: 'http://example.com', priority: 1e300 }), { 'content-type': 'application/json' })
    expect(json.body.message).toMatch(/^priority: /)
    expect((await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com', timeout: '60' }))).status).toBe(200)
  })
})
