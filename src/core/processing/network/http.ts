// HTTP/1.x over one direction of a reassembled TCP stream, parsed incrementally so memory stays
// flat: only an incomplete message head (at most HEAD_CAP bytes) and the first BODY_CAP bytes of a
// request body are ever held; bodies beyond that are skipped by counting (Content-Length, chunked
// framing). A direction whose first bytes are not an HTTP request or response is given up at once.
// Written by hand, for its caps: Node's own parser (llhttp) is not exposed for arbitrary byte
// streams. http-parser-js does take buffers (with a per-parser header limit and body callbacks);
// this parser stays because it enforces, in the same pass and per message, the caps a hostile
// capture needs (a head of at most 16 KiB, the first 16 KiB of a body kept and the rest skipped by
// counting, chunk-size lines of at most 1 KiB), gives a direction up at its first non-HTTP byte,
// and is checked field by field against tshark on real captures (network.test.ts). What a request
// gives is what Cuckoo's `_add_http` reports (method, path, version without "HTTP/", host,
// user-agent, body); a response gives its status code.

const HEAD_CAP = 16 * 1024
const BODY_CAP = 16 * 1024
const CHUNK_LINE_CAP = 1024
const REQUEST_LINE = /^([A-Za-z][A-Za-z_-]{0,31}) (\S+) HTTP\/(\d+\.\d+)$/
const STATUS_LINE = /^HTTP\/(\d+\.\d+) (\d{3})(?: |$)/

export interface HttpRequest {
  method: string
  path: string
  version: string
  /** Lower-case header name → first value. */
  headers: Map<string, string>
  /** The raw head, request line to the blank line included. */
  head: Buffer
  /** The body (first BODY_CAP bytes). */
  body: Buffer
}

export interface HttpResponse { version: string; status: number }

export interface HttpHandlers {
  onRequest(r: HttpRequest): void
  onResponse(r: HttpResponse): void
  /** Method of the n-th request on the other direction (HEAD answers carry no body). */
  requestMethod(n: number): string | undefined
}

type Mode = 'head' | 'body' | 'chunk-size' | 'chunk-data' | 'trailer' | 'done'

/**
 * Could `b` be the start of an HTTP message? A prefix too short to tell (TCP may cut anywhere,
 * even after one byte) counts as yes.
 */
export function looksLikeHttp(b: Buffer): boolean {
  const s = b.toString('latin1', 0, Math.min(b.length, 34))
  if (s.startsWith('HTTP/') || (s.length < 5 && 'HTTP/'.startsWith(s))) return true
  const token = /^[A-Za-z][A-Za-z_-]{0,31}/.exec(s)?.[0]
  if (!token) return false
  if (token.length === s.length) return token.length < 32 // still inside the method
  return s[token.length] === ' ' && (s.length === token.length + 1 || /[\x21-\x7e]/.test(s[token.length + 1] ?? ''))
}

function parseHeaders(lines: string[]): Map<string, string> {
  const h = new Map<string, string>()
  for (const line of lines) {
    const i = line.indexOf(':')
    if (i <= 0) continue
    const name = line.slice(0, i).trim().toLowerCase()
    if (!h.has(name)) h.set(name, line.slice(i + 1).trim())
  }
  return h
}

export class HttpStream {
  private mode: Mode = 'head'
  private pending: Buffer = Buffer.alloc(0)
  private remaining = 0
  private request: HttpRequest | null = null
  private bodyParts: Buffer[] = []
  private bodyLen = 0
  private responses = 0

  constructor(private readonly h: HttpHandlers) {}

  get done(): boolean { return this.mode === 'done' }

  /** Feeds the next in-order bytes. Returns false once the stream is no longer HTTP we follow. */
  push(chunk: Buffer): boolean {
    if (this.mode === 'done') return false
    const data = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk
    this.pending = Buffer.alloc(0)
    let o = 0
    while (o < data.length && this.mode !== 'done') {
      switch (this.mode) {
        case 'head': {
          const idx = data.indexOf('\r\n\r\n', o, 'latin1')
          if (idx < 0) {
            if (!looksLikeHttp(data.subarray(o)) || data.length - o > HEAD_CAP) { this.mode = 'done'; break }
            this.pending = Buffer.from(data.subarray(o))
            return true
          }
          this.onHead(Buffer.from(data.subarray(o, idx + 4)))
          o = idx + 4
          break
        }
        case 'body': case 'chunk-data': {
          const n = Math.min(this.remaining, data.length - o)
          if (this.request && this.bodyLen < BODY_CAP) {
            const keep = data.subarray(o, o + Math.min(n, BODY_CAP - this.bodyLen))
            this.bodyParts.push(Buffer.from(keep))
            this.bodyLen += keep.length
          }
          this.remaining -= n
          o += n
          if (this.remaining === 0) {
            if (this.mode === 'body') this.endMessage()
            else this.mode = 'chunk-size'
          }
          break
        }
        case 'chunk-size': case 'trailer': {
          const idx = data.indexOf('\r\n', o, 'latin1')
          if (idx < 0) {
            if (data.length - o > CHUNK_LINE_CAP) { this.mode = 'done'; break }
            this.pending = Buffer.from(data.subarray(o))
            return true
          }
          const line = data.toString('latin1', o, idx)
          o = idx + 2
          if (this.mode === 'trailer') {
            if (line === '') this.endMessage()
            break
          }
          if (line === '') break // the CRLF that ends the previous chunk's data
          const size = parseInt(line.split(';')[0]!.trim(), 16)
          if (!Number.isFinite(size) || size < 0) { this.mode = 'done'; break }
          if (size === 0) { this.mode = 'trailer'; break }
          this.remaining = size
          this.mode = 'chunk-data'
          break
        }
      }
    }
    if (this.mode === 'done') this.flush()
    return this.mode !== 'done'
  }

  /** End of capture: report a message whose body (or even head) was not complete. */
  finish(): void {
    this.flushPartial()
    this.mode = 'done'
  }

  /** Bytes are missing (snap length): report what we have, expect a new message next. */
  gap(): boolean {
    if (this.mode === 'done') return false
    this.flushPartial()
    this.pending = Buffer.alloc(0)
    this.mode = 'head'
    return true
  }

  private flushPartial(): void {
    if (this.mode === 'head' && this.pending.length) {
      const s = this.pending.toString('latin1')
      const eol = s.indexOf('\r\n')
      if (eol > 0 && (REQUEST_LINE.test(s.slice(0, eol)) || STATUS_LINE.test(s.slice(0, eol)))) this.onHead(this.pending, true)
    }
    this.flush()
  }

  private flush(): void {
    if (this.request) this.emitRequest()
  }

  private emitRequest(): void {
    const r = this.request
    if (!r) return
    r.body = Buffer.concat(this.bodyParts)
    this.request = null
    this.bodyParts = []
    this.bodyLen = 0
    this.h.onRequest(r)
  }

  private endMessage(): void {
    this.emitRequest()
    this.mode = 'head'
  }

  private onHead(head: Buffer, partial = false): void {
    const lines = head.toString('latin1').split('\r\n')
    const first = lines[0]!
    const headers = parseHeaders(lines.slice(1))
    const req = REQUEST_LINE.exec(first)
    const te = (headers.get('transfer-encoding') ?? '').toLowerCase()
    const cl = headers.has('content-length') ? Number(headers.get('content-length')) : NaN
    if (req) {
      this.request = { method: req[1]!, path: req[2]!, version: req[3]!, headers, head, body: Buffer.alloc(0) }
      if (partial) return
      if (req[1]!.toUpperCase() === 'CONNECT') { this.emitRequest(); this.mode = 'done'; return }
      this.frameBody(te, cl)
      return
    }
    const res = STATUS_LINE.exec(first)
    if (!res) { this.mode = 'done'; return }
    const status = Number(res[2])
    const method = this.h.requestMethod(this.responses)
    if (status >= 200 || status === 101) this.responses++
    this.h.onResponse({ version: res[1]!, status })
    if (partial) return
    if (status === 101) { this.mode = 'done'; return }
    if ((status >= 100 && status < 200) || status === 204 || status === 304 || method?.toUpperCase() === 'HEAD') { this.mode = 'head'; return }
    if (!te.includes('chunked') && !Number.isFinite(cl)) { this.mode = 'done'; return } // read until close
    this.frameBody(te, cl)
  }

  private frameBody(te: string, cl: number): void {
    if (te.includes('chunked')) { this.mode = 'chunk-size'; return }
    if (Number.isFinite(cl) && cl > 0) { this.remaining = cl; this.mode = 'body'; return }
    this.endMessage()
  }
}
