// How the UI reaches an analysis service: the local one (its own origin, or the address the
// desktop bridge gives), or a saved remote connection through the local service's proxy
// (`/aviary/connections/<id>/proxy/...`), so the page never needs CORS and never sees a token.
// Cuckoo's routes and the task search are called through the shared client (client.ts here);
// fetchJson below is for the rest: Aviary's own routes typed with src/shared's schemas, and
// reports, whose size and shape are the report views' to handle.
import { resolveApiBaseUrl } from '../api-base'
import { ApiClientError } from '../../../shared/api/client'

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

/** Fetches JSON from a connection's API; non-2xx answers throw HttpError with the server's message. */
export async function fetchJson<T>(connection: ConnectionId, path: string, init: RequestInit = {}, signal?: AbortSignal): Promise<T> {
  const res = await pageFetch(connection)(await apiUrl(connection, path), { ...init, signal: signal ?? init.signal ?? null })
  if (!res.ok) throw await errorOf(res)
  return (await res.json()) as T
}

/** Sends a JSON body (POST/PUT/DELETE) to the local service's own routes. */
export async function sendJson<T>(connection: ConnectionId, method: string, path: string, body?: unknown): Promise<T> {
  return fetchJson<T>(connection, path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } })
  })
}
