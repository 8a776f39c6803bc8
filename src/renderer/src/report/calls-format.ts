// How one call reads in a row of the calls view: short, one line, cut where long (the details
// pane shows every value whole). Pure functions over the untrusted call object.
import { splitInvisible } from '../format'
import { isObj, type Obj } from './model'

const MAX_ARGS_IN_ROW = 24
const MAX_VALUE_IN_ROW = 96

const pad = (n: number, w = 2): string => String(n).padStart(w, '0')

/** Cuckoo's `time` (epoch seconds, float) as the local time of day with milliseconds. */
export function callTime(t: unknown): string {
  if (typeof t !== 'number' || !Number.isFinite(t)) return ''
  if (t < 1e8) return t.toFixed(3) // not an epoch: seconds since something, as given
  const d = new Date(t * 1000)
  if (Number.isNaN(d.getTime())) return ''
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
}

/** The full date of a call's time, for its tooltip and the details. */
export function callDate(t: unknown): string {
  if (typeof t !== 'number' || !Number.isFinite(t) || t < 1e8) return ''
  const d = new Date(t * 1000)
  return Number.isNaN(d.getTime()) ? '' : d.toISOString()
}

/** Any value as text, cut at `max` characters with an ellipsis (objects as JSON). */
export function valueText(v: unknown, max: number): string {
  let s: string
  if (typeof v === 'string') s = v.length > max ? v.slice(0, max + 1) : v
  else if (v === null || v === undefined) s = ''
  else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') s = String(v)
  else {
    try { s = JSON.stringify(v) ?? '' } catch { s = '[unprintable]' }
  }
  return s.length > max ? `${s.slice(0, max)}…` : s
}

/** `name=value, name=value` for a row: at most 24 arguments, each value cut at 96 characters. */
export function argsLine(args: unknown): string {
  if (!isObj(args)) return ''
  const parts: string[] = []
  let n = 0
  for (const [k, v] of Object.entries(args)) {
    if (n++ >= MAX_ARGS_IN_ROW) { parts.push('…'); break }
    parts.push(`${k.length > 64 ? `${k.slice(0, 64)}…` : k}=${valueText(v, MAX_VALUE_IN_ROW)}`)
  }
  return parts.join(', ')
}

/** The return value as a row shows it, with the error name of a failed Linux system call (`-1 ENOENT`). */
export function returnText(c: Obj): string {
  const v = valueText(c.return_value, 40)
  return typeof c.errno === 'string' && c.errno !== '' ? `${v} ${c.errno.slice(0, 40)}` : v
}

/** A failed call: Cuckoo writes status false (or 0); Aviary's strace calls the same. */
export function callFailed(c: Obj): boolean {
  return c.status === false || c.status === 0 || c.status === 'failed'
}

/**
 * Untrusted text for places that take plain text only (an <option>'s label): each invisible
 * character becomes its bracketed name (`[RLO]`), so nothing there is applied.
 */
export function plainSafe(s: string): string {
  return splitInvisible(s).map((p) => ('text' in p ? p.text : `[${p.control}]`)).join('')
}
