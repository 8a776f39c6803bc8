// Forwards one request to a saved connection and hands back the remote's streaming answer.
//
// node:http(s) rather than fetch: fetch re-chunks a streamed upload (the Content-Length the page
// sent is lost, and Flask/werkzeug-based Cuckoo servers need it), and it decompresses answers, so
// their Content-Length would no longer match. Here bytes pass as they are, with backpressure in
// both directions, so a 1 GiB upload or an endless event stream costs a few socket buffers.
import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http'
import https from 'node:https'
import type { Readable } from 'node:stream'

/** Headers of the page's request that mean something to the remote. Everything else stays
 *  here: Authorization and Cookie (the local service's, not the remote's), hop-by-hop headers,
 *  and Origin/Referer/Sec-Fetch-* (the remote would rightly refuse a browser's request). */
const REQUEST_HEADERS = [
  'accept', 'accept-encoding', 'accept-language', 'content-type', 'content-length', 'content-encoding',
  'range', 'if-range', 'if-match', 'if-none-match', 'if-modified-since', 'if-unmodified-since', 'last-event-id'
]
/** Headers of the remote's answer passed back to the page. */
const RESPONSE_HEADERS = [
  'content-type', 'content-length', 'content-disposition', 'content-encoding', 'content-range',
  'accept-ranges', 'etag', 'last-modified', 'retry-after', 'x-accel-buffering'
]
/** Without a byte either way for this long, the remote is considered gone (event streams send
 *  a heartbeat every 15 s). */
const IDLE_TIMEOUT_MS = 120_000

export interface ProxyRequest {
  method: string
  headers: IncomingHttpHeaders
  /** The request body, or null when there is none. */
  body: Readable | null
  token: string | null
  /** Aborted when the page goes away before the remote has answered: the remote request is closed. */
  signal?: AbortSignal
}

export interface ProxyExchange {
  response: IncomingMessage
  /** Stops the exchange (the page went away): closes the remote connection if still open. */
  abort(): void
}

/** The remote URL for `tail` (path and query after /proxy) under the connection's base URL. */
export function remoteUrl(base: string, tail: string): URL {
  const b = new URL(base)
  const q = tail.indexOf('?')
  const path = q < 0 ? tail : tail.slice(0, q)
  const query = q < 0 ? '' : tail.slice(q)
  const target = new URL(b.origin)
  // Assigned raw: the page's percent-encoding is kept exactly as it sent it.
  target.pathname = `${b.pathname.replace(/\/+$/, '')}${path.startsWith('/') ? path : `/${path}`}`
  target.search = query
  return target
}

export function responseHeaders(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of RESPONSE_HEADERS) {
    const v = res.headers[name]
    if (typeof v === 'string') out[name] = v
  }
  return out
}

/** Resolves with the remote's answer (status and headers received), rejects when the remote
 *  cannot be reached or fails before answering. */
export function forward(target: URL, r: ProxyRequest): Promise<ProxyExchange> {
  const headers: OutgoingHttpHeaders = {}
  for (const name of REQUEST_HEADERS) {
    const v = r.headers[name]
    if (v !== undefined) headers[name] = v
  }
  if (r.token) headers.authorization = `Bearer ${r.token}`
  const client = target.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = client.request(target, { method: r.method, headers, timeout: IDLE_TIMEOUT_MS, ...(r.signal ? { signal: r.signal } : {}) })
    const abort = () => {
      r.body?.unpipe(req)
      req.destroy()
    }
    req.once('timeout', () => req.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' })))
    req.once('response', (response) => {
      response.setTimeout(IDLE_TIMEOUT_MS, () => response.destroy())
      resolve({ response, abort })
    })
    req.on('error', (err) => {
      // The page's upload stops feeding a dead remote; what is left of it is read and dropped,
      // so the 502 can still be answered on this connection.
      if (r.body) {
        r.body.unpipe(req)
        r.body.resume()
      }
      reject(err)
    })
    if (r.body) {
      r.body.pipe(req)
      r.body.once('error', () => req.destroy())
    } else {
      req.end()
    }
  })
}

/** Why the remote could not be reached, for the 502 message (no stack, no local path). */
export function unreachableReason(err: unknown): string {
  const e = err as { code?: string; message?: string }
  if (e.code === 'ETIMEDOUT') return 'no answer in time'
  return e.code ?? e.message ?? 'the request failed'
}
