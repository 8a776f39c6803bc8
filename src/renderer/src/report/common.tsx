// Building blocks of the report views: a titled section, a key/value table, capped tag lists, and
// a sortable table that switches to virtual scrolling when it is long (a report can list 100,000
// flows or DNS queries). Every string from the report goes through SafeText.
import { useMemo, useRef, useState, type CSSProperties, type JSX, type ReactNode } from 'react'
import { useVirtualizer } from '@tanstack/react-virtual'
import { SafeText } from '../components/text'
import { counted } from '../format'

export function Section({ title, count, children }: { title: string; count?: number; children: ReactNode }): JSX.Element {
  return (
    <section className="mb-5" aria-label={title}>
      <h3 className="mb-1.5 text-sm font-semibold uppercase tracking-wide text-zinc-600 dark:text-zinc-400">
        {title}{count !== undefined && <span className="ml-1 font-normal">({count})</span>}
      </h3>
      {children}
    </section>
  )
}

export function Empty({ children }: { children: ReactNode }): JSX.Element {
  return <p className="text-sm text-zinc-500">{children}</p>
}

/** Label → value rows; rows whose value is null, undefined or '' are left out. */
export function KeyValues({ rows }: { rows: [string, ReactNode][] }): JSX.Element | null {
  const kept = rows.filter(([, v]) => v !== null && v !== undefined && v !== '' && v !== false)
  if (kept.length === 0) return null
  return (
    <table className="text-sm">
      <tbody>
        {kept.map(([k, v], i) => (
          <tr key={`${i}-${k}`} className="align-top">
            <th scope="row" className="py-0.5 pr-4 text-left font-medium whitespace-nowrap text-zinc-500">{k}</th>
            <td className="py-0.5 [overflow-wrap:anywhere]">{v}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

export function Mono({ value }: { value: unknown }): JSX.Element {
  return <SafeText value={value} className="font-mono text-[0.85em]" />
}

/** Values as small tags, at most `max` of them, then "and N more". */
export function Tags({ values, max = 200 }: { values: readonly string[]; max?: number }): JSX.Element {
  const shown = values.slice(0, max)
  return (
    <div className="flex flex-wrap gap-1">
      {shown.map((v, i) => (
        <span key={i} className="rounded bg-zinc-100 px-1.5 py-0.5 font-mono text-xs break-all dark:bg-zinc-800"><SafeText value={v} /></span>
      ))}
      {values.length > shown.length && <span className="text-xs text-zinc-500">and {values.length - shown.length} more</span>}
    </div>
  )
}

export interface Column<T> {
  title: string
  cell(row: T): ReactNode
  /** Sort key; a column without one is not sortable. */
  sort?(row: T): string | number
  className?: string
}

const VIRTUAL_FROM = 200
const ROW_PX = 28

/** A table whose headers sort (click or Enter); past 200 rows it scrolls virtually in a fixed box. */
export function DataTable<T>({ rows, columns, label, empty }: { rows: readonly T[]; columns: Column<T>[]; label: string; empty?: string }): JSX.Element {
  const [sort, setSort] = useState<{ col: number; dir: 1 | -1 } | null>(null)
  const sorted = useMemo(() => {
    const key = sort === null ? undefined : columns[sort.col]?.sort
    if (!sort || !key) return rows
    return [...rows].sort((a, b) => {
      const x = key(a)
      const y = key(b)
      return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))) * sort.dir
    })
  }, [rows, columns, sort])
  if (rows.length === 0) return <Empty>{empty ?? `No ${label}.`}</Empty>
  const head = (
    <thead className="sticky top-0 bg-white dark:bg-zinc-950">
      <tr>
        {columns.map((c, i) => {
          const active = sort?.col === i
          const aria = active ? (sort.dir === 1 ? 'ascending' : 'descending') : 'none'
          return (
            <th key={c.title} scope="col" aria-sort={c.sort ? aria : undefined} className="border-b border-zinc-200 px-2 py-1 text-left font-medium dark:border-zinc-800">
              {c.sort ? (
                <button type="button" className="hover:underline" onClick={() => setSort(active && sort.dir === 1 ? { col: i, dir: -1 } : { col: i, dir: 1 })}>
                  {c.title}{active ? (sort.dir === 1 ? ' ▲' : ' ▼') : ''}
                </button>
              ) : c.title}
            </th>
          )
        })}
      </tr>
    </thead>
  )
  const row = (r: T, i: number, style?: CSSProperties) => (
    <tr key={i} style={style} className="border-b border-zinc-100 align-top dark:border-zinc-900">
      {columns.map((c) => <td key={c.title} className={`px-2 py-0.5 ${c.className ?? 'break-all'}`}>{c.cell(r)}</td>)}
    </tr>
  )
  if (sorted.length < VIRTUAL_FROM) {
    return <table aria-label={label} className="w-full text-sm">{head}<tbody>{sorted.map((r, i) => row(r, i))}</tbody></table>
  }
  return <VirtualRows rows={sorted} head={head} row={row} label={label} />
}

function VirtualRows<T>({ rows, head, row, label }: { rows: readonly T[]; head: ReactNode; row: (r: T, i: number, style?: CSSProperties) => ReactNode; label: string }): JSX.Element {
  const box = useRef<HTMLDivElement>(null)
  const v = useVirtualizer({ count: rows.length, getScrollElement: () => box.current, estimateSize: () => ROW_PX, overscan: 20 })
  const items = v.getVirtualItems()
  const top = items[0]?.start ?? 0
  const bottom = v.getTotalSize() - (items[items.length - 1]?.end ?? 0)
  return (
    <div ref={box} className="max-h-[32rem] overflow-auto" tabIndex={0} aria-label={`${label} (${counted(rows.length, 'row')}, scrollable)`}>
      <table aria-label={label} aria-rowcount={rows.length} className="w-full text-sm">
        {head}
        <tbody>
          {top > 0 && <tr style={{ height: top }} aria-hidden />}
          {items.map((it) => row(rows[it.index] as T, it.index, { height: ROW_PX }))}
          {bottom > 0 && <tr style={{ height: bottom }} aria-hidden />}
        </tbody>
      </table>
    </div>
  )
}

/** A download link, or a note that this source does not offer the file. */
export function Download({ href, name, children }: { href: string | null; name?: string; children: ReactNode }): JSX.Element {
  if (href === null) return <span className="text-zinc-400" title="not available from this source">{children}</span>
  return <a href={href} download={name ?? ''} className="text-sky-700 underline dark:text-sky-400">{children}</a>
}
