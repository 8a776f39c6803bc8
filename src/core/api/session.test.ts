// Browser sessions over a real socket: the token traded for a cookie, the cookie standing for the
// token on plain GETs, the event stream and downloads, sign-out, a restart forgetting every
// session, and the cookie refused for unsafe calls from any origin but the service's own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, form, type Harness } from '../../../test/service-harness'
import { SESSION_COOKIE, SessionStore, sessionIdsOf } from './session'

const TOKEN = 'tok-for-sessions'
const bearer = { authorization: `Bearer ${TOKEN}` }
let h: Harness
let open: Harness

beforeAll(async () => {
  ;[h, open] = await Promise.all([startHarness({ apiToken: TOKEN, allowedOrigins: ['app://aviary'] }), startHarness()])
})
afterAll(async () => {
  await h?.stop()
  await open?.stop()
})

async function signIn(target: Harness, body: string | URLSearchParams = JSON.stringify({ token: TOKEN })): Promise<Response> {
  const headers: Record<string, string> = typeof body === 'string' ? { 'content-type': 'application/json' } : {}
  return fetch(`${target.url}/aviary/session`, { method: 'POST', body, headers })
}

/** `aviary_session=<id>` from a sign-in answer, as a browser would send it back. */
function cookieOf(res: Response): string {
  const set = res.headers.getSetCookie()
  expect(set).toHaveLength(1)
  return set[0]!.split(';')[0]!
}

describe('POST /aviary/session', () => {
  it('trades the right token for an HttpOnly, SameSite=Strict cookie that is not the token', async () => {
    const res = await signIn(h)
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')
    const set = res.headers.get('set-cookie')!
    expect(set).toMatch(new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_-]{43}; `))
    for (const attr of ['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200']) expect(set.split('; ')).toContain(attr)
    expect(set).not.toContain('Secure') // plain http here
    expect(set).not.toContain(TOKEN)
    expect(res.headers.get('cache-control')).toBe('no-store')
    // Each sign-in gets its own session.
    expect(cookieOf(await signIn(h))).not.toBe(cookieOf(res))
  })

  it('takes a form body too', async () => {
    const res = await signIn(h, new URLSearchParams({ token: TOKEN }))
    expect(res.status).toBe(204)
    expect((await h.json('/tasks/list', { cookie: cookieOf(res) })).status).toBe(200)
  })

  it('answers a wrong token with 401 JSON and no cookie, a missing one with 400 naming the field', async () => {
    const wrong = await signIn(h, JSON.stringify({ token: `${TOKEN}x` }))
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get('content-type')).toMatch(/^application\/json/)
    expect(((await wrong.json()) as { message: string }).message).toMatch(/^token: /)
    expect(wrong.headers.get('set-cookie')).toBeNull()
    for (const body of [JSON.stringify({}), JSON.stringify({ token: '' }), new URLSearchParams()]) {
      const res = await signIn(h, body)
      expect(res.status).toBe(400)
      expect(((await res.json()) as { message: string }).message).toMatch(/^token: required/)
    }
    const empty = await fetch(`${h.url}/aviary/session`, { method: 'POST' })
    expect(empty.status).toBe(400)
    const typed = await signIn(h, JSON.stringify({ token: ['a'] }))
    expect(typed.status).toBe(400)
    expect(((await typed.json()) as { message: string }).message).toContain('token')
    // An overlong token is refused without being repeated back (a secret: writeOnly).
    const long = await signIn(h, JSON.stringify({ token: `guess-${'x'.repeat(5000)}` }))
    expect(long.status).toBe(400)
    const longMessage = ((await long.json()) as { message: string }).message
    expect(longMessage).toMatch(/^token: /)
    expect(longMessage).not.toContain('guess-')
  })

  it('answers 204 without a cookie when the service needs no token', async () => {
    const res = await signIn(open)
    expect(res.status).toBe(204)
    expect(res.headers.get('set-cookie')).toBeNull()
    expect((await open.json('/aviary/session')).body).toEqual({ token_required: false, signed_in: false })
  })
})

describe('the session cookie', () => {
  let cookie: string
  let sha256: string

  beforeAll(async () => {
    cookie = cookieOf(await signIn(h))
    const created = await h.post('/tasks/create/file', form({}, [{ name: 'sample.exe', data: 'MZ session download' }]), bearer)
    expect(created.status).toBe(200)
    const view = await h.json<{ task: { sample: { sha256: string } } }>(`/tasks/view/${created.body.task_id as number}`, bearer)
    sha256 = view.body.task.sample.sha256
  })

  it('stands for the token on GETs; without it the API still answers 401', async () => {
    expect((await h.json('/tasks/list')).status).toBe(401)
    expect((await h.json('/tasks/list', { cookie: `${SESSION_COOKIE}=forged` })).status).toBe(401)
    const list = await h.json<{ tasks: unknown[] }>('/tasks/list', { cookie: `theme=dark; ${cookie}` })
    expect(list.status).toBe(200)
    expect(list.body.tasks).toHaveLength(1)
    expect((await h.json('/aviary/session', { cookie })).body).toEqual({ token_required: true, signed_in: true })
    expect((await h.json('/aviary/session')).body).toEqual({ token_required: true, signed_in: false })
  })

  it('opens the event stream (EventSource sends no header, only cookies)', async () => {
    const ctl = new AbortController()
    const res = await fetch(`${h.url}/events`, { headers: { cookie }, signal: ctl.signal })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    ctl.abort()
    await res.body?.cancel().catch(() => undefined)
    expect((await fetch(`${h.url}/events`)).status).toBe(401)
  })

  it('downloads a sample (what <a download> and <img> do)', async () => {
    const res = await h.get(`/files/get/${sha256}`, { cookie })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('MZ session download')
    expect((await h.get(`/files/get/${sha256}`)).status).toBe(401)
  })

  it('allows an unsafe call from the service\'s own page, refuses it from any other origin', async () => {
    const url = new URLSearchParams({ url: 'http://example.com/' })
    const own = await h.post('/tasks/create/url', url, { cookie, origin: h.url })
    expect(own.status).toBe(200)
    const noOrigin = await h.post('/tasks/create/url', url, { cookie })
    expect(noOrigin.status).toBe(200)
    const foreign = await h.post('/tasks/create/url', url, { cookie, origin: 'http://evil.example' })
    expect(foreign.status).toBe(403)
    // Even an origin allowed to call with the token (the desktop renderer) gets nothing from a cookie.
    const allowed = await h.post('/tasks/create/url', url, { cookie, origin: 'app://aviary' })
    expect(allowed.status).toBe(403)
    expect(allowed.body.message).toMatch(/session cookie/)
    expect((await h.post('/tasks/create/url', url, { ...bearer, origin: 'app://aviary' })).status).toBe(200)
    // Signing in from a foreign page is refused as well (no login CSRF).
    const res = await fetch(`${h.url}/aviary/session`, {
      method: 'POST', body: JSON.stringify({ token: TOKEN }), headers: { 'content-type': 'application/json', origin: 'http://evil.example' }
    })
    expect(res.status).toBe(403)
    expect(res.headers.get('set-cookie')).toBeNull()
    const tasks = await h.json<{ tasks: unknown[] }>('/tasks/list', bearer)
    expect(tasks.body.tasks).toHaveLength(4) // the sample and the three URLs accepted above
  })

  it('is refused after sign-out, and DELETE clears it in the browser', async () => {
    const mine = cookieOf(await signIn(h))
    expect((await h.get('/tasks/list', { cookie: mine })).status).toBe(200)
    const out = await fetch(`${h.url}/aviary/session`, { method: 'DELETE', headers: { cookie: mine } })
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toMatch(new RegExp(`^${SESSION_COOKIE}=; .*Max-Age=0`))
    expect((await h.get('/tasks/list', { cookie: mine })).status).toBe(401)
    // Other sessions are not affected.
    expect((await h.get('/tasks/list', { cookie })).status).toBe(200)
  })

  it('from an earlier start of the service is refused', async () => {
    const before = cookieOf(await signIn(h))
    await h.service.stop()
    // The same data directory, a new process start of the service (on a new port).
    const { url } = await h.service.start()
    expect((await fetch(`${url}/tasks/list`, { headers: { cookie: before } })).status).toBe(401)
    expect((await fetch(`${url}/tasks/list`, { headers: bearer })).status).toBe(200)
  })
})

describe('SessionStore', () => {
  it('expires sessions, and keeps at most its cap', () => {
    let now = 1_000
    const store = new SessionStore(60_000, 3, () => now)
    const a = store.create()
    expect(store.valid(a)).toBe(true)
    now += 60_000
    expect(store.valid(a)).toBe(false)
    const ids = [store.create(), store.create(), store.create(), store.create()]
    expect(store.size).toBe(3)
    expect(store.valid(ids[0])).toBe(false) // the oldest made room
    expect(ids.slice(1).every((id) => store.valid(id))).toBe(true)
    expect(store.valid(undefined)).toBe(false)
  })

  it('reads its cookie among others', () => {
    expect(sessionIdsOf(`a=1; ${SESSION_COOKIE}=x; ${SESSION_COOKIE}x=y; ${SESSION_COOKIE}=z`)).toEqual(['x', 'z'])
    expect(sessionIdsOf(undefined)).toEqual([])
  })
})
