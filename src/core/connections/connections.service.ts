// Saved connections to remote Cuckoo-compatible instances and dispatchers. A connection is
// checked (probe.ts) before it is saved or changed, and its token never leaves the service: the
// API view only says whether there is one.
import { badRequest, notFound } from '../errors'
import type { ConnectionKind, ConnectionRow, ConnectionsRepository } from './connections.repository'
import { probeConnection } from './probe'
import { hasInvisible } from '../../shared/invisible'

export interface ConnectionView {
  id: number
  name: string
  url: string
  kind: ConnectionKind
  has_token: boolean
  created_on: string
}

export interface ConnectionInput {
  name?: unknown
  url?: unknown
  /** A string sets it; '' or null removes it; absent keeps it (on update). */
  token?: unknown
}

const MAX_NAME = 100
const MAX_URL = 2048
const MAX_TOKEN = 4096

export class ConnectionsService {
  constructor(
    private readonly repo: ConnectionsRepository,
    private readonly probe: (url: string, token: string | null) => Promise<ConnectionKind> = probeConnection
  ) {}

  list(): ConnectionView[] {
    return this.repo.list().map(toView)
  }

  view(id: number): ConnectionView {
    return toView(this.row(id))
  }

  /** The saved row with its token, for the proxy. */
  row(id: number): ConnectionRow {
    const row = this.repo.get(id)
    if (!row) throw notFound(`Connection ${id} not found`)
    return row
  }

  async create(input: ConnectionInput): Promise<ConnectionView> {
    const name = parseName(input.name)
    const url = parseUrl(input.url)
    const token = parseToken(input.token) ?? null
    const kind = await this.probe(url, token)
    return toView(this.repo.create({ name, url, kind, token }))
  }

  async update(id: number, input: ConnectionInput): Promise<ConnectionView> {
    const current = this.row(id)
    const name = input.name === undefined ? current.name : parseName(input.name)
    const url = input.url === undefined ? current.url : parseUrl(input.url)
    const newToken = parseToken(input.token)
    const token = newToken === undefined ? current.token : newToken
    // A new address or token is checked again (and the kind found again); a rename is not.
    const kind = url !== current.url || token !== current.token ? await this.probe(url, token) : current.kind
    const row = this.repo.update(id, { name, url, kind, token })
    if (!row) throw notFound(`Connection ${id} not found`)
    return toView(row)
  }

  delete(id: number): void {
    if (!this.repo.delete(id)) throw notFound(`Connection ${id} not found`)
  }
}

const toView = (r: ConnectionRow): ConnectionView => ({
  id: r.id, name: r.name, url: r.url, kind: r.kind, has_token: r.token !== null, created_on: r.created_on
})

function parseName(v: unknown): string {
  if (typeof v !== 'string' || v.trim() === '') throw badRequest('name', 'required; a name for the connection')
  const name = v.trim()
  if (name.length > MAX_NAME) throw badRequest('name', `at most ${MAX_NAME} characters`)
  // An invisible character (a bidi override, a zero-width space) would make a name lie about itself in the UI.
  if (hasInvisible(name)) throw badRequest('name', 'control and bidi characters, and other invisible ones, are not allowed')
  return name
}

/** An http(s) base URL without credentials, query or fragment, and without a trailing slash. */
function parseUrl(v: unknown): string {
  if (typeof v !== 'string' || v.trim() === '') throw badRequest('url', 'required; the http(s) address of the remote API, e.g. http://10.0.0.5:8090')
  if (v.length > MAX_URL) throw badRequest('url', `at most ${MAX_URL} characters`)
  let u: URL
  try {
    u = new URL(v.trim())
  } catch {
    throw badRequest('url', 'not a URL; expected e.g. http://10.0.0.5:8090')
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw badRequest('url', `must be http or https, not ${u.protocol.slice(0, 20)}`)
  if (u.username || u.password) throw badRequest('url', 'must not contain credentials; give the API token in the token field')
  if (u.search || u.hash) throw badRequest('url', 'must not have a query or fragment')
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`
}

/** undefined: not given; null: remove the token. */
function parseToken(v: unknown): string | null | undefined {
  if (v === undefined) return undefined
  if (v === null || v === '') return null
  if (typeof v !== 'string') throw badRequest('token', 'a string')
  if (v.length > MAX_TOKEN) throw badRequest('token', `at most ${MAX_TOKEN} characters`)
  // It goes into an Authorization header: visible ASCII only.
  if (!/^[\x21-\x7e]+$/.test(v)) throw badRequest('token', 'visible ASCII characters only, no spaces')
  return v
}
