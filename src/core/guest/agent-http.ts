// One HTTP exchange with a guest agent (Cuckoo 2's agent.py, CAPE's, or Aviary's own), shaped by
// what those agents accept (Cuckoo 2.0.7's cuckoo/data/agent/agent.py and cuckoo/core/guest.py): a fresh connection per request, no
// query strings, urlencoded or multipart bodies that ALWAYS carry a Content-Length (the agents'
// BaseHTTPRequestHandler cannot de-chunk), and responses read until the socket closes (Cuckoo's
// agent speaks HTTP/1.0 and sends JSON with no Content-Length). Node's `fetch`/`FormData` may
// chunk a body, so this uses node:http with a body whose length is known before the first byte.
// Errors are AgentErrors whose message names the step and the agent, fit for a task's errors.
// The guest is hostile: every answer is read once, up to the route's limit (ANSWER_LIMITS of the
// shared protocol), and an exchange may carry a deadline that no trickle of bytes extends.
import http from 'node:http'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { ANSWER_LIMITS, type AgentRoute } from '../../guest-protocol/agent-api'

/** Routes outside the protocol's table (none today) get the smallest limit. */
const DEFAULT_ANSWER_LIMIT = 64 * 1024

/** A form field (text) or a file part for a multipart body. */
export type FormPart =
  | { name: string; value: string }
  | { name: string; filename: string; data: Buffer }
  | { name: string; filename: string; path: string }

export type RequestBody =
  | { kind: 'urlencoded'; fields: Record<string, string> }
  | { kind: 'multipart'; parts: FormPart[] }

export interface AgentResponse {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
}

export interface AgentRequest {
  ip: string
  port: number
  method: 'GET' | 'POST'
  path: string
  body?: RequestBody
  /** Socket inactivity limit: an upload that keeps moving is never cut, a silent agent is. */
  timeoutMs: number
  /** Limit on the whole exchange, however the bytes trickle (EXCHANGE_MS); none for uploads. */
  deadlineMs?: number
  /** The most of the answer read; default: the route's limit (ANSWER_LIMITS). */
  maxBytes?: number
  signal?: AbortSignal
  /** What this request is for, e.g. "uploading the analyzer": used in error messages. */
  step: string
  /** Receives the exchange's progress record when it starts (updated as bytes move). */
  watch?: (p: ExchangeProgress) => void
}

/** A prepared body: fixed-length chunks and files (path + size) written in order. */
interface PreparedBody {
  contentType: string
  length: number
  pieces: ({ buf: Buffer } | { path: string; size: number })[]
}

/**
 * Multipart encoding is written by hand because the maintained encoders (`form-data`, undici's
 * FormData) either stream with chunked encoding or need the whole file in memory; a sample can
 * be hundreds of MiB and the agents need a Content-Length, so parts are framed here and files
 * are streamed from disk with a length taken from stat() beforehand.
 */
async function prepareBody(body: RequestBody): Promise<PreparedBody> {
  if (body.kind === 'urlencoded') {
    const buf = Buffer.from(new URLSearchParams(body.fields).toString(), 'utf8')
    return { contentType: 'application/x-www-form-urlencoded', length: buf.length, pieces: [{ buf }] }
  }
  const boundary = `----aviary${randomBytes(12).toString('hex')}`
  const pieces: PreparedBody['pieces'] = []
  let length = 0
  const push = (buf: Buffer): void => {
    pieces.push({ buf })
    length += buf.length
  }
  for (const part of body.parts) {
    const disposition = 'filename' in part
      ? `form-data; name="${quote(part.name)}"; filename="${quote(part.filename)}"`
      : `form-data; name="${quote(part.name)}"`
    const type = 'filename' in part ? 'Content-Type: application/octet-stream\r\n' : ''
    push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`, 'utf8'))
    if ('value' in part) push(Buffer.from(part.value, 'utf8'))
    else if ('data' in part) push(part.data)
    else {
      const size = (await stat(part.path)).size
      pieces.push({ path: part.path, size })
      length += size
    }
    push(Buffer.from('\r\n', 'utf8'))
  }
  push(Buffer.from(`--${boundary}--\r\n`, 'utf8'))
  return { contentType: `multipart/form-data; boundary=${boundary}`, length, pieces }
}

function quote(s: string): string {
  return s.replace(/[\r\n"]/g, '_')
}

async function writeBody(req: http.ClientRequest, body: PreparedBody, progress: ExchangeProgress): Promise<void> {
  for (const piece of body.pieces) {
    if ('buf' in piece) {
      progress.sent += piece.buf.length
      if (!req.write(piece.buf)) await drained(req)
      continue
    }
    if (piece.size === 0) continue
    // Exactly `size` bytes, even if the file grew since stat(): the length is already promised.
    for await (const chunk of createReadStream(piece.path, { start: 0, end: piece.size - 1, highWaterMark: 1024 * 1024 })) {
      if (req.destroyed) return
      progress.sent += (chunk as Buffer).length
      if (!req.write(chunk as Buffer)) await drained(req)
    }
  }
  req.end()
}

function drained(req: http.ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      req.off('drain', done)
      req.off('close', done)
      resolve()
    }
    req.on('drain', done)
    req.on('close', done)
  })
}

/**
 * How an exchange went wrong, for the run's reason: `unreachable` (no connection, or it broke),
 * `timeout` (no answer at all in time), `misbehaved` (an answer that no agent gives: longer than
 * the route's limit, or still dripping in at the deadline), `aborted` (the run's signal).
 */
export type AgentErrorKind = 'unreachable' | 'timeout' | 'misbehaved' | 'aborted'

export class AgentError extends Error {
  constructor(readonly kind: AgentErrorKind, message: string) {
    super(message)
    if (kind === 'aborted') this.name = 'AbortError'
  }
}

/** What an exchange has done so far, readable while it runs (the run names it when its time runs out). */
export interface ExchangeProgress {
  what: string
  startedAt: number
  sent: number
  /** Bytes of the answer (head and body) received; -1 until the agent sent anything. */
  received: number
  /** The exchange is over (answered or failed); an interrupted one stays open: it was under way. */
  over: boolean
}

/** In words: what the agent was doing in an unfinished exchange. */
export function describeProgress(p: ExchangeProgress, at = Date.now()): string {
  const secs = Math.round((at - p.startedAt) / 1000)
  if (p.received < 0) return `the agent had not answered ${p.what} after ${secs} s`
  return `the agent was still sending its answer to ${p.what}: ${p.received} bytes in ${secs} s`
}

/** Sends one request on its own connection and resolves with whatever HTTP status came back. */
export async function agentRequest(r: AgentRequest): Promise<AgentResponse> {
  const what = `${r.method} ${r.path}`
  const where = `${what} on ${r.ip}:${r.port}`
  const maxBytes = r.maxBytes ?? ANSWER_LIMITS[r.path as AgentRoute] ?? DEFAULT_ANSWER_LIMIT
  let body: PreparedBody | null = null
  try {
    body = r.body ? await prepareBody(r.body) : null
  } catch (err) {
    throw new Error(`${r.step}: cannot read what is to be sent: ${errMessage(err)}`, { cause: err })
  }
  const progress: ExchangeProgress = { what, startedAt: Date.now(), sent: 0, received: -1, over: false }
  r.watch?.(progress)
  return new Promise<AgentResponse>((resolve, reject) => {
    let settled = false
    let deadline: NodeJS.Timeout | undefined
    const fail = (kind: AgentErrorKind, msg: string): void => {
      if (settled) return
      settled = true
      progress.over = kind !== 'aborted'
      clearTimeout(deadline)
      req.destroy()
      reject(new AgentError(kind, kind === 'aborted' ? `${r.step}: interrupted` : `${r.step} (${where}): ${msg}`))
    }
    const headers: http.OutgoingHttpHeaders = { Connection: 'close', 'Accept-Encoding': 'identity' }
    if (body) {
      headers['Content-Type'] = body.contentType
      headers['Content-Length'] = body.length
    } else if (r.method === 'POST') headers['Content-Length'] = 0
    const req = http.request({ host: r.ip, port: r.port, method: r.method, path: r.path, headers, agent: false })
    req.setTimeout(r.timeoutMs, () => {
      if (progress.received < 0) fail('timeout', `the agent did not answer within ${Math.round(r.timeoutMs / 1000)} s`)
      else fail('misbehaved', `the agent's answer stopped after ${progress.received} bytes`)
    })
    if (r.deadlineMs !== undefined) {
      deadline = setTimeout(() => {
        if (progress.received < 0) fail('timeout', `the agent did not answer within ${Math.round(r.deadlineMs! / 1000)} s`)
        else fail('misbehaved', `${describeProgress(progress)}, more than the ${Math.round(r.deadlineMs! / 1000)} s an answer may take`)
      }, r.deadlineMs)
    }
    const onAbort = (): void => fail('aborted', '')
    if (r.signal?.aborted) return onAbort()
    r.signal?.addEventListener('abort', onAbort, { once: true })
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'HPE_HEADER_OVERFLOW') fail('misbehaved', 'the agent sent more header bytes than HTTP allows')
      else if (progress.received < 0) fail('unreachable', describeSocketError(err))
      else fail('misbehaved', `the agent's answer broke off: ${describeSocketError(err)}`)
    })
    req.on('close', () => r.signal?.removeEventListener('abort', onAbort))
    req.on('response', (res) => {
      progress.received = 0
      const declared = Number(res.headers['content-length'])
      if (Number.isFinite(declared) && declared > maxBytes) {
        fail('misbehaved', `the agent announced an answer of ${declared} bytes, more than the ${maxBytes} this route allows`)
        return
      }
      // Read once, into one buffer of at most maxBytes: nothing of a longer answer is kept.
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => {
        progress.received += c.length
        if (progress.received > maxBytes) {
          fail('misbehaved', `the agent's answer was longer than the ${maxBytes} bytes this route allows`)
          return
        }
        chunks.push(c)
      })
      res.on('error', (err: NodeJS.ErrnoException) => fail('misbehaved', `the agent's answer broke off: ${describeSocketError(err)}`))
      res.on('end', () => {
        if (settled) return
        settled = true
        progress.over = true
        clearTimeout(deadline)
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })
      })
    })
    if (body) writeBody(req, body, progress).catch((err: unknown) => fail('unreachable', `sending the body failed: ${errMessage(err)}`))
    else req.end()
  })
}

export function describeSocketError(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED': return 'connection refused (is the agent running?)'
    case 'EHOSTUNREACH': case 'ENETUNREACH': return `no route to the guest (${err.code})`
    case 'ECONNRESET':
      // Cuckoo's and CAPE's agents drop requests from any IP but the one they were pinned to.
      return 'the agent closed the connection without answering (is it pinned to another host\'s IP?)'
    default: return err.message
  }
}

export function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** A JSON body's object, or null when the body is not a JSON object (whatever its Content-Type says). */
export function jsonObject(body: Buffer): Record<string, unknown> | null {
  try {
    // Invalid UTF-8 becomes U+FFFD and JSON.parse decides; agents send no reliable Content-Type.
    const v: unknown = JSON.parse(body.toString('utf8'))
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/**
 * The agent's own words for a failed request: its `message`, plus the last line of a Python
 * traceback when there is one (e.g. "OSError: [Errno 17] File exists"), never the whole stack.
 */
export function agentErrorText(res: AgentResponse): string {
  const j = jsonObject(res.body)
  if (!j) return `HTTP ${res.status}`
  const msg = typeof j.message === 'string' ? j.message : `HTTP ${res.status}`
  const tb = typeof j.traceback === 'string' ? j.traceback.trim().split('\n').pop()?.trim() : undefined
  return `HTTP ${res.status}: ${msg}${tb ? ` (${tb})` : ''}`
}
