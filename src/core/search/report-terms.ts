// The terms of a report that the task search finds it by (db/task-terms.repository.ts keeps them):
// domains with their parent domains, IP addresses, URLs (met in the run, or written in the sample,
// its dropped files and its PDF actions and scripts), signature names and families with their starts, dropped files' hashes. Read from the report object processing has just built, through the
// defensive accessors (a module that failed leaves its section empty or odd, never a throw).
//
// Everything here comes from the guest, so it is bounded: each kind keeps at most CAPS[kind] terms
// (a hostile run can resolve a million names; the first ones seen are kept, the rest counted and
// said in the task's timeline), a term is at most MAX_TERM_LENGTH characters (longer URLs are cut,
// and a query is cut alike, so the start still finds it), and what cannot be a domain, an address
// or a hash is left out.
import {
  alertTerms, domainAndParents, normalizeDomain, normalizeHash, normalizeIp, normalizeSig, normalizeUrl, sigAndParents,
  type IndexedKind
} from '../../shared/search-query'
import { obj, objs, str, strs, summary, type Obj } from '../reporting/report-view'

/** Terms kept per task and kind (a domain counts with its parents, a URL with its query-less form). */
export const TERM_CAPS: Readonly<Record<IndexedKind, number>> = { domain: 3000, ip: 1000, url: 2000, sig: 1000, hash: 1500 }

export interface IndexedTerm {
  kind: IndexedKind
  term: string
}

export interface ReportTerms {
  terms: IndexedTerm[]
  /** Kinds that reached their cap: the terms kept, how many distinct values did not fit (`over`: more than that). */
  capped: Partial<Record<IndexedKind, { kept: number; leftOut: number; over: boolean }>>
}

/** Distinct values left out that are counted one by one; beyond, the note says "over". */
export const LEFT_OUT_COUNTED = 100_000

class Bucket {
  readonly terms = new Set<string>()
  readonly leftOut = new Set<string>()
  over = false
  constructor(private readonly cap: number) {}

  /** Adds a value's terms, all or none: a domain is never kept without its parents. */
  add(expanded: readonly string[]): void {
    let fresh = 0
    for (const t of expanded) if (!this.terms.has(t)) fresh++
    if (fresh === 0) return
    if (this.terms.size + fresh > this.cap) {
      const value = expanded[0]!
      if (this.leftOut.size < LEFT_OUT_COUNTED) this.leftOut.add(value)
      else if (!this.leftOut.has(value)) this.over = true
      return
    }
    for (const t of expanded) this.terms.add(t)
  }
}

/** The host of an HTTP Host header or URL authority: without its port or brackets. */
function hostOf(host: string): string {
  const h = host.trim()
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') > 0 ? h.indexOf(']') : undefined)
  const colon = h.indexOf(':')
  return colon >= 0 && h.indexOf(':', colon + 1) < 0 ? h.slice(0, colon) : h
}

function urlHost(url: string): string {
  try {
    return new URL(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url) ? url : `http://${url}`).hostname
  } catch {
    return ''
  }
}

/** Reverse-lookup names: in every run that resolves anything, never what an analyst looks for. */
const ARPA = /\.(?:in-addr|ip6)\.arpa\.?$/i

export function reportTerms(report: unknown): ReportTerms {
  const r = (report !== null && typeof report === 'object' ? report : {}) as Obj
  const buckets = Object.fromEntries(Object.entries(TERM_CAPS).map(([k, cap]) => [k, new Bucket(cap)])) as Record<IndexedKind, Bucket>
  const ip = (s: string): boolean => {
    const a = normalizeIp(s)
    if (a !== null) buckets.ip.add([a])
    return a !== null
  }
  const domain = (s: string): void => {
    if (ARPA.test(s) || ip(s)) return
    const d = normalizeDomain(s)
    if (d !== null) buckets.domain.add(domainAndParents(d))
  }
  const host = (s: string): void => { if (s !== '') domain(hostOf(s)) }
  const url = (s: string): void => {
    const forms = normalizeUrl(s)
    if (forms.length > 0) buckets.url.add(forms)
    host(urlHost(s))
  }

  const net = obj(r, 'network')
  // Names first (the order a cap keeps): what DNS answered, then what was asked, then what else named a host.
  for (const d of objs(net, 'domains')) { domain(str(d, 'domain')); ip(str(d, 'ip')) }
  for (const q of objs(net, 'dns')) {
    domain(str(q, 'request'))
    for (const a of objs(q, 'answers')) if (str(a, 'type') === 'A' || str(a, 'type') === 'AAAA') ip(str(a, 'data'))
  }
  for (const t of objs(net, 'tls')) { domain(str(t, 'sni')); ip(str(t, 'dst')) }
  for (const h of strs(net, 'hosts')) ip(h)
  for (const proto of ['tcp', 'udp']) for (const f of objs(net, proto)) ip(str(f, 'dst'))
  const dead = (net as Obj)['dead_hosts']
  if (Array.isArray(dead)) for (const d of dead) if (Array.isArray(d) && typeof d[0] === 'string') ip(d[0])
  for (const h of objs(net, 'http')) { url(str(h, 'uri')); host(str(h, 'host')) }
  for (const key of ['http_ex', 'https_ex']) {
    for (const h of objs(net, key)) { url(str(h, 'uri')); host(str(h, 'host')); ip(str(h, 'dst')) }
  }
  // What the guest's own monitor saw (a Linux guest's connect() calls, a Windows guest's APIs).
  for (const s of summary(r, 'resolves_host')) domain(s)
  for (const s of summary(r, 'connects_host')) domain(s)
  for (const s of summary(r, 'connects_ip')) ip(s)
  for (const s of summary(r, 'fetches_url')) url(s)
  // A URL task's own URL.
  const target = obj(r, 'target')
  if (str(target, 'category') === 'url') url(str(target, 'url'))
  // URLs written in the sample and in the files it dropped: url: finds them too (as URLs only: a
  // domain term says the run met that name, which a URL in a file does not).
  const written = (u: string): void => { const forms = normalizeUrl(u); if (forms.length > 0) buckets.url.add(forms) }
  for (const u of strs(target, 'file', 'urls')) written(u)
  for (const d of objs(r, 'dropped')) for (const u of strs(d, 'urls')) written(u)
  for (const p of objs(obj(r, 'static'), 'pdf')) {
    for (const u of strs(p, 'urls')) written(u)
    for (const js of objs(p, 'javascript')) for (const u of strs(js, 'urls')) written(u)
  }

  for (const s of objs(r, 'signatures')) {
    for (const name of [str(s, 'name'), ...strs(s, 'families')]) {
      const n = normalizeSig(name)
      if (n !== null) buckets.sig.add(sigAndParents(n))
    }
  }
  // The IDS's alerts (alert: in a query), after the signatures' names, which the cap keeps first.
  for (const a of objs(obj(r, 'suricata'), 'alerts')) {
    const sid = a.sid
    const terms = alertTerms(typeof sid === 'number' ? sid : null, str(a, 'signature'))
    if (terms.length > 0) buckets.sig.add(terms)
  }
  for (const d of objs(r, 'dropped')) {
    for (const key of ['md5', 'sha1', 'sha256']) {
      const h = normalizeHash(str(d, key))
      if (h !== null) buckets.hash.add([h])
    }
  }

  const terms: IndexedTerm[] = []
  const capped: ReportTerms['capped'] = {}
  for (const kind of Object.keys(buckets) as IndexedKind[]) {
    const b = buckets[kind]
    for (const term of b.terms) terms.push({ kind, term })
    if (b.leftOut.size > 0) capped[kind] = { kept: b.terms.size, leftOut: b.leftOut.size, over: b.over }
  }
  return { terms, capped }
}

const KIND_WORDS: Record<IndexedKind, string> = { domain: 'domains', ip: 'addresses', url: 'URLs', sig: 'signature names', hash: 'hashes' }

/**
 * The caps reached, as a sentence for the task's timeline: "search index: 2,999 domain terms kept,
 * 997,000 more domains left out".
 */
export function capNote(t: ReportTerms): string | null {
  const parts = (Object.entries(t.capped) as [IndexedKind, { kept: number; leftOut: number; over: boolean }][]).map(([kind, c]) =>
    `${c.kept.toLocaleString('en-US')} ${kind} terms kept, ${c.over ? 'over ' : ''}${c.leftOut.toLocaleString('en-US')} more ${KIND_WORDS[kind]} left out`)
  return parts.length === 0 ? null : `search index: ${parts.join('; ')}`
}
