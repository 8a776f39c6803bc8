// The OpenAPI document against the running service. First, coverage: every route the app has is
// documented (routes are listed from the app itself, so new ones are checked without naming them).
// Then a fuzz pass in the spirit of schemathesis (which needs PyPI, unreachable here; see
// scripts/schemathesis.sh): every documented operation gets a valid request built from the
// schemas' examples, then hostile variants (wrong types, huge numbers, 1e309, unicode, empty
// values, missing required fields, extra fields). No answer may be a 5xx, and every answer must
// have a documented status and a body that matches the documented schema (ajv).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import Ajv, { type ValidateFunction } from 'ajv'
import { startHarness, type Harness } from './service-harness'
import { routesOf } from '../src/core/api/error-handler'
import type { App } from '../src/core/api/app'

type Schema = Record<string, unknown> & { type?: string | string[]; properties?: Record<string, Schema>; required?: string[] }
interface Parameter { in: string; name: string; required?: boolean; schema?: Schema }
interface Operation {
  parameters?: Parameter[]
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> }
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>
}
type Doc = { paths: Record<string, Record<string, Operation>> }

let h: Harness
let doc: Doc
/** values that name what the seeded service has, so valid requests reach the 200 paths */
const known: Record<string, string> = {}

beforeAll(async () => {
  h = await startHarness()
  const created = await h.post('/tasks/create/file', form({}, { file: 'MZ fuzz seed' }))
  const task = (await h.json<{ task: { sample: { md5: string; sha256: string } } }>(`/tasks/view/${created.body.task_id as number}`)).body.task
  await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com/' }))
  Object.assign(known, { md5: task.sample.md5, sha256: task.sample.sha256, id: '1', task: '1', sample_id: '1', '*': 'cuckoo/status' })
  doc = (await h.json<Doc>('/openapi.json')).body
})
afterAll(async () => h.stop())

function form(fields: Record<string, string>, files: Record<string, string> = {}): FormData {
  const f = new FormData()
  for (const [k, v] of Object.entries(fields)) f.append(k, v)
  for (const [k, v] of Object.entries(files)) f.append(k, new Blob([v]), 'sample.exe')
  return f
}

/** Fastify's `/a/:id/*` as OpenAPI's `/a/{id}/{*}` (regex constraints dropped). */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, '{$1}').replace(/\*$/, '{*}').replace(/(.)\/$/, '$1')

describe('OpenAPI coverage', () => {
  it('documents every route of the app (but /openapi.json and routes hidden on purpose)', () => {
    // The service keeps its app private; the test reads it only to list the routes.
    const app = (h.service as unknown as { running: { app: App } }).running.app
    const routes = routesOf(app)
    expect(routes.length).toBeGreaterThan(50)
    const missing: string[] = []
    for (const r of routes) {
      if (r.hidden || r.url === '/openapi.json') continue
      const ops = doc.paths[openApiPath(r.url)]
      const method = r.method.toLowerCase()
      // HEAD twins of GET routes are Fastify's, answered like GET
      const documented = ops?.[method] ?? (method === 'head' ? ops?.get : undefined)
      if (!documented) missing.push(`${r.method} ${r.url}`)
    }
    expect(missing).toEqual([])
    // and the document names no path parameter that its path does not have
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        for (const q of op.parameters ?? []) if (q.in === 'path') expect(p, `${m} ${p} ${q.name}`).toContain(`{${q.name}}`)
      }
    }
  })
})

// ---- request generation -------------------------------------------------------------------

const BINARY = Symbol('binary')

function example(s: Schema | undefined, name: string): unknown {
  if (!s) return 'x'
  if (name in known && s.type !== 'object') return s.type === 'integer' ? Number(known[name]) : known[name]
  const examples = s.examples as unknown[] | undefined
  if (examples?.length) return examples[0]
  if (s.example !== undefined) return s.example
  if (Array.isArray(s.enum)) return s.enum[0]
  if (Array.isArray(s.anyOf)) return example(s.anyOf[0] as Schema, name)
  const type = Array.isArray(s.type) ? s.type[0] : s.type
  if (type === 'integer' || type === 'number') return Math.min(Math.max(1, Number(s.minimum ?? 1)), Number(s.maximum ?? 1))
  if (type === 'boolean') return true
  if (type === 'array') return [example(s.items as Schema, name)]
  if (type === 'object') return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, example(v, k)]))
  if (s.format === 'binary') return BINARY
  return 'x'.repeat(Math.max(1, Number(s.minLength ?? 1)))
}

/** Hostile values for one field: text for paths, queries and forms; JSON adds wrong types. */
function hostile(s: Schema | undefined, json: boolean): unknown[] {
  const text: unknown[] = ['', 'abc', '1e309', '-1', '1.5', '99999999999999999999999', '\u202Egpj.exe \u{1F426} отчёт', 'x'.repeat(5000), '0x1', ' 1', 'null']
  if (s?.format === 'binary') return ['not a file', '']
  return json ? [...text, 12345, 1e300, -1, true, null, [], {}, ['a'], { $ne: 1 }] : text
}

interface Req { label: string; path: string; method: string; query: Record<string, string>; body?: { type: string; value: unknown } }

function render(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value)
}

function requestsFor(path: string, method: string, op: Operation): Req[] {
  const params = op.parameters ?? []
  const valid = Object.fromEntries(params.map((p) => [`${p.in}:${p.name}`, render(example(p.schema, p.name))]))
  const bodyContent = op.requestBody ? Object.entries(op.requestBody.content) : []
  const bodies = bodyContent.map(([type, c]) => ({ type, schema: c.schema, value: example(c.schema, '') as Record<string, unknown> }))
  const build = (label: string, values: Record<string, string | undefined>, body?: { type: string; value: unknown }): Req => {
    let p = path
    const query: Record<string, string> = {}
    for (const [key, v] of Object.entries(values)) {
      if (v === undefined) continue
      const [where, name] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)]
      if (where === 'path') p = p.replace(`{${name}}`, name === '*' ? v : encodeURIComponent(v))
      else if (where === 'query') query[name] = v
    }
    p = p.replace(/\{\*\}/, known['*']!).replace(/\{[^}]+\}/g, 'x')
    return { label, path: p, method: method.toUpperCase(), query, ...(body ? { body } : {}) }
  }
  const out: Req[] = []
  const firstBody = bodies[0]
  for (const b of bodies.length ? bodies : [undefined]) out.push(build(`valid ${b?.type ?? ''}`, valid, b ? { type: b.type, value: b.value } : undefined))
  const baseBody = firstBody ? { type: firstBody.type, value: firstBody.value } : undefined
  for (const p of params) {
    const key = `${p.in}:${p.name}`
    // an empty path segment is another path (/a/ is /a), not an empty parameter
    for (const v of hostile(p.schema, false).filter((v) => p.in !== 'path' || v !== '')) out.push(build(`${key}=${render(v).slice(0, 20)}`, { ...valid, [key]: render(v) }, baseBody))
    if (!p.required) out.push(build(`${key} missing`, { ...valid, [key]: undefined }, baseBody))
  }
  out.push(build('extra query field', { ...valid, 'query:zz_extra': '1' }, baseBody))
  if (!op.requestBody && method !== 'get' && method !== 'head') out.push(build('unexpected body', valid, { type: 'application/json', value: { zz_extra: 1 } }))
  for (const b of bodies) {
    const json = b.type === 'application/json'
    const fields = Object.entries(b.schema.properties ?? {})
    for (const [name, schema] of fields) {
      for (const v of hostile(schema, json)) out.push(build(`${b.type} ${name}=${render(v).slice(0, 20)}`, valid, { type: b.type, value: { ...b.value, [name]: v } }))
      const { [name]: _dropped, ...rest } = b.value
      out.push(build(`${b.type} without ${name}`, valid, { type: b.type, value: rest }))
    }
    out.push(build(`${b.type} extra field`, valid, { type: b.type, value: { ...b.value, zz_extra: 'x' } }))
    out.push(build(`${b.type} empty`, valid, { type: b.type, value: {} }))
  }
  return out
}

function encode(body: { type: string; value: unknown }): { headers: Record<string, string>; payload: string | FormData } {
  const value = body.value as Record<string, unknown>
  if (body.type === 'application/json') return { headers: { 'content-type': 'application/json' }, payload: JSON.stringify(value) }
  if (body.type === 'multipart/form-data') {
    const f = new FormData()
    for (const [k, v] of Object.entries(value)) {
      if (v === BINARY) f.append(k, new Blob([`MZ fuzz ${k} ${Math.random()}`]), 'fuzz \u202Egpj.exe')
      else f.append(k, render(v))
    }
    return { headers: {}, payload: f }
  }
  const u = new URLSearchParams()
  for (const [k, v] of Object.entries(value)) u.append(k, v === BINARY ? 'x' : render(v))
  return { headers: { 'content-type': body.type }, payload: u.toString() }
}

// ---- response checking --------------------------------------------------------------------

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false })
const compiled = new Map<string, ValidateFunction>()
function validator(schema: Schema): ValidateFunction {
  const key = JSON.stringify(schema)
  let v = compiled.get(key)
  if (!v) compiled.set(key, (v = ajv.compile(schema)))
  return v
}

async function check(req: Req, op: Operation): Promise<string | null> {
  const qs = new URLSearchParams(req.query).toString()
  const init: RequestInit = { method: req.method, headers: {}, signal: AbortSignal.timeout(15_000) }
  if (req.body) {
    const { headers, payload } = encode(req.body)
    Object.assign(init, { headers, body: payload })
  }
  const shown = `${req.path}${qs ? `?${qs}` : ''}`
  const where = `${req.method} ${shown.length > 120 ? `${shown.slice(0, 120)}…` : shown} [${req.label}]`
  const streaming = new AbortController()
  let res: Response
  try {
    res = await fetch(h.url + req.path + (qs ? `?${qs}` : ''), { ...init, signal: AbortSignal.any([init.signal!, streaming.signal]) })
  } catch (err) {
    return `${where}: no answer (${(err as Error).message})`
  }
  const type = res.headers.get('content-type') ?? ''
  if (type.startsWith('text/event-stream')) {
    streaming.abort()
    return res.status === 200 ? null : `${where}: stream with status ${res.status}`
  }
  const raw = Buffer.from(await res.arrayBuffer())
  if (res.status >= 500) return `${where}: ${res.status} ${raw.toString('utf8').slice(0, 200)}`
  const documented = op.responses[String(res.status)] ?? op.responses.default
  if (!documented) return `${where}: status ${res.status} is not documented (${raw.toString('utf8').slice(0, 120)})`
  if (req.method === 'HEAD' || res.status === 204) return null
  const media = documented.content ? Object.entries(documented.content) : []
  if (media.length === 0) return null
  const schema = (documented.content?.[type.split(';')[0]!.trim()] ?? media[0]![1]).schema
  if (!schema || schema.format === 'binary') return null
  if (!/json/.test(type)) return `${where}: ${res.status} is ${type}, documented as JSON`
  let body: unknown
  try {
    body = JSON.parse(raw.toString('utf8'))
  } catch {
    return `${where}: ${res.status} body is not JSON`
  }
  const validate = validator(schema)
  if (!validate(body)) return `${where}: ${res.status} body does not match its schema: ${ajv.errorsText(validate.errors).slice(0, 300)}`
  return null
}

describe('OpenAPI fuzz', () => {
  it('answers every documented operation, valid or hostile, as documented and never with a 5xx', async () => {
    const ops: { path: string; method: string; op: Operation }[] = []
    for (const [path, methods] of Object.entries(doc.paths)) {
      if (path === '/exit') continue // stops the service; debug-only anyway
      for (const [method, op] of Object.entries(methods)) ops.push({ path, method, op })
    }
    // Destructive calls last, so that the reads still find the seeded tasks.
    const destructive = (o: { path: string; method: string }) => o.method === 'delete' || /\/(delete|reschedule|reboot)\//.test(o.path)
    ops.sort((a, b) => Number(destructive(a)) - Number(destructive(b)))
    const failures: string[] = []
    let sent = 0
    for (const { path, method, op } of ops) {
      for (const req of requestsFor(path, method, op)) {
        sent++
        const failure = await check(req, op)
        if (failure) failures.push(failure)
      }
    }
    expect(sent).toBeGreaterThan(1000)
    expect(failures.slice(0, 40)).toEqual([])
  }, 120_000)
})
