// The `app://aviary/` scheme that serves the built renderer (out/renderer) to the window.
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { net, protocol } from 'electron'
import { APP_HOST, APP_SCHEME } from './renderer-location'

// Effective here, unlike in the page's <meta> CSP, where frame-ancestors is ignored.
const FRAME_POLICY = "frame-ancestors 'none'"

/** Must run before the app is ready. */
export function registerAppScheme(): void {
  protocol.registerSchemesAsPrivileged([
    // standard: a tuple origin (app://aviary) and relative URLs; secure: a secure context.
    // Not corsEnabled: that would let other origins read app:// responses without any ACAO.
    { scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } }
  ])
}

/** Serves files under `root` (read-only, GET only, no way out of `root`). */
export function serveRenderer(root: string): void {
  const base = path.resolve(root)
  protocol.handle(APP_SCHEME, async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return plain(405, 'Method Not Allowed')
    const file = resolveRequest(base, request.url)
    const res = file ? await net.fetch(pathToFileURL(file).toString()).catch(() => null) : null
    if (!res?.ok) return plain(404, 'Not Found')
    const headers = new Headers(res.headers)
    headers.set('Content-Security-Policy', FRAME_POLICY)
    headers.set('X-Content-Type-Options', 'nosniff')
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers })
  })
}

function resolveRequest(base: string, url: string): string | null {
  let pathname: string
  try {
    const u = new URL(url)
    if (u.host !== APP_HOST) return null
    pathname = decodeURIComponent(u.pathname)
  } catch {
    return null
  }
  if (pathname.includes('\0')) return null
  const file = path.resolve(base, `.${pathname === '/' ? '/index.html' : pathname}`)
  const rel = path.relative(base, file)
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? file : null
}

const plain = (status: number, text: string): Response =>
  new Response(text, { status, headers: { 'Content-Type': 'text/plain; charset=utf-8' } })
