// Request guards: the optional Bearer token (Cuckoo 2.0.7's api_token), refusal of requests a
// web page makes on the analyst's behalf (the API changes state on GET, as Cuckoo's did, so a
// cross-site <img> or form must not reach it), and protective response headers.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { send } from './error-handler'
import { ErrorCodes } from '../../shared/errors'
import { SESSION_PATH, hasValidSession, type SessionStore } from './session'

export interface SecurityOptions {
  apiToken?: string | undefined
  /** Origins (scheme://host:port) allowed to call from a browser besides the service itself. */
  allowedOrigins?: string[] | undefined
  /** Requests for public files (the UI's), which need neither the token nor a same-origin page. */
  isPublic?: ((method: string, url: string | undefined) => boolean) | undefined
  /** Browser sessions (session.ts): a valid `aviary_session` cookie stands for the token. */
  sessions?: SessionStore | undefined
}

const digest = (s: string) => createHash('sha256').update(s).digest()

export function installSecurity(app: FastifyInstance, opts: SecurityOptions): void {
  const expected = opts.apiToken ? digest(`Bearer ${opts.apiToken}`) : null
  const allowed = new Set(opts.allowedOrigins ?? [])

  // Hooks run on every request: synchronous, no allocations beyond what a check needs.
  app.addHook('onRequest', (request, reply, done) => {
    // Static files change nothing, so a link from elsewhere may open the UI; its API calls are checked.
    if (opts.isPublic?.(request.method, request.url)) return done()
    const origin = request.headers.origin
    const site = request.headers['sec-fetch-site']
    if (origin !== undefined || site !== undefined) {
      const refusal = browserRefusal(origin, site, request.headers.host, allowed)
      if (refusal) return void send(reply, 403, refusal, ErrorCodes.FORBIDDEN)
      if (origin && allowed.has(origin)) {
        // The desktop renderer (an allowed origin) may read responses and send the token.
        reply.header('Access-Control-Allow-Origin', origin)
        reply.header('Vary', 'Origin')
        if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
          return void reply.code(204).headers(PREFLIGHT).send()
        }
      }
    }
    // Signing in needs no token (that is what it is for); the origin checks above still apply.
    if (expected && request.routeOptions.url !== SESSION_PATH) {
      const header = request.headers.authorization
      if (typeof header !== 'string' || !timingSafeEqual(digest(header), expected)) {
        if (!opts.sessions || !hasValidSession(opts.sessions, request.headers.cookie)) {
          reply.header('WWW-Authenticate', 'Bearer')
          return void send(reply, 401, "Authentication in the form of an 'Authorization: Bearer <TOKEN>' header is required", ErrorCodes.UNAUTHORIZED)
        }
        // CSRF: a browser attaches the cookie by itself, so a cookie is weaker than the header.
        // SameSite=Strict keeps it off every request a page of another site starts (links,
        // forms, <img>, fetch), and the checks above refuse a foreign Origin or a cross-site
        // Sec-Fetch-Site on every method, GETs included (Cuckoo's API changes state on GET).
        // Together that is enough; as a last line, a cookie never authorises an unsafe method
        // from any origin but the service's own, not even an allowed one (the desktop renderer
        // sends the token, not a cookie).
        if (!SAFE_METHODS.has(request.method) && origin !== undefined && !sameOrigin(origin, request.headers.host)) {
          return void send(reply, 403, 'A session cookie is accepted only from pages of this service', ErrorCodes.FORBIDDEN)
        }
      }
    }
    done()
  })

  app.addHook('onSend', (_request, reply, payload, done) => {
    const cache = reply.getHeader('Cache-Control')
    reply.headers(PROTECTIVE)
    // The UI's hashed assets say they are immutable; everything else is revalidated.
    if (cache !== undefined) reply.header('Cache-Control', cache)
    // Reports describe malware: whatever HTML they hold runs in an opaque, script-less sandbox.
    if (!reply.hasHeader('Content-Security-Policy')) reply.header('Content-Security-Policy', CSP)
    done(null, payload)
  })
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
const PROTECTIVE = {
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-cache',
  'Referrer-Policy': 'no-referrer'
}
const CSP = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'none'"
const PREFLIGHT = {
  // PUT and DELETE: saved connections are edited from the desktop renderer, and its proxy passes any method.
  'Access-Control-Allow-Methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, Range',
  'Access-Control-Max-Age': '600'
}

/** Why a request from a web page is refused, or null when it may proceed. */
function browserRefusal(origin: string | undefined, site: string | string[] | undefined, host: string | undefined, allowed: Set<string>): string | null {
  if (origin !== undefined && !allowed.has(origin) && !sameOrigin(origin, host)) {
    return 'Cross-origin requests are refused; call the API from a client, not a web page'
  }
  if ((site === 'cross-site' || site === 'same-site') && !(origin && allowed.has(origin))) {
    return 'Cross-site requests are refused; call the API from a client, not a web page'
  }
  return null
}

function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined || !/^https?:\/\//.test(origin)) return false
  try {
    return new URL(origin).host === host
  } catch {
    return false
  }
}
