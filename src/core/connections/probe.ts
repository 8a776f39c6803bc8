// Finds out what a URL is before it is saved: a Cuckoo-compatible analysis instance answers
// GET /cuckoo/status; a dispatcher lists its nodes at GET /api/node (newer generation) or
// GET /node (older). Failures become 400s that say what the server did answer.
import { badRequest } from '../errors'
import type { ConnectionKind } from './connections.repository'

const PROBE_TIMEOUT_MS = 10_000
/** Status answers are a few KiB; anything much larger is not one. */
const MAX_PROBE_BODY = 1024 * 1024

interface Answer {
  path: string
  status: number
  json: unknown
  contentType: string
}

export async function probeConnection(url: string, token: string | null, timeoutMs = PROBE_TIMEOUT_MS): Promise<ConnectionKind> {
  const status = await ask(url, '/cuckoo/status', token, timeoutMs)
  refuseAuth(status)
  if (status.status === 200 && isObject(status.json) && ('hostname' in status.json || 'tasks' in status.json || 'version' in status.json)) {
    return 'analysis'
  }
  const answers = [status]
  for (const path of ['/api/node', '/node']) {
    const nodes = await ask(url, path, token, timeoutMs)
    refuseAuth(nodes)
    if (nodes.status === 200 && isObject(nodes.json) && 'nodes' in nodes.json) return 'dispatcher'
    answers.push(nodes)
  }
  throw badRequest('url', `not a Cuckoo-compatible instance or dispatcher: ${answers.map(describe).join(', ')}`)
}

async function ask(base: string, path: string, token: string | null, timeoutMs: number): Promise<Answer> {
  let res: Response
  try {
    res = await fetch(base + path, {
      headers: { Accept: 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      // A redirect could carry the token elsewhere: the address to save is the final one.
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs)
    })
  } catch (err) {
    throw badRequest('url', `no answer from ${base} (${networkReason(err, timeoutMs)})`)
  }
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel()
    const to = res.headers.get('location')
    throw badRequest('url', `GET ${path} redirects (HTTP ${res.status})${to ? ` to ${to.slice(0, 200)}` : ''}; save the address it redirects to`)
  }
  const contentType = res.headers.get('content-type') ?? ''
  let json: unknown = undefined
  if (/json/i.test(contentType)) {
    const text = await readLimited(res)
    try {
      json = text === null ? undefined : JSON.parse(text)
    } catch {
      json = undefined
    }
  } else {
    await res.body?.cancel()
  }
  return { path, status: res.status, json, contentType }
}

function refuseAuth(a: Answer): void {
  if (a.status === 401 || a.status === 403) {
    throw badRequest('token', `the server refused it: GET ${a.path} answered HTTP ${a.status}`)
  }
}

function describe(a: Answer): string {
  const type = a.contentType ? a.contentType.split(';')[0] : 'no content type'
  return `GET ${a.path} answered HTTP ${a.status} (${a.json === undefined ? type : 'JSON without the expected fields'})`
}

async function readLimited(res: Response): Promise<string | null> {
  if (!res.body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of res.body) {
    size += chunk.byteLength
    if (size > MAX_PROBE_BODY) {
      await res.body.cancel().catch(() => undefined)
      return null
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function networkReason(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; cause?: { code?: string; message?: string } }
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no response within ${timeoutMs / 1000} s`
  return e.cause?.code ?? e.cause?.message ?? 'the request failed'
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
