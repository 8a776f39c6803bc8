// How the UI reaches an analysis service: the local one (its own origin, or the address the
// desktop bridge gives), or a saved remote connection through the local service's proxy
// (`/aviary/connections/<id>/proxy/...`), so the page never needs CORS and never sees a token.
// Cuckoo's routes and the task search are called through the shared client (client.ts here);
// fetchJson below is for the rest: Aviary's own routes, each call naming the route's response
// schema from src/shared/api, which types the answer and checks it when it arrives (an answer of
// another shape is an HttpError of status 0 that says what does not fit, shown where the page shows
// errors, never a wrong cast found later); and reports, asked with Type.Unknown() because their
// size and shape are the report views' to handle.
import type { Static, TSchema } from 'typebox'
import { resolveApiBaseUrl } from '../api-base'
import { AnswerShape, ApiClientError, decodeAnswer } from '../../../shared/api/client'

/** A refused or failed call: the shared client's error (status 0: no usable answer), whoever made the call. */
export { ApiClientError as HttpError }

let localBase: Promise<string> | null = null
/** Base URL of the local service (no trailing slash). */
export function localApiBase(): Promise<string> {
  localBase ??= resolveApiBaseUrl()
  return localBase
}

/** Points the UI at a given service (component tests point it at a real test instance). */
export function setLocalApiBase(url: string): void {
  localBase = Promise.resolve(url.replace(/\/+$/, ''))
}

/** Where a connection's API is: null = the local service. */
export type ConnectionId = number | null

/** Base URL of the API of a connection, as seen from the page. */
export async function apiBase(connection: ConnectionId): Promise<string> {
  const base = await localApiBase()
  return connection === null ? base : `${base}/aviary/connections/${connection}/proxy`
}

/** An absolute URL for a path of a connection's API (for links, images, downloads). */
export async function apiUrl(connection: ConnectionId, path: string): Promise<string> {
  return `${await apiBase(connection)}${path.startsWith('/') ? path : `/${path}`}`
}

async function errorOf(res: Response): Promise<ApiClientError> {
  let message = `HTTP ${res.status}`
  try {
    const body = (await res.json()) as { message?: unknown }
    if (typeof body.message === 'string') message = body.message
  } catch {
    // not JSON: keep the status line
  }
  return new ApiClientError(res.status, message)
}

const unauthorized = new Set<(connection: ConnectionId) => void>()
/** Calls `listener` on every 401 answer (the auth module then offers to sign in); returns its removal. */
export function onUnauthorized(listener: (connection: ConnectionId) => void): () => void {
  unauthorized.add(listener)
  return () => { unauthorized.delete(listener) }
}

/** The page's fetch for a connection: asks for JSON, and tells the sign-in listeners of a 401. */
export function pageFetch(connection: ConnectionId): typeof fetch {
  return async (input, init = {}) => {
    const headers = new Headers(init.headers)
    if (!headers.has('Accept')) headers.set('Accept', 'application/json')
    const res = await fetch(input, { ...init, headers })
    if (res.status === 401) for (const listener of unauthorized) listener(connection)
    return res
  }
}

/**
 * Fetches JSON from a connection's API, checked against `answer` (the route's response schema);
 * non-2xx answers throw HttpError with the server's message, and a 2xx answer that is not JSON or
 * does not fit `answer` an HttpError of status 0 naming the request and the first misfit.
 */
export async function fetchJson<T extends TSchema>(connection: ConnectionId, path: string, answer: T, init: RequestInit = {}, signal?: AbortSignal): Promise<Static<T>> {
  const res = await pageFetch(connection)(await apiUrl(connection, path), { ...init, signal: signal ?? init.signal ?? null })
  if (!res.ok) throw await errorOf(res)
  // No size cap here, unlike the shared client's: reports are as large as they are, and the
  // other answers come from Aviary's own routes.
  const text = await res.text()
  // Named by its path: the page already says which server it shows (a connection's proxy URL would only confuse).
  return decodeAnswer(`${init.method ?? 'GET'} ${path}`, res.status, text, new AnswerShape(answer), Infinity)
}

/** Sends a JSON body (POST/PUT/DELETE) to a connection's API; the answer is checked as fetchJson's. */
export async function sendJson<T extends TSchema>(connection: ConnectionId, method: string, path: string, answer: T, body?: unknown): Promise<Static<T>> {
  return fetchJson(connection, path, answer, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } })
  })
}
