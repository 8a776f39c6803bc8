// Everything report.html shows comes from a hostile guest (file names, command lines, DNS names,
// HTTP headers), so every string goes through `text` before it reaches the page: HTML-escaped, and
// with every character of the invisible set (src/shared/invisible.ts: controls, bidi overrides as in
// the "invoice\u202Egpj.exe" trick, zero-width and other format characters, line separators, lone
// surrogates) made visible as ⟨U+XXXX⟩ instead of applied. Long values are cut with a note of how much.
import { codePointLabel, replaceInvisible } from '../../../shared/invisible'

const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

const marker = (codePoint: number): string => `⟨${codePointLabel(codePoint)}⟩`

/** Default cut for one value on the page. */
export const MAX_TEXT = 2000

/** A value as safe HTML text (element content or a quoted attribute value). */
export function text(value: unknown, max = MAX_TEXT): string {
  let s: string
  if (typeof value === 'string') s = value
  else if (value === null || value === undefined) s = ''
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') s = String(value)
  else {
    try { s = JSON.stringify(value) ?? '' } catch { s = '[unprintable]' }
  }
  let note = ''
  if (s.length > max) {
    note = ` … (${s.length - max} more characters)`
    s = s.slice(0, max)
  }
  return replaceInvisible(s.replace(/[&<>"']/g, (c) => HTML[c] ?? c), marker) + note
}

/** Bytes in human units (binary), e.g. "1.5 MiB"; the exact count stays in a title. */
export function size(bytes: unknown): string {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes < 0) return ''
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let v = bytes
  let u = 0
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++ }
  const shown = u === 0 ? String(v) : v.toFixed(v < 10 ? 1 : 0)
  return `<span title="${bytes} bytes">${shown} ${units[u]}</span>`
}

/** An epoch-seconds float (report.json's datetimes) or a date string, as "YYYY-MM-DD HH:MM:SS UTC". */
export function when(value: unknown): string {
  let ms: number | null = null
  if (typeof value === 'number' && Number.isFinite(value)) ms = value * 1000
  else if (typeof value === 'string' && value !== '') {
    const t = Date.parse(value)
    if (Number.isFinite(t)) ms = t
    else return text(value)
  }
  if (ms === null) return ''
  const d = new Date(ms)
  return Number.isFinite(d.getTime()) ? d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : ''
}
