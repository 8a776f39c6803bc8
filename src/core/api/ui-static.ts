// The UI at `/`: the built renderer (electron-vite's out/renderer) served by the service itself,
// so a plain browser gets the same app as the desktop window, from the API's own origin.
// @fastify/send does the file work: it refuses paths that leave the folder, handles
// conditional requests and sets the content type.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import send from '@fastify/send'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { send as sendError } from './error-handler'
import { ErrorCodes } from '../../shared/errors'

/** Scripts and styles from the service only, and calls to it only. The build needs no inline
 *  style or script: React sets style attributes through the CSSOM, which style-src does not
 *  govern, and Vite emits the CSS as a file. */
export const UI_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self' data: blob:",
  "font-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"
].join('; ')
const HELP_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
/** Vite names built assets `<name>-<hash>.<ext>`: such a file never changes under its name. */
const HASHED = /-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$/
const IMMUTABLE = 'public, max-age=31536000, immutable'

/** Requests for the UI's files, which load without the API token (they are public assets). */
export function isPublicUiRequest(method: string, url: string | undefined): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false
  const p = (url ?? '').split('?')[0]!
  return p === '/' || p === '/index.html' || p.startsWith('/assets/') || p === '/favicon.ico' || p === '/favicon.svg'
}

/** The icon when the UI is not built (the build's own is src/renderer/public/favicon.svg): browsers ask for one on every page. */
const FALLBACK_ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0369a1"/></svg>\n'

/** out/renderer next to the running bundle (out/cli, out/main, out/main/chunks), else (the
 *  sources run as they are, in tests) the checkout's out/renderer; found from this file, never
 *  from the working directory, so `aviary serve` serves its own UI wherever it is started.
 *  Null when the UI is not built. */
export function defaultUiDir(): string | null {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const candidates = [path.join(here, '..', 'renderer'), path.join(here, '..', '..', 'renderer'), path.join(here, '..', '..', '..', 'out', 'renderer')]
  // src/renderer has an index.html too, but no built assets: require both.
  return candidates.find((dir) => existsSync(path.join(dir, 'index.html')) && existsSync(path.join(dir, 'assets'))) ?? null
}

export const uiStaticRoutes = (uiDir: string | null): FastifyPluginAsync => async (app) => {
  const hide = { schema: { hide: true } }
  const root = uiDir ? path.resolve(uiDir) : null

  const index = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!root || !existsSync(path.join(root, 'index.html'))) {
      return reply.type('text/html; charset=utf-8').header('Content-Security-Policy', HELP_CSP).send(NOT_BUILT)
    }
    return serve(request, reply, root, '/index.html')
  }
  app.get('/', hide, index)
  app.get('/index.html', hide, index)
  // Browsers ask for /favicon.ico whatever the page links: the build's SVG icon answers both names.
  const icon = async (request: FastifyRequest, reply: FastifyReply) => {
    if (root && existsSync(path.join(root, 'favicon.svg'))) return serve(request, reply, root, '/favicon.svg')
    return reply.type('image/svg+xml').header('Cache-Control', 'no-cache').send(FALLBACK_ICON)
  }
  app.get('/favicon.ico', hide, icon)
  app.get('/favicon.svg', hide, icon)
  app.get('/assets/*', hide, async (request, reply) => {
    if (!root) return sendError(reply, 404, 'The UI is not built (npm run build)', ErrorCodes.NOT_FOUND)
    return serve(request, reply, root, (request.raw.url ?? '/').split('?')[0]!)
  })
}

async function serve(request: FastifyRequest, reply: FastifyReply, root: string, urlPath: string): Promise<FastifyReply> {
  const { statusCode, headers, stream } = await send(request.raw, urlPath, {
    root, index: false, dotfiles: 'deny', cacheControl: false, etag: true, lastModified: true, acceptRanges: false
  })
  // 403 is send's answer to a path that tries to leave the folder: no different from absent here.
  if (statusCode >= 400) {
    stream.destroy()
    return sendError(reply, 404, `No such file of the UI: ${urlPath.slice(0, 200)}`, ErrorCodes.NOT_FOUND)
  }
  reply.code(statusCode).headers(headers)
  reply.header('Cache-Control', HASHED.test(urlPath) ? IMMUTABLE : 'no-cache')
  reply.header('Content-Security-Policy', UI_CSP)
  return reply.send(stream)
}

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Aviary: the UI is not built</title></head>
<body>
<h1>Aviary</h1>
<p>The analysis API is running, but the web UI has not been built yet.</p>
<p>In the Aviary folder, run <code>npm run build</code>, then restart <code>aviary serve</code> and reload this page.</p>
<p>The API itself works: try <a href="/cuckoo/status">/cuckoo/status</a>.</p>
</body></html>
`
