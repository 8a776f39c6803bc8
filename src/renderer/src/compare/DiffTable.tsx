// The building blocks of the Compare page: the mark of where a row is (words, not only a colour),
// a section's tally, and a table of joined rows on the report views' DataTable (sortable, and
// virtual past 200 rows, so a list of 20,000 processes scrolls without freezing the page).
import type { JSX, ReactNode } from 'react'
import { DataTable, Empty, type Column } from '../report/common'
import { differs, tally, type Row, type Where } from './diff'

const MARKS: Record<Where | 'changed', { word: string; tone: string; title: string }> = {
  a: { word: 'only A', tone: 'bg-amber-100 text-amber-950 ring-amber-600 dark:bg-amber-950 dark:text-amber-100 dark:ring-amber-500', title: 'only in analysis A' },
  b: { word: 'only B', tone: 'bg-violet-100 text-violet-950 ring-violet-600 dark:bg-violet-950 dark:text-violet-100 dark:ring-violet-400', title: 'only in analysis B' },
  changed: { word: 'differs', tone: 'bg-sky-100 text-sky-950 ring-sky-600 dark:bg-sky-950 dark:text-sky-100 dark:ring-sky-400', title: 'in both analyses, not the same' },
  both: { word: 'shared', tone: 'text-zinc-700 ring-zinc-300 dark:text-zinc-300 dark:ring-zinc-600', title: 'the same in both analyses' }
}

export function WhereMark({ row }: { row: Row<unknown> }): JSX.Element {
  const m = MARKS[row.where === 'both' && row.changed ? 'changed' : row.where]
  return <span data-where={row.where === 'both' && row.changed ? 'changed' : row.where} title={m.title}
    className={`inline-block rounded px-1.5 text-xs font-medium whitespace-nowrap ring-1 ring-inset ${m.tone}`}>{m.word}</span>
}

/** "2 only in A · 1 only in B · 5 shared (1 differs)". */
export function TallyLine({ rows }: { rows: readonly Row<unknown>[] }): JSX.Element {
  const t = tally(rows)
  const n = (x: number) => x.toLocaleString('en-US')
  const parts = [`${n(t.a)} only in A`, `${n(t.b)} only in B`, `${n(t.both)} in both${t.changed > 0 ? ` (${n(t.changed)} differ${t.changed === 1 ? 's' : ''})` : ''}`]
  return <span className="text-xs font-normal text-zinc-600 normal-case tracking-normal dark:text-zinc-400" data-testid="tally">{parts.join(' · ')}</span>
}

/** A titled part of the comparison with its tally; a part out of view is not laid out or painted (content-visibility). */
export function DiffSection({ title, rows, children, level = 2 }: { title: string; rows?: readonly Row<unknown>[]; children: ReactNode; level?: 2 | 3 }): JSX.Element {
  const Heading = level === 2 ? 'h2' : 'h3'
  return (
    <section aria-label={title} className={level === 2 ? 'mb-6 [contain-intrinsic-size:auto_40rem] [content-visibility:auto]' : 'mt-3 mb-4'}>
      <Heading className={`mb-1.5 flex flex-wrap items-baseline gap-x-3 ${level === 2 ? 'text-base font-semibold' : 'text-sm font-semibold uppercase tracking-wide text-zinc-700 dark:text-zinc-300'}`}>
        <span>{title}</span>{rows !== undefined && <TallyLine rows={rows} />}
      </Heading>
      {children}
    </section>
  )
}

/** Joined rows as a table, the mark first; `onlyDiff` keeps only the rows that differ. */
export function DiffTable<T>({ rows, columns, label, onlyDiff, empty }: {
  rows: readonly Row<T>[]
  columns: Column<Row<T>>[]
  label: string
  onlyDiff: boolean
  empty?: string
}): JSX.Element {
  if (rows.length === 0) return <Empty>{empty ?? `No ${label} in either analysis.`}</Empty>
  const shown = onlyDiff ? rows.filter(differs) : rows
  if (shown.length === 0) return <Empty>The same {label} in both analyses.</Empty>
  const order: Record<string, number> = { a: 0, b: 1, changed: 2, both: 3 }
  const mark: Column<Row<T>> = {
    title: 'where', className: 'w-20', cell: (r) => <WhereMark row={r} />,
    sort: (r) => order[r.where === 'both' && r.changed ? 'changed' : r.where] ?? 3
  }
  return <DataTable rows={shown} columns={[mark, ...columns]} label={label} />
}

/** A side's value in a cell: a dash where the row is not on that side. */
export function SideCell({ present, children }: { present: boolean; children: ReactNode }): JSX.Element {
  return present ? <>{children}</> : <span className="text-zinc-500" aria-label="absent">—</span>
}
