// The indicators of one report, read once: the names, addresses and requests of the network, the
// dropped files, the signatures' names, and what the behavior summary says the run touched (files,
// command lines, mutexes, registry keys). The task search (core/search/report-terms.ts) makes its
// terms from this, and Compare (renderer/src/compare/facts.ts) its network and dropped lists.
//
// The report comes from a hostile guest, or from a server we do not control (Cuckoo 2, an older
// Aviary): every key may be missing or of another type, every list huge. So each list keeps at
// most INDICATOR_CAPS[list] distinct entries, the first ones seen, and counts what it left out;
// strings are cut to MAX_INDICATOR_TEXT. A number where a name is expected is read as text (as the
// report views read it); lists keep their strings only.
import { isObj, obj, objs, valueAt, type Obj } from './report-access'

/** Distinct entries kept per list: the one set of caps of search and Compare. */
export const INDICATOR_CAPS = {
  domains: 3000, addresses: 1000, http: 2000, urls: 2000, signatures: 1000, dropped: 1500,
  files: 3000, commands: 1000, mutexes: 1000, keys: 3000
} as const
export type IndicatorList = keyof typeof INDICATOR_CAPS

/** Longest string kept (a URL, a path, a command line); longer ones are cut. */
export const MAX_INDICATOR_TEXT = 2000
/** Details kept per entry (the IPs of a domain, the ports of an address, the paths of a dropped file). */
const MAX_DETAILS = 20
/** Distinct values left out that are counted one by one; beyond, `over` says "more than that". */
export const LEFT_OUT_COUNTED = 100_000

export interface DomainIndicator { name: string; ips: string[] }
export interface AddressIndicator {
  ip: string
  ports: string[]
  /** A flow went to it (tcp, udp, hosts, a proxied request), not only a DNS answer naming it. */
  contacted: boolean
}
export interface HttpIndicator { method: string; url: string; statuses: string[]; sources: string[]; userAgent: string }
export interface DroppedIndicator {
  sha256: string; md5: string; sha1: string
  names: string[]; paths: string[]; urls: string[]
  size: number | null; type: string; count: number
}
export interface SignatureIndicator { name: string; families: string[] }

/** A list of distinct entries, at most `cap`, with what it turned away. */
export class Capped<T> {
  readonly map = new Map<string, T>()
  readonly leftOut = new Set<string>()
  over = false
  constructor(readonly cap: number) {}
  /** The entry for `key`: the one kept, a new one from `make`, or undefined when the list is full. */
  at(key: string, make: () => T): T | undefined {
    const known = this.map.get(key)
    if (known !== undefined) return known
    if (this.map.size >= this.cap) {
      if (this.leftOut.size < LEFT_OUT_COUNTED) this.leftOut.add(key)
      else if (!this.leftOut.has(key)) this.over = true
      return undefined
    }
    const made = make()
    this.map.set(key, made)
    return made
  }
  values(): T[] { return [...this.map.values()] }
}

export interface Indicators {
  domains: Capped<DomainIndicator>
  addresses: Capped<AddressIndicator>
  http: Capped<HttpIndicator>
  /** URLs met in the run (requested, fetched, the URL task's own). */
  urls: Capped<string>
  /** URLs written in the sample, its dropped files and its PDF actions and scripts (not met). */
  writtenUrls: Capped<string>
  signatures: Capped<SignatureIndicator>
  dropped: Capped<DroppedIndicator>
  /** Paths of files and folders the run opened, wrote, read, deleted, moved, loaded. */
  files: Capped<string>
  commands: Capped<string>
  mutexes: Capped<string>
  /** Registry keys and values opened, read, written or deleted. */
  keys: Capped<string>
}

const cut = (s: string, max = MAX_INDICATOR_TEXT): string => (s.length > max ? s.slice(0, max) : s)

function text(o: Obj, key: string): string {
  const v = o[key]
  return typeof v === 'string' ? cut(v) : typeof v === 'number' && Number.isFinite(v) ? String(v) : ''
}

function texts(root: unknown, ...keys: string[]): string[] {
  const v = valueAt(root, keys)
  if (!Array.isArray(v)) return []
  const out: string[] = []
  for (const x of v) if (typeof x === 'string') out.push(cut(x))
  return out
}

function number(o: Obj, key: string): number | null {
  const v = o[key]
  return typeof v === 'number' && Number.isFinite(v) ? v : null
}

const addTo = (list: string[], v: string): void => { if (v !== '' && list.length < MAX_DETAILS && !list.includes(v)) list.push(v) }

/** The host of a Host header or URL authority: without its port or brackets. */
function hostOf(host: string): string {
  const h = host.trim()
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') > 0 ? h.indexOf(']') : undefined)
  const colon = h.indexOf(':')
  return colon >= 0 && h.indexOf(':', colon + 1) < 0 ? h.slice(0, colon) : h
}

function urlHost(url: string): string {
  try {
    return new URL(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url) ? url : `http://${url}`).hostname.replace(/^\[|\]$/g, '')
  } catch {
    return ''
  }
}

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/
/** Written as an address (IPv4 dotted, or IPv6 with a colon): kept as an address, never as a domain. */
const looksLikeIp = (s: string): boolean => IPV4.test(s) || (s.includes(':') && /^[0-9A-Fa-f:.]+$/.test(s))
/** Reverse-lookup names: in every run that resolves anything, never what an analyst looks for. */
const ARPA = /\.(?:in-addr|ip6)\.arpa\.?$/i
const domainKey = (d: string): string => d.trim().replace(/\.+$/, '').toLowerCase()

/** The summary keys of Cuckoo 2's behavior summary that name files and folders. */
const FILE_KEYS = [
  'file_created', 'file_written', 'file_deleted', 'file_recreated', 'file_moved', 'file_copied', 'file_opened', 'file_read',
  'file_exists', 'file_failed', 'directory_created', 'directory_removed', 'directory_enumerated', 'dll_loaded', 'downloads_file'
]
const KEY_KEYS = ['regkey_written', 'regkey_deleted', 'regkey_opened', 'regkey_read']

/** Cuckoo's file_moved/file_copied entries are [from, to] pairs; others are strings. */
function summaryValues(report: unknown, key: string): string[] {
  const v = valueAt(report, ['behavior', 'summary', key])
  if (!Array.isArray(v)) return []
  const out: string[] = []
  for (const x of v) {
    if (typeof x === 'string') out.push(cut(x))
    else if (Array.isArray(x)) for (const y of x) if (typeof y === 'string') out.push(cut(y))
  }
  return out
}

/** Reads the indicators of a report.json of any origin and shape. Never throws. */
export function readIndicators(report: unknown): Indicators {
  const c = INDICATOR_CAPS
  const ind: Indicators = {
    domains: new Capped(c.domains), addresses: new Capped(c.addresses), http: new Capped(c.http), urls: new Capped(c.urls),
    writtenUrls: new Capped(c.urls), signatures: new Capped(c.signatures), dropped: new Capped(c.dropped),
    files: new Capped(c.files), commands: new Capped(c.commands), mutexes: new Capped(c.mutexes), keys: new Capped(c.keys)
  }
  const address = (s: string, contacted: boolean): AddressIndicator | undefined => {
    const ip = s.trim().replace(/^\[|\]$/g, '')
    if (ip === '' || !looksLikeIp(ip)) return undefined
    const a = ind.addresses.at(ip, () => ({ ip, ports: [], contacted }))
    if (a !== undefined && contacted) a.contacted = true
    return a
  }
  const domain = (s: string): DomainIndicator | undefined => {
    const name = s.trim()
    if (name === '' || ARPA.test(name)) return undefined
    if (looksLikeIp(name.replace(/^\[|\]$/g, ''))) { address(name, false); return undefined }
    const key = domainKey(name)
    return key === '' ? undefined : ind.domains.at(key, () => ({ name: key, ips: [] }))
  }
  const resolved = (d: DomainIndicator | undefined, ip: string): void => {
    if (ip === '') return
    address(ip, false)
    if (d !== undefined) addTo(d.ips, cut(ip, 100))
  }
  const met = (u: string): void => {
    if (u.trim() === '') return
    ind.urls.at(u, () => u)
    const h = urlHost(u)
    if (h !== '') domain(h)
  }

  const net = obj(report, 'network')
  // Names first (the order a cap keeps): what DNS answered, then what was asked, then what else named a host.
  for (const d of objs(net, 'domains')) resolved(domain(text(d, 'domain')), text(d, 'ip'))
  for (const q of objs(net, 'dns')) {
    const d = domain(text(q, 'request'))
    for (const a of objs(q, 'answers')) if (/^(A|AAAA)$/i.test(text(a, 'type'))) resolved(d, text(a, 'data'))
  }
  for (const t of objs(net, 'tls')) { domain(text(t, 'sni') || text(t, 'server_name')); address(text(t, 'dst'), true) }
  const hosts = Array.isArray(net.hosts) ? net.hosts : []
  for (const h of hosts) address(typeof h === 'string' ? h : isObj(h) ? text(h, 'ip') : '', true)
  for (const proto of ['tcp', 'udp'] as const) {
    for (const f of objs(net, proto)) {
      const a = address(text(f, 'dst'), true)
      const port = number(f, 'dport')
      if (a !== undefined && port !== null) addTo(a.ports, `${proto}/${port}`)
    }
  }
  const dead = net.dead_hosts
  if (Array.isArray(dead)) for (const d of dead) if (Array.isArray(d) && typeof d[0] === 'string') address(d[0], true)

  const request = (method: string, url: string, status: unknown, source: string, userAgent: string): void => {
    if (url === '') return
    met(url)
    const m = cut(method.toUpperCase() || '?', 20)
    const e = ind.http.at(`${m} ${url}`, () => ({ method: m, url, statuses: [], sources: [], userAgent: cut(userAgent, 300) }))
    if (e === undefined) return
    if (typeof status === 'number' || typeof status === 'string') addTo(e.statuses, cut(String(status), 20))
    addTo(e.sources, source)
    if (e.userAgent === '' && userAgent !== '') e.userAgent = cut(userAgent, 300)
  }
  for (const h of objs(net, 'http')) {
    const uri = text(h, 'uri')
    const host = text(h, 'host')
    const port = number(h, 'port')
    if (host !== '') domain(hostOf(host))
    const url = /^https?:\/\//i.test(uri) ? uri : host === '' ? uri || text(h, 'path')
      : `http://${host}${port !== null && port !== 80 ? `:${port}` : ''}${text(h, 'path') || uri}`
    request(text(h, 'method'), url, h.status, 'capture', text(h, 'user-agent'))
  }
  for (const [key, protocol] of [['http_ex', 'http'], ['https_ex', 'https']] as const) {
    for (const x of objs(net, key)) {
      // Aviary gives the full URI; Cuckoo's is the request line's target (its `path` is where the body was saved).
      const uri = text(x, 'uri')
      const host = text(x, 'host')
      if (host !== '') domain(hostOf(host))
      address(text(x, 'dst'), true)
      const url = /^https?:\/\//i.test(uri) || host === '' ? uri : `${text(x, 'protocol') || protocol}://${host}${uri.startsWith('/') ? '' : '/'}${uri}`
      request(text(x, 'method'), url, x.status, `proxy (${key})`, '')
    }
  }
  // What the guest's own monitor saw (a Linux guest's connect() calls, a Windows guest's APIs).
  for (const s of summaryValues(report, 'resolves_host')) domain(s)
  for (const s of summaryValues(report, 'connects_host')) domain(s)
  for (const s of summaryValues(report, 'connects_ip')) address(s, true)
  for (const s of summaryValues(report, 'fetches_url')) met(s)
  const target = obj(report, 'target')
  if (text(target, 'category') === 'url') met(text(target, 'url'))

  // URLs written in the sample and in the files it dropped (as URLs only: a domain says the run met that name).
  const written = (u: string): void => { if (u.trim() !== '') ind.writtenUrls.at(u, () => u) }
  for (const u of texts(target, 'file', 'urls')) written(u)
  for (const p of objs(obj(report, 'static'), 'pdf')) {
    for (const u of texts(p, 'urls')) written(u)
    for (const js of objs(p, 'javascript')) for (const u of texts(js, 'urls')) written(u)
  }

  for (const s of objs(report, 'signatures')) {
    const name = cut(text(s, 'name'), 300)
    if (name === '') continue
    const e = ind.signatures.at(name, () => ({ name, families: [] }))
    if (e !== undefined) for (const f of texts(s, 'families')) addTo(e.families, cut(f, 300))
  }

  for (const d of objs(report, 'dropped')) {
    for (const u of texts(d, 'urls')) written(u)
    const sha256 = cut(text(d, 'sha256').toLowerCase(), 128)
    const md5 = cut(text(d, 'md5').toLowerCase(), 64)
    const key = sha256 || (md5 !== '' ? `md5 ${md5}` : '')
    if (key === '') continue
    const e = ind.dropped.at(key, () => ({
      sha256, md5, sha1: cut(text(d, 'sha1').toLowerCase(), 80), names: [], paths: [], urls: [], size: number(d, 'size'), type: cut(text(d, 'type'), 300), count: 0
    }))
    if (e === undefined) continue
    e.count++
    addTo(e.names, cut(text(d, 'name'), 300))
    addTo(e.paths, text(d, 'filepath') || text(d, 'path'))
    for (const u of texts(d, 'urls')) addTo(e.urls, u)
  }

  for (const k of FILE_KEYS) for (const f of summaryValues(report, k)) if (f.trim() !== '') ind.files.at(f, () => f)
  for (const d of ind.dropped.values()) for (const p of d.paths) ind.files.at(p, () => p)
  for (const line of summaryValues(report, 'command_line')) if (line.trim() !== '') ind.commands.at(line, () => line)
  for (const p of [...objs(report, 'behavior', 'processes'), ...objs(report, 'behavior', 'generic')]) {
    const line = text(p, 'command_line')
    if (line.trim() !== '') ind.commands.at(line, () => line)
  }
  for (const m of summaryValues(report, 'mutex')) if (m.trim() !== '') ind.mutexes.at(m, () => m)
  for (const k of KEY_KEYS) for (const r of summaryValues(report, k)) if (r.trim() !== '') ind.keys.at(r, () => r)
  return ind
}

/** The lists that reached their cap: how many were kept and left out (`over`: more than that). */
export function cappedLists(ind: Indicators): Partial<Record<keyof Indicators, { kept: number; leftOut: number; over: boolean }>> {
  const out: Partial<Record<keyof Indicators, { kept: number; leftOut: number; over: boolean }>> = {}
  for (const [list, c] of Object.entries(ind) as [keyof Indicators, Capped<unknown>][]) {
    if (c.leftOut.size > 0) out[list] = { kept: c.map.size, leftOut: c.leftOut.size, over: c.over }
  }
  return out
}
