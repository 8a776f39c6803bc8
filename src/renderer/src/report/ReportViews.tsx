// Every view of a report under one tab list (keyboard: Left/Right/Home/End on the tabs). Used by
// the Task page (API URLs) and the Offline page (blob: URLs of an archive). When the page only has
// the report's summary (/tasks/summary leaves out screenshots, procmemory and the like), the tabs
// that need the full report ask for it through `onNeedFull`.
import { useEffect, useRef, useState, type JSX, type KeyboardEvent, type ReactNode } from 'react'
import type { ReportSources } from './model'
import { FULL_TABS, REPORT_TABS, type ReportTabId } from '../../../shared/report-sections'
import { SummaryView } from './SummaryView'
import { SignaturesView } from './SignaturesView'
import { BehaviorView } from './BehaviorView'
import { NetworkView } from './NetworkView'
import { StaticView } from './StaticView'
import { DroppedView, MemoryView } from './FilesViews'
import { ScreenshotsView } from './ScreenshotsView'
import { RawJsonView } from './RawJsonView'

// The tabs, and which of them need the full report, come from the section table shared with the
// core (src/shared/report-sections.ts), which also decides what /tasks/summary leaves out.
export const TABS = REPORT_TABS
export type TabId = ReportTabId
export { FULL_TABS }

export interface ReportViewsProps {
  report: unknown
  sources: ReportSources
  /** Download of report.json itself. */
  rawDownload: string | null
  /** True while `report` is only the summary. */
  partial?: boolean
  onNeedFull?(): void
  /** What to show in a full-report tab while the full report is loading or failed. */
  fullStatus?: ReactNode
  /** The selected tab (a report tab or an extra one), when the page keeps it. */
  tab?: string
  onTab?(tab: string): void
  /** The task's network route when the page knows it (the report's info.route comes first). */
  route?: string | null
  /** Extra tabs of the page (the task's timeline), shown before the report's. */
  extra?: { id: string; label: string; render(): ReactNode }[]
}

export function ReportViews(p: ReportViewsProps): JSX.Element {
  const [own, setOwn] = useState<string>(p.tab ?? 'summary')
  const tab = p.tab ?? own
  const select = (id: string) => { setOwn(id); p.onTab?.(id) }
  const all = [...TABS.slice(0, 1), ...(p.extra ?? []), ...TABS.slice(1)]
  const list = useRef<HTMLDivElement>(null)
  const needsFull = p.partial === true && FULL_TABS.has(tab as TabId)
  const { onNeedFull } = p
  useEffect(() => { if (needsFull) onNeedFull?.() }, [needsFull, onNeedFull])

  const onKey = (e: KeyboardEvent) => {
    const i = all.findIndex((t) => t.id === tab)
    const next = e.key === 'ArrowRight' ? (i + 1) % all.length : e.key === 'ArrowLeft' ? (i - 1 + all.length) % all.length
      : e.key === 'Home' ? 0 : e.key === 'End' ? all.length - 1 : null
    if (next === null) return
    e.preventDefault()
    const id = (all[next] as { id: string }).id
    select(id)
    list.current?.querySelector<HTMLButtonElement>(`[data-tab="${id}"]`)?.focus()
  }

  const body = (): ReactNode => {
    if (needsFull) return p.fullStatus ?? <p className="text-sm text-zinc-500">Loading the full report…</p>
    const extra = p.extra?.find((t) => t.id === tab)
    if (extra) return extra.render()
    switch (tab as TabId) {
      case 'summary': return <><SummaryView report={p.report} sources={p.sources} /><SignaturesView report={p.report} /></>
      case 'signatures': return <SignaturesView report={p.report} />
      case 'behavior': return <BehaviorView report={p.report} />
      case 'network': return <NetworkView report={p.report} sources={p.sources} taskRoute={p.route ?? null} />
      case 'static': return <StaticView report={p.report} />
      case 'dropped': return <DroppedView report={p.report} sources={p.sources} />
      case 'screenshots': return <ScreenshotsView report={p.report} sources={p.sources} />
      case 'memory': return <MemoryView report={p.report} sources={p.sources} />
      case 'raw': return <RawJsonView report={p.report} download={p.rawDownload} />
      default: return null
    }
  }

  return (
    <div>
      <div ref={list} role="tablist" aria-label="Report" onKeyDown={onKey} className="mb-3 flex flex-wrap gap-1 border-b border-zinc-200 dark:border-zinc-800">
        {all.map((t) => (
          <button key={t.id} type="button" role="tab" data-tab={t.id} id={`tab-${t.id}`} aria-selected={t.id === tab} aria-controls="report-panel"
            tabIndex={t.id === tab ? 0 : -1} onClick={() => select(t.id)}
            className={`-mb-px border-b-2 px-3 py-1.5 text-sm ${t.id === tab ? 'border-sky-600 font-medium' : 'border-transparent text-zinc-600 hover:text-zinc-900 dark:text-zinc-400 dark:hover:text-zinc-100'}`}>
            {t.label}
          </button>
        ))}
      </div>
      <div id="report-panel" role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {/* The tab's own heading (read, not shown): the sections below are its h3s, under the page's h1. */}
        <h2 className="sr-only">{all.find((t) => t.id === tab)?.label ?? 'Report'}</h2>
        {body()}
      </div>
    </div>
  )
}
