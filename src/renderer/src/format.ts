// Sizes, dates and untrusted names as people read them. Pure functions (tested without a DOM).

import { invisibleGlobal, invisibleName } from '../../shared/invisible'

export { hasInvisible } from '../../shared/invisible'

export type TextPart = { text: string } | { control: string; code: number }

/** Splits untrusted text into plain runs and named invisible characters (src/shared/invisible.ts), shown, never applied. */
export function splitInvisible(value: string): TextPart[] {
  const parts: TextPart[] = []
  let last = 0
  for (const m of value.matchAll(invisibleGlobal())) {
    const at = m.index
    if (at > last) parts.push({ text: value.slice(last, at) })
    const code = m[0].codePointAt(0) as number
    parts.push({ control: invisibleName(code), code })
    last = at + m[0].length
  }
  if (last < value.length) parts.push({ text: value.slice(last) })
  return parts
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
/** 1536 → "1.5 KiB"; exact bytes go in a tooltip. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—'
  let v = Math.abs(bytes)
  let u = 0
  while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++ }
  const s = u === 0 ? String(v) : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)
  return `${bytes < 0 ? '-' : ''}${s} ${UNITS[u]}`
}

export function exactBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return ''
  return counted(bytes, 'byte')
}

/** A count and its noun, singular for 1: counted(1, 'task') → "1 task", counted(1200, 'task') → "1,200 tasks". */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? noun : plural}`
}

/**
 * Parses what the API gives: Cuckoo's local-time "YYYY-MM-DD HH:MM:SS" (no zone), ISO strings,
 * or epoch seconds (report.json's datetimes). Null when it is none of these.
 */
export function parseDate(value: unknown): Date | null {
  if (typeof value === 'number' && Number.isFinite(value)) return new Date(value * 1000)
  if (typeof value !== 'string' || value === '') return null
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d+)?$/.exec(value)
  if (m) {
    const [, y, mo, d, h, mi, s, frac] = m
    return new Date(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), frac ? Math.round(Number(frac) * 1000) : 0)
  }
  const t = Date.parse(value)
  return Number.isNaN(t) ? null : new Date(t)
}

// One formatter for all: constructing an Intl formatter per call was the costliest function
// while scrolling the task list (bench/ui-tasks.bench.mjs --profile).
const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' })

/** "3 min ago", "in 2 h", "yesterday"… relative to `now`; the exact time goes in a tooltip. */
export function formatRelative(date: Date, now: Date = new Date()): string {
  const sec = Math.round((date.getTime() - now.getTime()) / 1000)
  const abs = Math.abs(sec)
  if (abs < 45) return rtf.format(sec, 'second')
  if (abs < 45 * 60) return rtf.format(Math.round(sec / 60), 'minute')
  if (abs < 22 * 3600) return rtf.format(Math.round(sec / 3600), 'hour')
  if (abs < 26 * 86400) return rtf.format(Math.round(sec / 86400), 'day')
  return date.toLocaleDateString('en-CA')
}

/** "2026-11-23 10:04:05" in local time. */
export function formatExact(date: Date): string {
  const p = (n: number) => String(n).padStart(2, '0')
  return `${date.getFullYear()}-${p(date.getMonth() + 1)}-${p(date.getDate())} ${p(date.getHours())}:${p(date.getMinutes())}:${p(date.getSeconds())}`
}

/** "1 h 02 min", "45 s". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—'
  const s = Math.max(0, Math.round(seconds))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`
}
