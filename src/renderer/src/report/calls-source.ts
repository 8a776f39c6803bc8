// Where the calls view gets a process's API calls or system calls, by what the connection offers:
// - an Aviary service (local or remote) pages them: GET /aviary/tasks/<id>/calls lists the
//   processes that have calls (kept, dropped beyond the cap, counts per category and API), and
//   GET /aviary/tasks/<id>/calls/<pid>?offset&limit&category&api&q gives one filtered page;
// - a plain Cuckoo server or an offline archive has no such route: the calls come from the full
//   report's behavior.processes[].calls and are filtered here, in slices of a few milliseconds so
//   that a million calls never block the page.
// Whatever answers is untrusted (a hostile guest wrote the calls, a foreign server the JSON): every
// count is checked, lists are capped, and rows stay the objects they were (read cell by cell).
import { isObj, objs, type Obj } from './model'

export interface ProcessCalls {
  pid: number
  process_name: string
  /** Calls kept (and so pageable). */
  calls: number
  /** Calls seen beyond the cap, counted but not kept. */
  dropped: number
  categories: Record<string, number>
  apis: Record<string, number>
}

export interface CallsListing {
  /** 'service': pages from the server; 'report': filtered in the page from report.json. */
  origin: 'service' | 'report'
  /** From the report because the server has no pages of calls (404); absent offline, where there is no server. */
  unpaged?: true
  processes: ProcessCalls[]
}

export interface CallFilter {
  /** Categories to keep (none: all). */
  categories: readonly string[]
  /** One API name to keep ('' : all). */
  api: string
  /** Text to look for in the API, category, arguments and return value ('' : all). */
  q: string
}

export interface CallsPage {
  /** Calls matching the filter. */
  total: number
  offset: number
  /** The rows from `offset` on (at most the limit asked). */
  calls: Obj[]
}

export interface CallsSource {
  listing(signal?: AbortSignal): Promise<CallsListing>
  page(pid: number, filter: CallFilter, offset: number, limit: number, signal?: AbortSignal): Promise<CallsPage>
}

/** The contract's largest page. */
export const MAX_LIMIT = 1000
const MAX_PROCESSES = 10_000
const MAX_FACETS = 2_000
const MAX_TEXT = 4096
/** Calls looked at between two yields to the event loop, when filtering in the page. */
const SLICE = 20_000

export const filterKey = (f: CallFilter): string => JSON.stringify([[...f.categories].sort(), f.api, f.q])

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0)

function facets(v: unknown): Record<string, number> {
  const out: Record<string, number> = {}
  if (!isObj(v)) return out
  let n = 0
  for (const [k, c] of Object.entries(v)) {
    if (n++ >= MAX_FACETS) break
    if (k.length <= 200) out[k] = count(c)
  }
  return out
}

/** The listing as the service sent it, checked: bad processes are skipped, counts made sane. */
export function parseListing(body: unknown): ProcessCalls[] {
  const out: ProcessCalls[] = []
  for (const p of objs(body, 'processes').slice(0, MAX_PROCESSES)) {
    if (typeof p.pid !== 'number' || !Number.isInteger(p.pid)) continue
    out.push({
      pid: p.pid,
      process_name: typeof p.process_name === 'string' ? p.process_name.slice(0, MAX_TEXT) : '',
      calls: count(p.calls),
      dropped: count(p.dropped),
      categories: facets(p.categories),
      apis: facets(p.apis)
    })
  }
  return out
}

/** One page as the service sent it, checked: at most `limit` rows, non-objects as empty rows. */
export function parsePage(body: unknown, offset: number, limit: number): CallsPage {
  const b = isObj(body) ? body : {}
  const calls = Array.isArray(b.calls) ? b.calls.slice(0, limit).map((c) => (isObj(c) ? c : {})) : []
  return { total: Math.max(count(b.total), offset + calls.length), offset, calls }
}

export function callsQuery(pid: number, filter: CallFilter, offset: number, limit: number): string {
  const params = new URLSearchParams({ offset: String(offset), limit: String(Math.min(limit, MAX_LIMIT)) })
  if (filter.categories.length > 0) params.set('category', filter.categories.join(','))
  if (filter.api !== '') params.set('api', filter.api)
  if (filter.q !== '') params.set('q', filter.q)
  return `${pid}?${params}`
}

/** Whether an error means "this server has no such route / no calls" (an HTTP 404). */
export type IsNotFound = (err: unknown) => boolean

/**
 * The calls of task `id` through the service's routes; where they are missing (404: a Cuckoo
 * server, an older Aviary, or no calls kept) the full report's calls, loaded by `fullReport`.
 */
export function serviceCallsSource(o: {
  id: number
  getJson(path: string, signal?: AbortSignal): Promise<unknown>
  isNotFound: IsNotFound
  fullReport(): Promise<unknown>
}): CallsSource {
  let fallback: Promise<CallsSource> | null = null
  let listing: Promise<CallsListing> | null = null
  const fromReport = (): Promise<CallsSource> => (fallback ??= o.fullReport().then((r) => reportCallsSource(r)))
  return {
    listing(signal) {
      listing ??= o.getJson(`/aviary/tasks/${o.id}/calls`, signal).then(
        (body): Promise<CallsListing> | CallsListing => ({ origin: 'service', processes: parseListing(body) }),
        async (err: unknown) => {
          if (!o.isNotFound(err)) throw err
          return { ...(await (await fromReport()).listing(signal)), unpaged: true as const }
        })
      // A failed or cancelled listing is asked again next time.
      listing.catch(() => { listing = null })
      return listing
    },
    async page(pid, filter, offset, limit, signal) {
      if (fallback !== null) return (await fallback).page(pid, filter, offset, limit, signal)
      const body = await o.getJson(`/aviary/tasks/${o.id}/calls/${callsQuery(pid, filter, offset, limit)}`, signal)
      return parsePage(body, offset, Math.min(limit, MAX_LIMIT))
    }
  }
}

const yieldToPage = (): Promise<void> => new Promise((r) => setTimeout(r, 0))

function aborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new DOMException('The filter was replaced', 'AbortError')
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** Whether a value (strings, numbers, or at most 3 levels of arrays and objects) contains the text. */
function valueHas(v: unknown, re: RegExp, depth = 0): boolean {
  if (typeof v === 'string') return re.test(v.length > MAX_TEXT * 16 ? v.slice(0, MAX_TEXT * 16) : v)
  if (typeof v === 'number' || typeof v === 'boolean') return re.test(String(v))
  if (depth >= 3 || v === null || typeof v !== 'object') return false
  let n = 0
  for (const x of Array.isArray(v) ? v : Object.values(v)) {
    if (n++ > 256) return false
    if (valueHas(x, re, depth + 1)) return true
  }
  return false
}

/** A predicate for one filter, over calls as report.json holds them. */
export function callMatcher(f: CallFilter): (c: unknown) => boolean {
  const cats = new Set(f.categories)
  const re = f.q === '' ? null : new RegExp(escapeRe(f.q), 'i')
  return (c) => {
    if (!isObj(c)) return cats.size === 0 && f.api === '' && re === null
    if (cats.size > 0 && !cats.has(typeof c.category === 'string' ? c.category : '')) return false
    if (f.api !== '' && c.api !== f.api) return false
    if (re === null) return true
    return valueHas(c.api, re) || valueHas(c.category, re) || valueHas(c.return_value, re) || valueHas(c.arguments, re, 1)
  }
}

/**
 * Calls from a full report (behavior.processes[].calls), filtered here. The rows are the report's
 * own objects (nothing copied); a filter's matches are kept as one Uint32Array of indexes, for the
 * last few filters asked.
 */
export function reportCallsSource(report: unknown): CallsSource {
  const byPid = new Map<number, { p: Obj; calls: unknown[] }>()
  for (const p of objs(report, 'behavior', 'processes')) {
    if (typeof p.pid !== 'number' || !Number.isInteger(p.pid) || byPid.has(p.pid)) continue
    byPid.set(p.pid, { p, calls: Array.isArray(p.calls) ? p.calls : [] })
  }
  const matches = new Map<string, Promise<Uint32Array>>()
  let listing: Promise<CallsListing> | null = null

  async function build(pid: number, f: CallFilter, signal?: AbortSignal): Promise<Uint32Array> {
    const calls = byPid.get(pid)?.calls ?? []
    const keep = callMatcher(f)
    const out = new Uint32Array(calls.length)
    let n = 0
    for (let i = 0; i < calls.length; i++) {
      if (i % SLICE === SLICE - 1) {
        await yieldToPage()
        aborted(signal)
      }
      if (keep(calls[i])) out[n++] = i
    }
    return out.subarray(0, n)
  }

  return {
    listing() {
      listing ??= (async () => {
        const processes: ProcessCalls[] = []
        let seen = 0
        for (const [pid, { p, calls }] of byPid) {
          if (calls.length === 0) continue
          const categories: Record<string, number> = {}
          const apis: Record<string, number> = {}
          for (const c of calls) {
            if (++seen % SLICE === 0) await yieldToPage()
            if (!isObj(c)) continue
            const cat = typeof c.category === 'string' ? c.category : ''
            const api = typeof c.api === 'string' ? c.api : ''
            if (cat in categories || Object.keys(categories).length < MAX_FACETS) categories[cat] = (categories[cat] ?? 0) + 1
            if (api in apis || Object.keys(apis).length < MAX_FACETS) apis[api] = (apis[api] ?? 0) + 1
          }
          processes.push({
            pid, process_name: typeof p.process_name === 'string' ? p.process_name : '',
            // Aviary's reports say calls_seen and calls_kept; a parser's calls_dropped says the rest directly.
            calls: calls.length, dropped: count(p.calls_dropped) || Math.max(0, count(p.calls_seen) - Math.max(count(p.calls_kept), calls.length)), categories, apis
          })
        }
        return { origin: 'report' as const, processes }
      })()
      return listing
    },
    async page(pid, filter, offset, limit) {
      const calls = byPid.get(pid)?.calls ?? []
      const all = filter.categories.length === 0 && filter.api === '' && filter.q === ''
      let index: Uint32Array | null = null
      if (!all) {
        const key = `${pid}|${filterKey(filter)}`
        let m = matches.get(key)
        if (m === undefined) {
          // Built to the end even when the view moves on, so it is not half-done when asked again.
          m = build(pid, filter)
          matches.set(key, m)
          m.catch(() => matches.delete(key))
          if (matches.size > 4) matches.delete(matches.keys().next().value as string)
        }
        index = await m
      }
      const total = index === null ? calls.length : index.length
      const rows: Obj[] = []
      for (let i = offset; i < Math.min(total, offset + limit); i++) {
        const at = index === null ? i : (index[i] as number)
        const c = calls[at]
        rows.push(isObj(c) ? (typeof c.index === 'number' ? c : { ...c, index: at }) : { index: at })
      }
      return { total, offset, calls: rows }
    }
  }
}

/**
 * The rows of one process and filter, fetched a page at a time as they come into view. At most
 * `maxPages` pages are kept (the least recently used go), so scrolling through a million calls
 * holds a few thousand; pages that leave the view before they arrive are cancelled. Nothing is
 * fetched until `want` is called (the first page tells the total).
 */
export class CallPages {
  readonly pageSize: number
  total: number | null = null
  error: Error | null = null
  private readonly pages = new Map<number, Obj[]>()
  private readonly inflight = new Map<number, AbortController>()
  private readonly listeners = new Set<() => void>()
  private version = 0
  /** The rows in view, as last told. */
  private wanted: [number, number] = [0, 0]
  private disposed = false
  private readonly maxPages: number
  private readonly maxInflight: number

  constructor(
    private readonly source: CallsSource,
    private readonly pid: number,
    private readonly filter: CallFilter,
    o: { pageSize?: number; maxPages?: number; maxInflight?: number } = {}
  ) {
    this.pageSize = Math.min(o.pageSize ?? 200, MAX_LIMIT)
    this.maxPages = o.maxPages ?? 40
    this.maxInflight = o.maxInflight ?? 4
  }

  subscribe = (l: () => void): (() => void) => {
    this.listeners.add(l)
    return () => { this.listeners.delete(l) }
  }

  getVersion = (): number => this.version

  private changed(): void {
    this.version++
    for (const l of this.listeners) l()
  }

  /** The row at `index`, when its page is here. */
  row(index: number): Obj | undefined {
    const p = Math.floor(index / this.pageSize)
    const page = this.pages.get(p)
    if (page === undefined) return undefined
    // Most recently used last.
    this.pages.delete(p)
    this.pages.set(p, page)
    return page[index - p * this.pageSize]
  }

  /** How many pages are held (for tests and the bench). */
  get held(): number {
    return this.pages.size
  }

  /** The rows [first, last] are in view: fetch their pages, cancel the ones no longer needed. */
  want(first: number, last: number): void {
    if (this.disposed) return
    this.wanted = [first, last]
    const a = Math.floor(Math.max(0, first) / this.pageSize)
    const b = Math.floor(Math.max(0, last) / this.pageSize)
    for (const [p, ctl] of this.inflight) if (p < a || p > b) { ctl.abort(); this.inflight.delete(p) }
    for (let p = a; p <= b; p++) if (!this.pages.has(p) && !this.inflight.has(p) && this.inflight.size < this.maxInflight) this.fetch(p)
  }

  dispose(): void {
    this.disposed = true
    for (const ctl of this.inflight.values()) ctl.abort()
    this.inflight.clear()
    this.listeners.clear()
  }

  private fetch(p: number): void {
    const ctl = new AbortController()
    this.inflight.set(p, ctl)
    this.source.page(this.pid, this.filter, p * this.pageSize, this.pageSize, ctl.signal).then((page) => {
      if (ctl.signal.aborted || this.disposed) return
      this.inflight.delete(p)
      this.pages.set(p, page.calls)
      while (this.pages.size > this.maxPages) this.pages.delete(this.pages.keys().next().value as number)
      this.total = page.total
      this.error = null
      this.changed()
      this.want(...this.wanted)
    }, (err: unknown) => {
      if (ctl.signal.aborted || this.disposed) return
      this.inflight.delete(p)
      this.error = err instanceof Error ? err : new Error(String(err))
      this.changed()
    })
  }
}
