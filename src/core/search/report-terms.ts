// The terms of a report that the task search finds it by (db/task-terms.repository.ts keeps them):
// domains with their parent domains, IP addresses, URLs (met in the run, or written in the sample,
// its dropped files and its PDF actions and scripts), signature names and families with their
// starts, dropped files' hashes, and what the behavior summary says the run touched: files (path
// and name), command lines (whole, and the program), mutexes and registry keys.
//
// The report is read by the one reader of indicators (shared/report-indicators.ts, which Compare
// reads too), with its caps: each list keeps its first INDICATOR_CAPS[list] distinct values, the
// rest counted and said in the task's timeline. A term is at most MAX_TERM_LENGTH characters
// (longer URLs are cut, and a query is cut alike, so the start still finds it), and what cannot
// be a domain, an address or a hash is left out.
import {
  alertTerms, commandTerms, domainAndParents, fileTerms, normalizeDomain, normalizeHash, normalizeIp, normalizeSig, normalizeText, normalizeUrl,
  sigAndParents, type IndexedKind
} from '../../shared/search-query'
import { cappedLists, readIndicators, type Indicators } from '../../shared/report-indicators'
import { obj, objs, str, type Obj } from '../reporting/report-view'

/** IDS alerts whose terms are indexed per task. */
const ALERT_TERMS_MAX = 1000

export { LEFT_OUT_COUNTED } from '../../shared/report-indicators'

export interface IndexedTerm {
  kind: IndexedKind
  term: string
}

export interface ReportTerms {
  terms: IndexedTerm[]
  /** Lists of the report that reached their cap: the values kept, how many distinct ones did not fit (`over`: more than that). */
  capped: ReturnType<typeof cappedLists>
}

export function reportTerms(report: unknown): ReportTerms {
  const ind = readIndicators(report)
  const seen = new Set<string>()
  const terms: IndexedTerm[] = []
  const add = (kind: IndexedKind, values: readonly string[]): void => {
    for (const term of values) {
      const key = `${kind}\n${term}`
      if (seen.has(key)) continue
      seen.add(key)
      terms.push({ kind, term })
    }
  }
  const domain = (s: string): void => {
    const d = normalizeDomain(s)
    if (d !== null) add('domain', domainAndParents(d))
  }
  for (const d of ind.domains.values()) domain(d.name)
  for (const a of ind.addresses.values()) {
    const ip = normalizeIp(a.ip)
    if (ip !== null) add('ip', [ip])
  }
  for (const u of [...ind.urls.values(), ...ind.writtenUrls.values()]) add('url', normalizeUrl(u))
  for (const s of ind.signatures.values()) {
    for (const name of [s.name, ...s.families]) {
      const n = normalizeSig(name)
      if (n !== null) add('sig', sigAndParents(n))
    }
  }
  // The IDS's alerts (alert: in a query): a sid and the signature's text with its starts, for at
  // most ALERT_TERMS_MAX alerts (the IDS step caps its alerts too).
  let alerts = 0
  for (const a of objs(obj(report as Obj, 'suricata'), 'alerts')) {
    if (alerts++ >= ALERT_TERMS_MAX) break
    const sid = a.sid
    add('sig', alertTerms(typeof sid === 'number' ? sid : null, str(a, 'signature')))
  }
  for (const d of ind.dropped.values()) {
    for (const h of [d.md5, d.sha1, d.sha256]) {
      const n = normalizeHash(h)
      if (n !== null) add('hash', [n])
    }
    for (const name of d.names) add('file', fileTerms(name))
  }
  for (const f of ind.files.values()) add('file', fileTerms(f))
  for (const c of ind.commands.values()) add('command', commandTerms(c))
  for (const m of ind.mutexes.values()) { const n = normalizeText(m); if (n !== null) add('mutex', [n]) }
  for (const k of ind.keys.values()) { const n = normalizeText(k); if (n !== null) add('key', [n]) }
  return { terms, capped: cappedLists(ind) }
}

const LIST_WORDS: Record<keyof Indicators, string> = {
  domains: 'domains', addresses: 'addresses', http: 'HTTP requests', urls: 'URLs', writtenUrls: 'URLs written in files',
  signatures: 'signatures', dropped: 'dropped files', files: 'file paths', commands: 'command lines', mutexes: 'mutexes', keys: 'registry keys'
}

/**
 * The caps reached, as a sentence for the task's timeline: "search index: 3,000 domains kept,
 * 997,000 more left out".
 */
export function capNote(t: ReportTerms): string | null {
  const parts = (Object.entries(t.capped) as [keyof Indicators, { kept: number; leftOut: number; over: boolean }][]).map(([list, c]) =>
    `${c.kept.toLocaleString('en-US')} ${LIST_WORDS[list]} kept, ${c.over ? 'over ' : ''}${c.leftOut.toLocaleString('en-US')} more left out`)
  return parts.length === 0 ? null : `search index: ${parts.join('; ')}`
}
