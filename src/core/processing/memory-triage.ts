// Triage of a machine's full memory dump (memory=1): the http(s) URLs, domain names and IPv4
// addresses in it that are not in the baseline, the same machine's clean snapshot dumped once
// (engine: scheduler/memory-baseline.ts keeps its indicators per machine and snapshot, and each
// run copies them into its folder as memory.baseline.json). Read once, streamed in 4 MiB pieces
// (memory stays flat whatever the dump's size), in ASCII and UTF-16LE; bounded in time
// (TRIAGE_SECONDS) and in what it keeps (MAX_KEPT per kind). The sets are what a clean machine
// already holds (its own host names, libraries' URLs) minus nothing: only the difference is
// reported, so a sample's configuration stands out and the noise of the system does not.
//
// By hand: what the `strings` tool does plus three patterns over its runs; no maintained library
// streams a multi-GB file for them. A name counts as a domain when its last label is a top-level
// label of the public suffix list (Debian's publicsuffix package), else when it is 2 to 24 letters.
import { readFileSync } from 'node:fs'
import { open, readFile, writeFile } from 'node:fs/promises'
import { UrlScanner } from '../hashing/urls'
import { Closed, Type, type Static } from './schema'

export const TRIAGE_SECONDS = 300
/** Distinct values kept per kind while reading (a baseline of a busy machine has tens of thousands). */
export const MAX_KEPT = 200_000
/** Values reported per kind. */
export const MAX_REPORTED = 1000
const PIECE = 4 * 1024 * 1024
const OVERLAP = 512

export interface Indicators {
  urls: string[]
  domains: string[]
  ips: string[]
  /** Bytes read, and whether the whole file was (false: the time bound or a cap cut it). */
  bytes: number
  complete: boolean
}

export const MemoryTriageSchema = Closed({
  /** Where the baseline came from (`machine/snapshot`); null when there is none (nothing is reported then). */
  baseline: Type.Union([Type.String(), Type.Null()]),
  urls: Type.Array(Type.String()),
  domains: Type.Array(Type.String()),
  ips: Type.Array(Type.String()),
  bytes: Type.Integer({ minimum: 0 }),
  complete: Type.Boolean()
})
export type MemoryTriage = Static<typeof MemoryTriageSchema>

let tlds: Set<string> | null | undefined
function topLabels(): Set<string> | null {
  if (tlds !== undefined) return tlds
  try {
    const set = new Set<string>()
    for (const line of readFileSync('/usr/share/publicsuffix/public_suffix_list.dat', 'utf8').split('\n')) {
      const rule = line.trim()
      if (rule === '' || rule.startsWith('//')) continue
      const last = rule.slice(rule.lastIndexOf('.') + 1).replace(/^[!*]/, '')
      if (/^[a-z]+$/.test(last)) set.add(last)
    }
    tlds = set.size > 0 ? set : null
  } catch {
    tlds = null
  }
  return tlds
}

// Printable runs of 6 or more, as `strings` finds them; ASCII and UTF-16LE (a character then 0).
const RUN_ASCII = /[\x20-\x7e]{6,}/g
// eslint-disable-next-line no-control-regex -- UTF-16LE text is a printable byte then a zero byte
const RUN_WIDE = /(?:[\x20-\x7e]\x00){6,}/g
const NULS = /\0/g
// Bounded patterns only: a linear scan over hostile bytes.
const DOMAIN = /(?<![A-Za-z0-9_.-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,10}[A-Za-z]{2,24}(?![A-Za-z0-9_-]|\.[A-Za-z0-9])/g
const IPV4 = /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.]|\.\d)/g

class Kept {
  readonly set = new Set<string>()
  full = false
  add(v: string): void {
    if (this.set.has(v)) return
    if (this.set.size >= MAX_KEPT) {
      this.full = true
      return
    }
    this.set.add(v)
  }
}

const PAGE = 4096
const ZERO_PAGE = Buffer.alloc(PAGE)

/**
 * The parts of `buf` from `start` on to decode and search: every page (4 KiB, counted from
 * `start`) but those that are all zeros, adjacent pages merged, as [from, to) pairs. A zero page
 * ends any run, so leaving it out changes nothing found; a guest's full dump is mostly such pages
 * (memory it never touched: 77% of the small test guest's 528 MiB), and decoding them was most of
 * the triage's time. Each part takes one byte of the zero page after it, where a UTF-16LE run's
 * last zero byte may lie.
 */
function nonZeroSpans(buf: Buffer, start: number): [number, number][] {
  const spans: [number, number][] = []
  for (let p = start; p < buf.length; p += PAGE) {
    const end = Math.min(p + PAGE, buf.length)
    if (buf.compare(ZERO_PAGE, 0, end - p, p, end) === 0) continue
    const last = spans[spans.length - 1]
    if (last !== undefined && last[1] >= p) last[1] = Math.min(end + 1, buf.length)
    else spans.push([p, Math.min(end + 1, buf.length)])
  }
  return spans
}

/** The URLs, domains and IPv4 addresses written in a file, streamed. */
export async function scanIndicators(file: string, o: { seconds?: number } = {}): Promise<Indicators> {
  const deadline = Date.now() + (o.seconds ?? TRIAGE_SECONDS) * 1000
  const top = topLabels()
  const urls = new UrlScanner(Number.MAX_SAFE_INTEGER, MAX_KEPT)
  const domains = new Kept()
  const ips = new Kept()
  const runs = (text: string): void => {
    if (!text.includes('.')) return
    for (const m of text.matchAll(DOMAIN)) {
      const name = m[0].toLowerCase()
      const last = name.slice(name.lastIndexOf('.') + 1)
      if (top === null ? /^[a-z]{2,24}$/.test(last) : top.has(last)) domains.add(name)
    }
    for (const m of text.matchAll(IPV4)) ips.add(m[0])
  }
  const fh = await open(file, 'r')
  let bytes = 0
  let complete = true
  try {
    const buf = Buffer.allocUnsafe(PIECE + OVERLAP)
    let carry = 0
    for (;;) {
      if (Date.now() > deadline) {
        complete = false
        break
      }
      const { bytesRead } = await fh.read(buf, carry, PIECE, bytes)
      if (bytesRead <= 0) break
      bytes += bytesRead
      const data = buf.subarray(carry, carry + bytesRead)
      urls.update(data)
      // Runs are found in the carried tail plus this piece; a run reaching the end is left for the
      // next piece (up to OVERLAP bytes of it), so a name split by the piece boundary is whole.
      const whole = buf.subarray(0, carry + bytesRead)
      const spans = nonZeroSpans(whole, carry)
      if (carry > 0) {
        if (spans[0]?.[0] === carry) spans[0][0] = 0
        else spans.unshift([0, Math.min(carry + 1, whole.length)])
      }
      let keepFrom = whole.length
      for (const [from, to] of spans) {
        const text = whole.toString('latin1', from, to)
        for (const m of text.matchAll(RUN_ASCII)) {
          const at = from + (m.index ?? 0)
          if (at + m[0].length === whole.length && whole.length - at <= OVERLAP) keepFrom = Math.min(keepFrom, at)
          else runs(m[0])
        }
        if (text.includes('.\x00')) {
          for (const m of text.matchAll(RUN_WIDE)) {
            const at = from + (m.index ?? 0)
            if (at + m[0].length >= whole.length - 1 && whole.length - at <= OVERLAP) keepFrom = Math.min(keepFrom, at)
            else runs(m[0].replace(NULS, ''))
          }
        }
      }
      carry = Math.min(whole.length - keepFrom, OVERLAP)
      whole.copy(buf, 0, whole.length - carry)
    }
    if (carry > 0) {
      const text = buf.subarray(0, carry).toString('latin1')
      for (const m of text.matchAll(RUN_ASCII)) runs(m[0])
      for (const m of text.matchAll(RUN_WIDE)) runs(m[0].replace(NULS, ''))
    }
  } finally {
    await fh.close()
  }
  return {
    urls: urls.result(), domains: [...domains.set], ips: [...ips.set], bytes,
    complete: complete && !domains.full && !ips.full
  }
}

/** A baseline file: the indicators and where they came from (`machine/snapshot`). */
export async function writeIndicators(file: string, i: Indicators, source: string): Promise<void> {
  await writeFile(file, JSON.stringify({ source, ...i }))
}

/** A baseline file as written by writeIndicators, or null when it is missing or not one. */
export async function readIndicators(file: string): Promise<{ source: string; indicators: Indicators } | null> {
  let v: Partial<Indicators> & { source?: unknown }
  try {
    v = JSON.parse(await readFile(file, 'utf8')) as typeof v
  } catch {
    return null
  }
  const list = (x: unknown): string[] => (Array.isArray(x) ? x.filter((s): s is string => typeof s === 'string') : [])
  if (v === null || typeof v !== 'object' || !Array.isArray(v.urls) || !Array.isArray(v.domains) || !Array.isArray(v.ips)) return null
  return {
    source: typeof v.source === 'string' ? v.source : 'unknown',
    indicators: { urls: list(v.urls), domains: list(v.domains), ips: list(v.ips), bytes: Number(v.bytes) || 0, complete: v.complete === true }
  }
}

/** What the dump holds and the baseline does not, sorted and capped. */
export function triage(found: Indicators, baseline: Indicators, source: string): MemoryTriage {
  const diff = (a: string[], b: string[]): string[] => {
    const known = new Set(b)
    return a.filter((v) => !known.has(v)).sort().slice(0, MAX_REPORTED)
  }
  return {
    baseline: source,
    urls: diff(found.urls, baseline.urls),
    domains: diff(found.domains, baseline.domains),
    ips: diff(found.ips, baseline.ips),
    bytes: found.bytes,
    complete: found.complete
  }
}
