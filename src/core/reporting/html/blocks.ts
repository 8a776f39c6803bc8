// The building blocks of report.html's sections: capped tables, key/value tables, capped lists and
// a generic view for report parts without a dedicated layout (static.office, static.pdf, …). Every
// block escapes what it shows (escape.ts) and shows at most a fixed number of rows followed by an
// "N more" line, so a report with 100,000 processes or DNS entries still gives a readable page.
import { text } from './escape'
import type { PageWriter } from './page-writer'
import { isObj, type Obj } from '../report-view'

export type { Obj }
export const MAX_ROWS = 500
export const MAX_LIST = 200

export interface Column<T> {
  title: string
  /** The cell's HTML (escape what comes from the report). */
  cell(row: T): string
}

export function moreLine(total: number, shown: number, what: string): string {
  return total > shown ? `<p class="more">${total - shown} more ${what} not shown (${total} in all; see report.json).</p>` : ''
}

export async function table<T>(w: PageWriter, rows: readonly T[], cols: Column<T>[], what: string, max = MAX_ROWS): Promise<void> {
  if (rows.length === 0) { w.put(`<p class="muted">No ${what}.</p>`); return }
  w.put('<table><thead><tr>' + cols.map((c) => `<th>${text(c.title)}</th>`).join('') + '</tr></thead><tbody>')
  const n = Math.min(rows.length, max)
  for (let i = 0; i < n; i++) {
    const row = rows[i] as T
    w.put('<tr>' + cols.map((c) => `<td>${c.cell(row)}</td>`).join('') + '</tr>')
    await w.tick()
  }
  w.put('</tbody></table>' + moreLine(rows.length, n, what))
}

/** A two-column table of label → HTML value; rows with an empty value are left out. */
export function kv(rows: [string, string][]): string {
  const kept = rows.filter(([, v]) => v !== '')
  if (kept.length === 0) return ''
  return '<table class="kv"><tbody>' + kept.map(([k, v]) => `<tr><th>${text(k)}</th><td>${v}</td></tr>`).join('') + '</tbody></table>'
}

/** Values as inline tags, capped. */
export function tags(values: readonly unknown[], max = MAX_LIST): string {
  const n = Math.min(values.length, max)
  let out = ''
  for (let i = 0; i < n; i++) out += `<span class="tag mono">${text(values[i], 300)}</span>`
  return out + (values.length > n ? ` <span class="more">and ${values.length - n} more</span>` : '')
}

/** One value of unknown shape as short text: primitives as such, containers as truncated JSON. */
export function cellText(v: unknown, max = 300): string {
  return text(v, max)
}

/** Any JSON value, laid out as tables as far as two levels deep, capped everywhere. */
export async function generic(w: PageWriter, value: unknown, depth = 0): Promise<void> {
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every(isObj)) {
      const rows = value as Obj[]
      const keys: string[] = []
      for (const r of rows.slice(0, 20)) for (const k of Object.keys(r)) if (!keys.includes(k) && keys.length < 8) keys.push(k)
      await table(w, rows, keys.map((k) => ({ title: k, cell: (r: Obj) => cellText(r[k]) })), 'rows')
    } else {
      w.put(value.length === 0 ? '<p class="muted">None.</p>' : `<p>${tags(value)}</p>`)
    }
    return
  }
  if (isObj(value)) {
    const entries = Object.entries(value)
    const n = Math.min(entries.length, MAX_ROWS)
    w.put('<table class="kv"><tbody>')
    for (let i = 0; i < n; i++) {
      const [k, v] = entries[i] as [string, unknown]
      w.put(`<tr><th>${text(k, 200)}</th><td>`)
      if (depth < 2 && (Array.isArray(v) || isObj(v))) await generic(w, v, depth + 1)
      else w.put(cellText(v, 1000))
      w.put('</td></tr>')
      await w.tick()
    }
    w.put('</tbody></table>' + moreLine(entries.length, n, 'entries'))
    return
  }
  w.put(`<p>${cellText(value, 1000)}</p>`)
}
