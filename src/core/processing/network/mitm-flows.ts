// What the decrypting proxy saw of a task (mitm/flows.jsonl, written by Aviary's mitmproxy addon,
// resources/mitm/aviary_flows.py) as the report's `network.http_ex` and `https_ex` in Cuckoo
// 2.0.7's shape ({src, sport, dst, dport, protocol, method, host, uri, status, request, response,
// req{path, md5, sha1}, resp{path, md5, sha1}, md5, sha1, path}), each body saved once as
// network/<sha1> as Cuckoo does; plus, for readers that want them, the headers as pairs and a
// printable beginning of each body. TLS handshakes that failed become lines of `network.mitm`
// saying what the proxy saw: which side ended it (the guest, as a sample that pins its
// certificates does, or the upstream) and the TLS alert or error, never a guess at why. The guest
// shaped this traffic: every record is read field by field, and their number and size are bounded.
import { createHash } from 'node:crypto'
import { createReadStream, existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { toPrintable } from './printable'
import { Closed, Nullable, Type, type Static } from '../schema'
import { ARTIFACTS, artifactPath } from '../../storage/layout'

export const BodyRefSchema = Closed({
  /** network/<sha1> in the analysis folder, or null without a body. */
  path: Nullable(Type.String()),
  md5: Nullable(Type.String()),
  sha1: Nullable(Type.String()),
  size: Type.Integer(),
  truncated: Type.Boolean()
})
export type BodyRef = Static<typeof BodyRefSchema>

const HeaderPairs = Type.Array(Type.Tuple([Type.String(), Type.String()]))

export const HttpExEntrySchema = Closed({
  src: Nullable(Type.String()),
  sport: Nullable(Type.Integer()),
  dst: Nullable(Type.String()),
  dport: Nullable(Type.Integer()),
  protocol: Type.Union([Type.Literal('http'), Type.Literal('https')]),
  method: Type.String(),
  host: Type.String(),
  uri: Type.String(),
  path: Nullable(Type.String()),
  status: Nullable(Type.Integer()),
  request: Type.String(),
  response: Type.String(),
  req: BodyRefSchema,
  resp: BodyRefSchema,
  md5: Nullable(Type.String()),
  sha1: Nullable(Type.String()),
  /** Aviary: the headers as [name, value] pairs, and the start of each body as printable text. */
  request_headers: HeaderPairs,
  response_headers: HeaderPairs,
  request_body: Type.String(),
  response_body: Type.String(),
  error: Nullable(Type.String())
})
export type HttpExEntry = Static<typeof HttpExEntrySchema>

export interface MitmFlows { http_ex: HttpExEntry[]; https_ex: HttpExEntry[]; mitm: string[] }

const MAX_FLOWS = 5_000
const MAX_LINE = 4 * 1024 * 1024
const PREVIEW = 4096

type Json = Record<string, unknown>

/**
 * The records of a flows.jsonl (what Aviary's mitmdump addon writes, one JSON object a line), in
 * order; a line over MAX_LINE, or one that is not a JSON object, is skipped. The addon runs beside
 * the guest's traffic, so nothing here trusts the file. Read by the network module (https_ex) and
 * by the IDS step (the decrypted exchanges as a pcap).
 */
export async function * flowRecords(file: string): AsyncGenerator<Json> {
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity })
  for await (const line of lines) {
    if (line.length > MAX_LINE) continue
    try {
      const v: unknown = JSON.parse(line)
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) yield v as Json
    } catch {
      // not JSON: skipped
    }
  }
}
const str = (v: unknown): string => (typeof v === 'string' ? v : '')
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const peer = (v: unknown): [string | null, number | null] => (Array.isArray(v) ? [typeof v[0] === 'string' ? v[0] : null, num(v[1])] : [null, null])

function headers(v: unknown): [string, string][] {
  if (!Array.isArray(v)) return []
  return v.slice(0, 500).filter((h): h is [string, string] => Array.isArray(h) && typeof h[0] === 'string' && typeof h[1] === 'string')
}

export async function readMitmFlows(dir: string): Promise<MitmFlows> {
  const out: MitmFlows = { http_ex: [], https_ex: [], mitm: [] }
  const file = artifactPath(dir, ARTIFACTS.mitmFlows)
  if (!existsSync(file)) return out
  const bodies = artifactPath(dir, ARTIFACTS.network)
  const saved = new Set<string>()
  const save = async (b64: unknown, size: unknown, truncated: unknown): Promise<{ ref: BodyRef; preview: string }> => {
    const data = Buffer.from(str(b64), 'base64')
    const ref: BodyRef = { path: null, md5: null, sha1: null, size: num(size) ?? data.length, truncated: truncated === true }
    if (data.length === 0) return { ref, preview: '' }
    const sha1 = createHash('sha1').update(data).digest('hex')
    ref.sha1 = sha1
    ref.md5 = createHash('md5').update(data).digest('hex')
    ref.path = `${ARTIFACTS.network}/${sha1}`
    if (!saved.has(sha1)) {
      saved.add(sha1)
      await mkdir(bodies, { recursive: true })
      await writeFile(path.join(bodies, sha1), data)
    }
    return { ref, preview: toPrintable(data.subarray(0, PREVIEW)) }
  }
  let flows = 0
  // The same failure seen again (mitmproxy tries the upstream once for the handshake and again
  // for the request; a sample retries) is one line with its count.
  const failed = new Map<string, number>()
  for await (const r of flowRecords(file)) {
    if (flows >= MAX_FLOWS) break
    if (r.type === 'tls_failed') {
      const line = describeTlsFailure(r)
      if (failed.has(line) || failed.size < MAX_FLOWS) failed.set(line, (failed.get(line) ?? 0) + 1)
      continue
    }
    // Only what the addon writes: a flow of a known scheme with a request object.
    if (r.type !== 'flow' || (r.scheme !== 'http' && r.scheme !== 'https') || r.request === null || typeof r.request !== 'object') continue
    flows++
    const req = r.request as Json
    const res = r.response !== null && typeof r.response === 'object' ? (r.response as Json) : null
    const [src, sport] = peer(r.client)
    const [dst, dport] = peer(r.server)
    const protocol = r.scheme === 'http' ? 'http' : 'https'
    const host = str(r.host)
    const method = str(r.method).slice(0, 32)
    const p = str(r.path).slice(0, 8192)
    const reqHeaders = headers(req.headers)
    const resHeaders = headers(res?.headers)
    const reqBody = await save(req.body_b64, req.body_size, req.truncated)
    const resBody = res ? await save(res.body_b64, res.body_size, res.truncated) : { ref: { path: null, md5: null, sha1: null, size: 0, truncated: false }, preview: '' }
    const status = res ? num(res.status) : null
    const entry: HttpExEntry = {
      src, sport, dst, dport, protocol, method, host,
      uri: `${protocol}://${host}${num(r.port) !== null && r.port !== (protocol === 'https' ? 443 : 80) ? `:${String(r.port)}` : ''}${p}`,
      path: resBody.ref.path,
      status,
      request: `${method} ${p} ${str(r.http_version)}\r\n${reqHeaders.map(([k, v]) => `${k}: ${v}`).join('\r\n')}`,
      response: res ? `${str(r.http_version)} ${status ?? ''} ${str(res.reason)}\r\n${resHeaders.map(([k, v]) => `${k}: ${v}`).join('\r\n')}` : '',
      req: reqBody.ref,
      resp: resBody.ref,
      md5: resBody.ref.md5,
      sha1: resBody.ref.sha1,
      request_headers: reqHeaders,
      response_headers: resHeaders,
      request_body: reqBody.preview,
      response_body: resBody.preview,
      error: typeof r.error === 'string' ? r.error.slice(0, 500) : null
    }
    ;(protocol === 'https' ? out.https_ex : out.http_ex).push(entry)
  }
  for (const [line, n] of failed) out.mitm.push(n > 1 ? `${line} (${n} times)` : line)
  return out
}

/** TLS alerts that say the peer would not accept the certificate it was shown (RFC 8446 §6.2). */
const CERTIFICATE_ALERTS = new Set(['bad certificate', 'unsupported certificate', 'certificate revoked', 'certificate expired',
  'certificate unknown', 'unknown ca'])

/**
 * One failed handshake as the proxy saw it. mitmproxy 8.1's error text (what the addon records)
 * carries OpenSSL's reason: an alert the peer sent reads "tlsv1 alert unknown ca" (or sslv3,
 * tlsv13); a connection the peer closed reads "connection closed" (mitmproxy words the guest's
 * case "The client disconnected during the handshake"). Records of an older addon have no side:
 * it recorded only the guest's.
 */
export function describeTlsFailure(r: Record<string, unknown>): string {
  const side = r.side === 'upstream' ? 'upstream' : 'guest'
  const [cip, cport] = peer(r.client)
  const [sip, sport] = peer(r.server)
  const guest = `the guest (${cip ?? '?'}:${cport ?? '?'})`
  const upstream = `the upstream (${sip ?? '?'}:${sport ?? '?'})`
  const name = str(r.sni).slice(0, 253) || (sip !== null ? `${sip}:${sport ?? '?'} (no SNI)` : 'a server without SNI')
  const error = str(r.error).slice(0, 2000)
  const alert = /\b(?:sslv3|tlsv1|tlsv13|tls) alert ([a-z0-9 ]+?)(?=['"\])]|$)/i.exec(error)?.[1]?.toLowerCase()
  if (side === 'guest') {
    if (alert !== undefined) {
      return CERTIFICATE_ALERTS.has(alert)
        ? `${guest} refused the proxy's certificate for ${name} (TLS alert: ${alert})`
        : `${guest} ended the TLS handshake for ${name} (TLS alert: ${alert})`
    }
    if (/^The client disconnected during the handshake|^connection closed$/.test(error)) {
      return `${guest} closed the connection during the TLS handshake for ${name}, without a TLS alert`
    }
    if (error === 'connection closed early') return `the connection with ${guest} closed before the TLS handshake for ${name}`
    if (error.startsWith('Cannot parse ClientHello')) return `${guest} sent no TLS handshake the proxy could read (to ${sip ?? '?'}:${sport ?? '?'})`
    if (/cannot agree on a TLS version/.test(error)) return `${guest} and the proxy have no TLS version in common for ${name}`
    return `the TLS handshake with ${guest} for ${name} failed: ${openSslReason(error)}`
  }
  if (alert !== undefined) return `${upstream} refused the proxy's TLS handshake for ${name} (TLS alert: ${alert})`
  if (error === 'connection closed') return `${upstream} closed the connection during the TLS handshake for ${name}, without a TLS alert`
  if (/does not speak TLS/.test(error)) return `${upstream} does not speak TLS (for ${name})`
  if (/cannot agree on a TLS version/.test(error)) return `${upstream} and the proxy have no TLS version in common for ${name}`
  return `the TLS handshake with ${upstream} for ${name} failed: ${openSslReason(error)}`
}

/** OpenSSL's last reason in mitmproxy's "OpenSSL Error([('SSL routines', '', 'reason')])", else the text itself. */
function openSslReason(error: string): string {
  const reasons = [...error.matchAll(/\('[^']*', '[^']*', '([^']+)'\)/g)].map((m) => m[1]!)
  return (reasons.at(-1) ?? error).slice(0, 300) || 'no error given'
}
