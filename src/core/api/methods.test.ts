// A known path called with a method it does not have answers 405 with Flask's message and an
// Allow header; an unknown path stays a 404; HEAD keeps working on GET routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/service-harness'
import { METHOD_NOT_ALLOWED } from './error-handler'

let h: Harness
beforeAll(async () => {
  h = await startHarness()
  await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com' }))
})
afterAll(async () => h.stop())

async function call(method: string, p: string) {
  const res = await fetch(h.url + p, { method, ...(method === 'POST' || method === 'PUT' ? { body: '' } : {}) })
  const text = await res.text()
  return { status: res.status, allow: res.headers.get('allow'), type: res.headers.get('content-type'), text }
}

describe('wrong methods', () => {
  const cases: [string, string, string][] = [
    ['POST', '/tasks/list', 'GET, HEAD'],
    ['POST', '/v1/tasks/list/10', 'GET, HEAD'],
    ['DELETE', '/tasks/view/1', 'GET, HEAD'],
    ['PUT', '/v1/tasks/view/1', 'GET, HEAD'],
    ['POST', '/tasks/delete/1', 'GET, HEAD'],
    ['PATCH', '/cuckoo/status', 'GET, HEAD'],
    ['POST', '/v1/cuckoo/status/', 'GET, HEAD'], // trailing slashes are ignored for both answers
    ['GET', '/tasks/create/file', 'POST'],
    ['GET', '/v1/tasks/create/url', 'POST'],
    ['DELETE', '/tasks/create/submit', 'POST'],
    ['POST', '/files/view/md5/0123456789abcdef0123456789abcdef', 'GET, HEAD'],
    ['OPTIONS', '/tasks/list', 'GET, HEAD']
  ]
  for (const [method, p, allow] of cases) {
    it(`${method} ${p} is 405 with Allow: ${allow}`, async () => {
      const r = await call(method, p)
      expect(r.status).toBe(405)
      expect(r.allow).toBe(allow)
      expect(r.type).toMatch(/^application\/json/)
      expect(JSON.parse(r.text)).toEqual({ message: METHOD_NOT_ALLOWED, code: 'AVIARY_METHOD_NOT_ALLOWED' })
    })
  }

  it('keeps the route working with its own method', async () => {
    expect((await call('GET', '/tasks/list')).status).toBe(200)
    expect((await call('GET', '/v1/tasks/view/1')).status).toBe(200)
  })
})

describe('unknown paths', () => {
  for (const [method, p] of [['GET', '/no/such'], ['POST', '/no/such'], ['GET', '/tasks/list/1/2/3'], ['POST', '/v1/tasks/nothing'], ['GET', '/v2/tasks/list']]) {
    it(`${method} ${p} is a 404 JSON without Allow`, async () => {
      const r = await call(method!, p!)
      expect(r.status).toBe(404)
      expect(r.allow).toBeNull()
      expect(JSON.parse(r.text)).toMatchObject({ message: expect.stringMatching(/^No such endpoint/) })
    })
  }
})

describe('HEAD', () => {
  it('answers GET routes like GET, without a body', async () => {
    for (const p of ['/cuckoo/status', '/tasks/list', '/v1/tasks/view/1', '/openapi.json']) {
      const get = await fetch(h.url + p)
      const head = await fetch(h.url + p, { method: 'HEAD' })
      expect(head.status, p).toBe(get.status)
      expect(head.headers.get('content-type'), p).toBe(get.headers.get('content-type'))
      expect(await head.text(), p).toBe('')
    }
  })

  it('is refused on POST-only routes with the Allow header', async () => {
    const head = await fetch(`${h.url}/tasks/create/file`, { method: 'HEAD' })
    expect(head.status).toBe(405)
    expect(head.headers.get('allow')).toBe('POST')
  })
})
