// Defensive reads of a Cuckoo 2 report.json (Aviary's or real Cuckoo's). The report comes from a
// hostile guest and from servers we do not control, so every key may be missing or of the wrong
// type: each accessor returns an empty value instead of throwing. The object readers are shared
// with the core (src/shared/report-access.ts); the string readers here keep numbers as text.

import { objs, valueAt, type Obj } from '../../../shared/report-access'

export { isObj, obj, objs, type Obj } from '../../../shared/report-access'

/** `root[a][b]...` as an array of strings (numbers kept as text, other items dropped), or []. */
export function strs(root: unknown, ...keys: string[]): string[] {
  const v = valueAt(root, keys)
  if (!Array.isArray(v)) return []
  const out: string[] = []
  for (const x of v) if (typeof x === 'string') out.push(x); else if (typeof x === 'number') out.push(String(x))
  return out
}

export function str(o: Obj, key: string): string {
  const v = o[key]
  return typeof v === 'string' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : ''
}

export function num(o: Obj, key: string): number | null {
  const v = o[key]
  return typeof v === 'number' && Number.isFinite(v) ? v : null
}

/** Any value as one line of short text (objects as JSON), for cells of unknown shape. */
export function textOf(v: unknown, max = 2000): string {
  let s: string
  if (typeof v === 'string') s = v
  else if (v === null || v === undefined) s = ''
  else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') s = String(v)
  else {
    try { s = JSON.stringify(v) ?? '' } catch { s = '[unprintable]' }
  }
  return s.length > max ? `${s.slice(0, max)} … (${s.length - max} more characters)` : s
}

/**
 * Where the views get images and downloads: URLs of the API when online, blob: URLs of an
 * archive's entries offline. A source that returns null means "not available here".
 */
export interface ReportSources {
  /** Screenshot by its file name (e.g. "0001.jpg"); `small` asks for the thumbnail when there is one. */
  screenshot(name: string, small: boolean): string | null
  /** A process memory dump by its file name in memory/ (e.g. "1234-1.dmp"). */
  memoryDump(name: string): string | null
  pcap(): string | null
  /** The decrypting proxy's flows (mitmproxy's format), when the source can offer them. */
  flows?(): string | null
  /** One dropped file (its entry of dropped[]), when it can be downloaded alone. */
  droppedFile(d: Obj): string | null
  /** Every dropped file as one archive, when the source offers that. */
  droppedArchive(): string | null
  /** The screenshot names that exist, when the source knows them better than the report. */
  screenshotNames?(): string[]
  /** Memory dump names (in memory/) that exist, when known. */
  memoryNames?(): { name: string; size: number | null }[]
}

/** The last path component of a Windows or POSIX path. */
export function baseName(p: string): string {
  const parts = p.split(/[\\/]/)
  return parts[parts.length - 1] ?? ''
}

export const SHOT_NAME = /^\d{1,8}\.(jpg|jpeg|png)$/i

/** Screenshot file names: from the source when it knows, else from report.screenshots[].path. */
export function shotNames(report: unknown, sources: ReportSources): string[] {
  const known = sources.screenshotNames?.()
  if (known && known.length > 0) return known
  const out: string[] = []
  for (const s of objs(report, 'screenshots')) {
    const n = baseName(str(s, 'path'))
    if (SHOT_NAME.test(n) && !out.includes(n)) out.push(n)
  }
  return out
}
