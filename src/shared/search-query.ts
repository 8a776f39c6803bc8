// The task search's query language (GET /aviary/tasks?q=), written once: the service parses it to
// search, processing normalizes report terms with the same functions (so a query and the term it
// must find are always written alike), and the UI reads the kinds for its picker and help.
//
//   evil.com                  plain text: any kind (below) that it can be
//   domain:evil.com           that domain or any of its subdomains
//   ip:1.2.3.4                an address contacted or resolved (IPv4 or IPv6, exact)
//   url:evil.com/gate.php     a URL requested (scheme optional; with or without its query)
//   sig:antivm                a signature name, or its start at '_' (antivm finds antivm_disk)
//   alert:2019401             an IDS alert of the run (report.suricata): its sid, or its signature
//   alert:"ET TROJAN"         text or the text's start at a word (any case)
//   hash:d41d8cd9             the sample's or a dropped file's md5/sha1/sha256 (sample: sha512 too),
//                             whole or its first 6 or more hex digits
//   name:invoice              part of the file name or URL submitted, or of the archive it came
//                             from (any case)
//   file:crontab.txt          a file the run touched or dropped: its whole path or its name (any case)
//   command:"curl -o x"       a command line the run executed: whole, or its program (path or name)
//   mutex:Global\\x  key:HKEY_…  a mutex the run used; a registry key it opened, read, wrote or deleted
//   tag:win7  machine:vm1     a tag of the task; the machine asked for or that ran it (any case)
//   id:42                     the task
//   "two words"               quotes keep blanks in one term: name:"setup 2.exe" (one left open
//                             runs to the end)
// Terms separated by blanks must all match. Kinds are any case, and Cuckoo's and CAPE's spellings
// are taken too (signature:, signame:, path:, md5:, …: KIND_ALIASES). A `word:` that is no kind is
// refused (SearchSyntaxError names it), unless it cannot be one: a URL (`http://…`), an IPv6
// address (`fe80::1`, `dead:beef::1`), a Windows path (`C:\…`, one letter).

export const SEARCH_KINDS = ['domain', 'ip', 'url', 'sig', 'alert', 'hash', 'name', 'file', 'command', 'mutex', 'key', 'tag', 'machine', 'id'] as const
export type SearchKind = (typeof SEARCH_KINDS)[number]
/** The kinds processing writes into the index from a report (the others are columns of tasks). */
export const INDEXED_KINDS = ['domain', 'ip', 'url', 'sig', 'hash', 'file', 'command', 'mutex', 'key'] as const
export type IndexedKind = (typeof INDEXED_KINDS)[number]

/** What each kind finds, in words (the UI's picker and help, and the API description). */
export const SEARCH_KIND_HELP: Record<SearchKind, string> = {
  domain: 'a domain the analysis resolved or contacted, or any of its subdomains',
  ip: 'an IP address contacted or resolved (exact)',
  url: 'a URL requested or submitted; scheme optional, with or without its query',
  sig: "a signature's name or family, or its start up to a '_'",
  alert: "an IDS alert: its sid, or its signature's text or the text's start at a word, any case",
  hash: "the md5, sha1 or sha256 (sample: sha512 too) of the sample or of a dropped file, or its first 6+ hex digits",
  name: 'part of the file name or URL submitted, or of the archive it came from, any case',
  file: 'a file the run opened, wrote, deleted or dropped: its whole path or its name, any case',
  command: 'a command line the run executed: the whole line, or its program (path or name), any case',
  mutex: 'a mutex the run created or opened, any case',
  key: 'a registry key or value the run opened, read, wrote or deleted (whole path), any case',
  tag: 'a tag of the task, any case',
  machine: 'the machine asked for, or the one that ran the analysis, any case',
  id: 'a task id'
}

export const MAX_SEARCH_TERMS = 8
/** The longest term kept in the index and compared in a query (longer URLs are cut to it). */
export const MAX_TERM_LENGTH = 512

export interface SearchTerm {
  /** `any`: plain text, matched as every kind it can be. */
  kind: SearchKind | 'any'
  /** As written, without quotes, trimmed. */
  value: string
}

/** A query that cannot be searched; the message says what is wrong (a 400 names `q`). */
export class SearchSyntaxError extends Error {}

const KIND_SET = new Set<string>(SEARCH_KINDS)

/**
 * Other spellings of the kinds: Cuckoo 2's and CAPE's web search terms (signature, signame, file,
 * command, mutex, key, md5…sha512, machinename/machinelabel, tags_tasks), and plain words.
 */
export const KIND_ALIASES: Readonly<Record<string, SearchKind>> = {
  signature: 'sig', signame: 'sig', detections: 'sig',
  path: 'file', filename: 'file', filepath: 'file',
  cmd: 'command', cmdline: 'command', commandline: 'command',
  regkey: 'key', registry: 'key',
  md5: 'hash', sha1: 'hash', sha256: 'hash', sha512: 'hash',
  host: 'domain', dns: 'domain',
  machinename: 'machine', machinelabel: 'machine',
  tags: 'tag', tags_tasks: 'tag', target: 'name'
}

/** The kind a written `word:` means (any case, aliases too), or undefined. */
export function kindOf(word: string): SearchKind | undefined {
  const w = word.toLowerCase()
  return KIND_SET.has(w) ? (w as SearchKind) : KIND_ALIASES[w]
}

/** Splits a query into its terms. Throws SearchSyntaxError for what it cannot mean. */
export function parseSearch(q: string): SearchTerm[] {
  const terms: SearchTerm[] = []
  let i = 0
  const n = q.length
  while (i < n) {
    while (i < n && isBlank(q[i]!)) i++
    if (i >= n) break
    let kind: SearchTerm['kind'] = 'any'
    const prefix = /^([A-Za-z][A-Za-z0-9_]*):/.exec(q.slice(i, i + 20))
    if (prefix) {
      const known = kindOf(prefix[1]!)
      const after = q[i + prefix[0].length]
      if (known !== undefined) {
        kind = known
        i += prefix[0].length
      } else if (notAKind(prefix[1]!, after)) {
        // plain text: a URL, an IPv6 address, a drive letter
      } else {
        throw new SearchSyntaxError(`'${prefix[1]}:' is not a search kind (kinds: ${SEARCH_KINDS.join(', ')})`)
      }
    }
    let value: string
    if (q[i] === '"') {
      // A quote left open runs to the end (a pasted name with one quote in it still searches).
      const end = q.indexOf('"', i + 1)
      value = q.slice(i + 1, end < 0 ? n : end)
      i = end < 0 ? n : end + 1
    } else {
      const start = i
      while (i < n && !isBlank(q[i]!)) i++
      value = q.slice(start, i)
    }
    value = value.trim()
    if (value === '') {
      if (kind === 'any') continue // "" alone
      throw new SearchSyntaxError(`${kind}: wants a value (${kind}:…)`)
    }
    terms.push({ kind, value })
    if (terms.length > MAX_SEARCH_TERMS) throw new SearchSyntaxError(`at most ${MAX_SEARCH_TERMS} terms`)
  }
  return terms
}

/** Writes terms back as a query (quoted where they hold blanks or quotes cannot be). */
export function formatSearch(terms: readonly SearchTerm[]): string {
  return terms.map((t) => `${t.kind === 'any' ? '' : `${t.kind}:`}${/\s/.test(t.value) ? `"${t.value.replace(/"/g, '')}"` : t.value}`).join(' ')
}

/** A `word:` that is text, not a misspelt kind: a scheme (`http://`), IPv6 (`fe80::1`, hex words), a drive letter (`C:`). */
function notAKind(word: string, after: string | undefined): boolean {
  return word.length === 1 || after === '/' || after === ':' || /^[0-9A-Fa-f]{1,4}$/.test(word) || /^[0-9]/.test(after ?? '')
}

function isBlank(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v' || c === '\u00a0'
}

// ---- normalization: the same for a report's values and a query's

/** C0/C1 controls and blanks: never part of a domain, an address or a hash. */
// eslint-disable-next-line no-control-regex -- control characters are what is refused
const CONTROL_OR_BLANK = /[\u0000-\u0020\u007f-\u009f]/u
const ASCII_PRINTABLE = /^[\u0021-\u007e]*$/
// eslint-disable-next-line no-control-regex -- control characters are what is refused
const C0 = /[\u0000-\u001f]/

function fold(s: string): string {
  const t = s.trim()
  return (ASCII_PRINTABLE.test(t) ? t : t.normalize('NFC')).toLowerCase()
}

/**
 * A domain in the form the index keeps: lower case, no trailing dot, an international name as
 * its ASCII (punycode) form; null when it cannot be a host name (blanks, controls, an address,
 * longer than DNS allows).
 */
export function normalizeDomain(s: string): string | null {
  let d = fold(s).replace(/\.+$/, '')
  if (d === '' || d.length > 253 || CONTROL_OR_BLANK.test(d) || d.includes('/')) return null
  if (!ASCII_PRINTABLE.test(d)) {
    try {
      const host = new URL(`http://${d}/`).hostname
      if (host !== '') d = host
    } catch { /* kept as it is: still found by the same text */ }
  }
  if (normalizeIp(d) !== null) return null
  return d.length > 253 ? null : d
}

/** The domain and each domain above it: a.b.evil.com → a.b.evil.com, b.evil.com, evil.com, com. */
export function domainAndParents(domain: string): string[] {
  const out = [domain]
  for (let at = domain.indexOf('.'); at >= 0 && at < domain.length - 1; at = domain.indexOf('.', at + 1)) {
    out.push(domain.slice(at + 1))
  }
  return out
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/

/** An IPv4 address without leading zeros, or an IPv6 address compressed in lower case; else null. */
export function normalizeIp(s: string): string | null {
  const t = s.trim()
  const v4 = IPV4.exec(t)
  if (v4) {
    const parts = v4.slice(1).map(Number)
    return parts.every((p) => p <= 255) ? parts.join('.') : null
  }
  const v6 = t.startsWith('[') && t.endsWith(']') ? t.slice(1, -1) : t
  if (!v6.includes(':') || v6.length > 45 || !/^[0-9A-Fa-f:.]+$/.test(v6)) return null
  try {
    return new URL(`http://[${v6}]/`).hostname.slice(1, -1)
  } catch {
    return null
  }
}

/**
 * A URL as the index keeps it, and without its query: no scheme, no fragment, lower case, the
 * host as a URL parser writes it, at most MAX_TERM_LENGTH characters. [] for an empty string.
 */
export function normalizeUrl(s: string): string[] {
  let t = s.trim()
  if (t === '' || CONTROL_OR_BLANK.test(t.replace(/ /g, ''))) return []
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(t)) t = `http://${t}`
  let full: string
  let bare: string
  try {
    const u = new URL(t)
    full = `${u.host}${u.pathname}${u.search}`
    bare = `${u.host}${u.pathname}`
  } catch {
    const raw = t.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//, '').replace(/#.*$/s, '')
    full = raw
    bare = raw.replace(/\?.*$/s, '')
  }
  const out = [fold(full).slice(0, MAX_TERM_LENGTH)]
  const b = fold(bare).slice(0, MAX_TERM_LENGTH)
  if (b !== out[0] && b !== '') out.push(b)
  return out[0] === '' ? [] : out
}

/** A signature name or family in lower case; null for an empty or overlong one. */
export function normalizeSig(s: string): string | null {
  const t = fold(s)
  return t === '' || t.length > 200 || C0.test(t) ? null : t
}

/** A name and its starts at each '_': antivm_generic_disk → antivm, antivm_generic, antivm_generic_disk. */
export function sigAndParents(name: string): string[] {
  const out: string[] = []
  for (let at = name.indexOf('_'); at > 0; at = name.indexOf('_', at + 1)) out.push(name.slice(0, at))
  out.push(name)
  return out
}

/**
 * IDS alerts are kept in the index as `sig` terms of their own namespace, `alert:<sid>` and
 * `alert:<text>` (the signature's text, lower case, blanks folded, and its starts at each word),
 * so that `alert:` needs no index of its own and never meets a signature's name.
 */
export const ALERT_TERM_PREFIX = 'alert:'

/** An alert's sid or signature text as its index term; null for what cannot be one. */
export function normalizeAlert(s: string): string | null {
  const t = fold(s).replace(/\s+/g, ' ').trim()
  return t === '' || t.length > 200 || C0.test(t) ? null : `${ALERT_TERM_PREFIX}${t}`
}

/** An alert's terms: its sid, its signature's text and the text's starts at each word (at most 12). */
export function alertTerms(sid: number | null, signature: string): string[] {
  const out: string[] = []
  if (sid !== null && Number.isSafeInteger(sid) && sid > 0) out.push(`${ALERT_TERM_PREFIX}${sid}`)
  const full = normalizeAlert(signature)
  if (full === null) return out
  const text = full.slice(ALERT_TERM_PREFIX.length)
  let starts = 0
  for (let at = text.indexOf(' '); at > 0 && starts < 12; at = text.indexOf(' ', at + 1), starts++) out.push(`${ALERT_TERM_PREFIX}${text.slice(0, at)}`)
  out.push(full)
  return out
}

/** Text of the behavior kinds (file, command, mutex, key) as the index keeps it: trimmed, any case, cut; null when empty or with a C0 control. */
export function normalizeText(s: string): string | null {
  const t = fold(s).slice(0, MAX_TERM_LENGTH)
  return t === '' || C0.test(t) ? null : t
}

/** The name at the end of a Windows or POSIX path ('' for a path that ends in a separator). */
export function baseName(path: string): string {
  const at = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'))
  return path.slice(at + 1)
}

/** A file's terms: its whole path and its name (file:crontab.txt finds /tmp/x/crontab.txt). */
export function fileTerms(path: string): string[] {
  const whole = normalizeText(path)
  if (whole === null) return []
  const name = normalizeText(baseName(path.trim()))
  return name !== null && name !== whole ? [whole, name] : [whole]
}

/** A command line's terms: the whole line, its program as written, and the program's name. */
export function commandTerms(line: string): string[] {
  const whole = normalizeText(line)
  if (whole === null) return []
  const t = line.trim()
  const program = t.startsWith('"') ? t.slice(1, t.indexOf('"', 1) > 0 ? t.indexOf('"', 1) : undefined) : t.split(/\s/)[0] ?? ''
  const out = [whole]
  for (const p of [program, baseName(program)]) {
    const n = normalizeText(p)
    if (n !== null && !out.includes(n)) out.push(n)
  }
  return out
}

/** A whole md5, sha1, sha256 or sha512 in lower case; else null. */
export function normalizeHash(s: string): string | null {
  const t = s.trim().toLowerCase()
  return /^(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{128})$/.test(t) ? t : null
}

/** A hash or the start of one, for a query: 6 to 128 hex digits in lower case; else null. */
export function hashPrefix(s: string): string | null {
  const t = s.trim().toLowerCase()
  return /^[0-9a-f]{6,128}$/.test(t) ? t : null
}

/** A host written as a URL (domain:https://evil.com/x) is its host; anything else as it is. */
export function hostIfUrl(v: string): string {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(v)) return v
  try {
    return new URL(v).hostname
  } catch {
    return v
  }
}

/** What is wrong with a term's value for its kind, in words (a 400 says it); null when nothing is. */
export function termProblem(t: SearchTerm): string | null {
  const v = t.value
  const got = `(got '${v.slice(0, 40)}')`
  switch (t.kind) {
    case 'id':
      return /^\d{1,15}$/.test(v) ? null : `id: wants a task id, a whole number ${got}`
    case 'hash':
      return hashPrefix(v) !== null ? null : `hash: wants an md5, sha1, sha256 or sha512, or its first 6 or more hex digits ${got}`
    case 'url':
      return normalizeUrl(v).length > 0 ? null : `url: wants a URL ${got}`
    case 'domain': {
      if (normalizeDomain(hostIfUrl(v)) !== null) return null
      const ip = normalizeIp(v)
      return ip !== null ? `domain: '${ip}' is an address: ip:${ip} finds it` : `domain: wants a domain name ${got}`
    }
    case 'ip':
      return normalizeIp(v) !== null ? null : `ip: wants an IPv4 or IPv6 address ${got}`
    case 'sig':
      return normalizeSig(v) !== null ? null : `sig: wants a signature name of at most 200 characters ${got}`
    case 'alert':
      return normalizeAlert(v) !== null ? null : `alert: wants a sid or an alert's text of at most 200 characters ${got}`
    case 'file':
    case 'command':
    case 'mutex':
    case 'key':
      return normalizeText(v) !== null ? null : `${t.kind}: wants text without control characters ${got}`
    default:
      return null
  }
}

/** Parses a query and checks each term's value against its kind; throws SearchSyntaxError for the first problem. */
export function checkSearch(q: string): SearchTerm[] {
  const terms = parseSearch(q)
  for (const t of terms) {
    const problem = termProblem(t)
    if (problem !== null) throw new SearchSyntaxError(problem)
  }
  return terms
}
