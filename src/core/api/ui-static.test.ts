// The UI served at `/` by the service, over a real socket: its CSP and caching, loading without
// the API token, no path out of its folder, and a page saying how to build it when it is absent.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/service-harness'

const SECRET = 'top-secret-outside-the-ui'
let root: string
let h: Harness

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'aviary-ui-'))
  const ui = path.join(root, 'ui')
  mkdirSync(path.join(ui, 'assets'), { recursive: true })
  writeFileSync(path.join(ui, 'index.html'), '<!doctype html><script type="module" src="./assets/index-AbCd1234.js"></script>')
  writeFileSync(path.join(ui, 'assets', 'index-AbCd1234.js'), 'console.log("ui")')
  writeFileSync(path.join(ui, 'assets', 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>')
  writeFileSync(path.join(ui, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"><rect width="1" height="1"/></svg>')
  writeFileSync(path.join(ui, 'assets', '.env'), SECRET)
  writeFileSync(path.join(root, 'secret.txt'), SECRET)
  h = await startHarness({ uiDir: ui, apiToken: 'tok' })
})
afterAll(async () => {
  await h?.stop()
  rmSync(root, { recursive: true, force: true })
})

/** A raw GET: fetch would normalise `..` away before sending, an attacker's client does not. */
function rawGet(url: string, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url + p, (res) => {
      let body = ''
      res.on('data', (d) => { body += d })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    }).on('error', reject)
  })
}

describe('the UI at /', () => {
  it('serves index.html with a strict CSP, without the API token', async () => {
    const res = await fetch(`${h.url}/`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await res.text()).toContain('./assets/index-AbCd1234.js')
    const csp = res.headers.get('content-security-policy')!
    for (const d of ["default-src 'self'", "connect-src 'self'", "img-src 'self' data: blob:", "style-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]) {
      expect(csp).toContain(d)
    }
    expect(csp).not.toContain('unsafe-inline')
    expect(csp).not.toContain('sandbox')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expect((await fetch(`${h.url}/index.html`, { method: 'HEAD' })).status).toBe(200)
    // The API still needs the token.
    expect((await fetch(`${h.url}/tasks/list`)).status).toBe(401)
    expect((await fetch(`${h.url}/tasks/list`, { headers: { authorization: 'Bearer tok' } })).status).toBe(200)
  })

  it('serves hashed assets with a long cache, others revalidated', async () => {
    const js = await fetch(`${h.url}/assets/index-AbCd1234.js`)
    expect(js.status).toBe(200)
    expect(js.headers.get('content-type')).toMatch(/javascript/)
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(js.headers.get('x-content-type-options')).toBe('nosniff')
    expect(await js.text()).toBe('console.log("ui")')
    const svg = await fetch(`${h.url}/assets/logo.svg`)
    expect(svg.headers.get('cache-control')).toBe('no-cache')
    expect(svg.headers.get('content-security-policy')).toContain("default-src 'self'")
  })

  it('answers /favicon.ico and /favicon.svg with the UI\'s icon, without the API token, built or not', async () => {
    const bare = await startHarness({ uiDir: null })
    try {
      for (const base of [h.url, bare.url]) {
        for (const p of ['/favicon.ico', '/favicon.svg']) {
          const res = await fetch(base + p)
          expect(res.status, p).toBe(200)
          expect(res.headers.get('content-type'), p).toMatch(/^image\/svg\+xml/)
          expect(await res.text(), p).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
        }
      }
      // The build's own icon when there is one.
      expect(await (await fetch(`${h.url}/favicon.svg`)).text()).toBe(readFileSync(path.join(root, 'ui', 'favicon.svg'), 'utf8'))
    } finally {
      await bare.stop()
    }
  })

  it('opens from a link on another site, whose API calls are still refused', async () => {
    expect((await fetch(`${h.url}/`, { headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(200)
    const api = await fetch(`${h.url}/tasks/list`, { headers: { 'sec-fetch-site': 'cross-site', authorization: 'Bearer tok' } })
    expect(api.status).toBe(403)
  })

  it('lets no path out of its folder', async () => {
    for (const p of [
      '/assets/../../secret.txt', '/assets/%2e%2e/%2e%2e/secret.txt', '/assets/..%2f..%2fsecret.txt', '/assets/%2e%2e%2f%2e%2e%2fsecret.txt',
      '/assets/..\\..\\secret.txt', '/assets/.env', '/assets/%00', '/assets/', '/assets/missing.js', '/secret.txt', '/../secret.txt'
    ]) {
      const r = await rawGet(h.url, p)
      expect(r.status, p).toBeGreaterThanOrEqual(400)
      expect(r.status, p).toBeLessThan(500)
      expect(r.body, p).not.toContain(SECRET)
    }
  })

  it('explains how to build the UI when it is not built', async () => {
    const bare = await startHarness({ uiDir: null })
    try {
      const res = await fetch(`${bare.url}/`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/html/)
      expect(await res.text()).toContain('npm run build')
      expect((await fetch(`${bare.url}/assets/index.js`)).status).toBe(404)
    } finally {
      await bare.stop()
    }
  })

  const built = path.resolve('out/renderer/index.html')
  it.skipIf(!existsSync(built))('serves the real build of the renderer by default, every asset it names included', async () => {
    const svc = await startHarness()
    try {
      const html = await (await fetch(`${svc.url}/`)).text()
      expect(html).toBe(readFileSync(built, 'utf8'))
      const assets = [...html.matchAll(/(?:src|href)="\.?(\/assets\/[^"]+)"/g)].map((m) => m[1]!)
      expect(assets.length).toBeGreaterThan(0)
      for (const a of assets) {
        const res = await fetch(svc.url + a)
        expect(res.status, a).toBe(200)
        expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(path.resolve('out/renderer') + a)), a).toBe(true)
      }
    } finally {
      await svc.stop()
    }
  })
})
