// Signing in from a browser when the service requires an API token (`--api-token`). The UI at `/`
// loads without the token, but a page cannot put an Authorization header on EventSource, <img> or
// <a download>; so POST /aviary/session trades the token for an HttpOnly cookie that the browser
// sends with every request to this origin, and security.ts takes it in place of the Bearer header.
//
// The cookie holds a random session id kept in memory with an expiry, not an HMAC of anything:
// - sign-out (DELETE) really ends the session on the server; a signed cookie would stay valid
//   until restart unless a deny list were kept, which is server state again;
// - nothing derived from the token leaves the process, and a restart forgets every session, so a
//   cookie from an earlier process start is refused;
// - the ids are 256 random bits, so guessing one is no easier than guessing the token.
// Ids are stored by their SHA-256, so the lookup's timing says nothing about a stored id.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ErrorBody } from '../../shared/api/schemas'
import { SessionState } from '../../shared/api/ui-schemas'
import { ErrorCodes } from '../../shared/errors'
import { send } from './error-handler'

export const SESSION_COOKIE = 'aviary_session'
export const SESSION_PATH = '/aviary/session'
/** A working day and then some: the analyst signs in again the next morning. */
const TTL_MS = 12 * 60 * 60 * 1000
/** Sign-ins are rare; the cap only keeps a client that signs in in a loop from growing memory. */
const MAX_SESSIONS = 1000

const sha256 = (s: string) => createHash('sha256').update(s).digest()

export class SessionStore {
  /** sha256(id) as hex → expiry (ms since the epoch); Map order is creation order. */
  private readonly sessions = new Map<string, number>()

  constructor(readonly ttlMs = TTL_MS, private readonly max = MAX_SESSIONS, private readonly now: () => number = Date.now) {}

  /** A new session id (base64url, 43 characters). */
  create(): string {
    if (this.sessions.size >= this.max) this.prune()
    // Still full of live sessions: the oldest goes.
    while (this.sessions.size >= this.max) this.sessions.delete(this.sessions.keys().next().value!)
    const id = randomBytes(32).toString('base64url')
    this.sessions.set(sha256(id).toString('hex'), this.now() + this.ttlMs)
    return id
  }

  valid(id: string | undefined): boolean {
    if (!id) return false
    const key = sha256(id).toString('hex')
    const expiry = this.sessions.get(key)
    if (expiry === undefined) return false
    if (expiry > this.now()) return true
    this.sessions.delete(key)
    return false
  }

  revoke(id: string | undefined): void {
    if (id) this.sessions.delete(sha256(id).toString('hex'))
  }

  get size(): number {
    return this.sessions.size
  }

  private prune(): void {
    const now = this.now()
    for (const [key, expiry] of this.sessions) if (expiry <= now) this.sessions.delete(key)
  }
}

/**
 * The values of our cookie in a Cookie header. Written by hand: the project has no cookie library
 * among its dependencies, and reading one cookie of our own naming (a base64url value) needs no
 * decoding or quoting rules. A browser may send the name twice (another path's cookie): all count.
 */
export function sessionIdsOf(header: string | undefined): string[] {
  if (!header) return []
  const out: string[] = []
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) out.push(part.slice(eq + 1).trim())
  }
  return out
}

/** Whether a request carries a live session cookie of this process. */
export function hasValidSession(sessions: SessionStore, cookieHeader: string | undefined): boolean {
  return sessionIdsOf(cookieHeader).some((id) => sessions.valid(id))
}

function cookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : ''
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}${secure}`
}

const SignInBody = Type.Object({
  token: Type.Optional(Type.String({ writeOnly: true, maxLength: 4096, description: 'the API token the service was started with', examples: ['s3cret'] }))
})
const NoContent = Type.Null({ description: 'done; no body' })
const tags = ['session']

/** GET, POST and DELETE /aviary/session. They need no token (security.ts lets them through), but
 *  the same-origin checks hold, so a foreign page cannot sign a browser in or out. */
export const sessionRoutes = (apiToken: string | undefined, sessions: SessionStore): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const expected = apiToken ? sha256(apiToken) : null
  const noStore = (reply: FastifyReply) => reply.header('Cache-Control', 'no-store')

  app.get(SESSION_PATH, {
    schema: { tags, summary: 'Whether a token is required and whether this browser is signed in', response: { 200: SessionState } }
  }, async (request, reply) => {
    noStore(reply)
    return { token_required: expected !== null, signed_in: hasValidSession(sessions, request.headers.cookie) }
  })

  app.post(SESSION_PATH, {
    schema: {
      tags, summary: 'Sign a browser in: the API token for an HttpOnly session cookie (the UI uses it)',
      consumes: ['application/json', 'application/x-www-form-urlencoded'],
      body: SignInBody, response: { 204: NoContent, 400: ErrorBody, 401: ErrorBody }
    }
  }, async (request, reply) => {
    noStore(reply)
    // No token configured: every request is already allowed, and a cookie would mean nothing.
    if (!expected) return reply.code(204).send(null)
    const token = request.body?.token
    if (!token) return send(reply, 400, 'token: required (the API token the service was started with)', ErrorCodes.BAD_REQUEST)
    // Digests have equal lengths, so the comparison takes the same time whatever the guess.
    if (!timingSafeEqual(sha256(token), expected)) return send(reply, 401, 'token: not the API token of this service', ErrorCodes.UNAUTHORIZED)
    return reply.code(204).header('Set-Cookie', cookie(request, sessions.create(), Math.floor(sessions.ttlMs / 1000))).send(null)
  })

  app.delete(SESSION_PATH, {
    schema: { tags, summary: 'Sign a browser out: ends its session and clears the cookie', response: { 204: NoContent } }
  }, async (request, reply) => {
    for (const id of sessionIdsOf(request.headers.cookie)) sessions.revoke(id)
    noStore(reply)
    return reply.code(204).header('Set-Cookie', cookie(request, '', 0)).send(null)
  })
}
