// The calls of one process: a virtual grid over every call (a million and more), filtered by
// category and API, searchable, each row one line (time, tid, category, API, arguments, return
// value, status; failed calls marked) and the selected call whole in the details below. Only the
// rows in view are in the DOM; their pages come from the source as they scroll into view
// (calls-source.ts). Browsers cap an element's height (Firefox near 17.9 million px), so past
// MAX_SCROLL_PX the scroll bar is scaled: the virtualizer works in the list's own pixels and the
// scroll box in fewer, mapped both ways here.
import { memo, useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore, type JSX, type KeyboardEvent, type RefObject } from 'react'
import { observeElementOffset, useVirtualizer } from '@tanstack/react-virtual'
import { SafeLines, SafeText } from '../components/text'
import { useDebounced } from '../tasks/use-debounced'
import { CallPages, filterKey, type CallFilter, type CallsListing, type CallsSource, type ProcessCalls } from './calls-source'
import { argsLine, callDate, callFailed, callTime, plainSafe, returnText, valueText } from './calls-format'
import { isObj, type Obj } from './model'
import { counted } from '../format'

export const ROW_PX = 24
export const MAX_SCROLL_PX = 15_000_000
// Fixed columns around Arguments, which takes the rest and never less than 16rem: at 1024 px the
// API and return columns are narrower (truncated, whole in the details below) so Arguments keeps
// about 280 px.
const COLUMNS = 'grid grid-cols-[6.5rem_3rem_4.5rem_8.5rem_minmax(16rem,1fr)_4.5rem_3rem] gap-x-2 items-center px-2'
const MAX_FACET_BUTTONS = 40
const MAX_API_OPTIONS = 500
const noSubscribe = () => () => {}
const zero = () => 0

/** The virtualizer over `count` rows of ROW_PX, with the scroll box scaled past MAX_SCROLL_PX. */
function useScaledRows(count: number, scrollRef: RefObject<HTMLDivElement | null>) {
  const virtualPx = count * ROW_PX
  const realPx = Math.min(virtualPx, MAX_SCROLL_PX)
  const geo = useRef({ virtualPx, realPx })
  geo.current = { virtualPx, realPx }
  /** List pixels per scroll-box pixel, for a viewport of `h` px. */
  const ratio = useCallback((h: number) => {
    const { virtualPx: v, realPx: r } = geo.current
    return v > r && r > h ? (v - h) / (r - h) : 1
  }, [])
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_PX,
    overscan: 12,
    useFlushSync: false,
    observeElementOffset: (instance, cb) => observeElementOffset(instance, (offset, scrolling) => cb(offset * ratio(instance.scrollElement?.clientHeight ?? 0), scrolling))
  })
  const items = virtualizer.getVirtualItems()
  const h = virtualizer.scrollRect?.height ?? 0
  const offset = virtualizer.scrollOffset ?? 0
  // Rows sit at their list position; the box holding them moves by the difference of the two scales.
  const shift = offset / ratio(h) - offset
  const scrollToRow = (i: number) => {
    const el = scrollRef.current
    if (!el) return
    const view = el.clientHeight
    const top = i * ROW_PX
    const target = top < offset ? top : top + ROW_PX > offset + view ? top + ROW_PX - view : offset
    if (target !== offset) el.scrollTop = target / ratio(view)
  }
  return { items, shift, realPx, scrollToRow }
}

interface RowProps { index: number; start: number; call: Obj | undefined; selected: boolean; onSelect(i: number): void }

const CallRow = memo(function CallRow({ index, start, call, selected, onSelect }: RowProps): JSX.Element {
  const failed = call !== undefined && callFailed(call)
  return (
    <div id={`call-row-${index}`} role="row" aria-rowindex={index + 1} aria-selected={selected} data-call={call === undefined ? undefined : index}
      data-failed={failed || undefined} onClick={() => onSelect(index)}
      className={`${COLUMNS} absolute left-0 top-0 w-full cursor-default border-b border-zinc-100 font-mono text-xs dark:border-zinc-900 ${selected ? 'bg-sky-100 dark:bg-sky-900/60' : failed ? 'bg-red-50 dark:bg-red-950/40' : 'hover:bg-zinc-50 dark:hover:bg-zinc-900'}`}
      style={{ height: ROW_PX, transform: `translateY(${start}px)` }}>
      {call === undefined ? <span role="gridcell" className="col-span-7 text-zinc-400">…</span> : (
        <>
          <span role="gridcell" className="tabular-nums text-zinc-600 dark:text-zinc-400" title={callDate(call.time) || undefined}>{callTime(call.time)}</span>
          <span role="gridcell" className="truncate tabular-nums text-zinc-600 dark:text-zinc-400">{valueText(call.tid, 12)}</span>
          <span role="gridcell" className="truncate"><SafeText value={valueText(call.category, 40)} /></span>
          <span role="gridcell" className="truncate font-semibold" title={plainSafe(valueText(call.api, 80))}><SafeText value={valueText(call.api, 80)} /></span>
          <span role="gridcell" className="truncate"><SafeText value={argsLine(call.arguments)} /></span>
          <span role="gridcell" className="truncate"><SafeText value={returnText(call)} /></span>
          <span role="gridcell" className={failed ? 'font-semibold text-red-700 dark:text-red-400' : 'text-zinc-500'}>{failed ? 'failed' : call.status === undefined ? '' : 'ok'}</span>
        </>
      )}
    </div>
  )
})

/** The selected call whole: every argument at full length (up to 64 KiB each), and the monitor's extras. */
function CallDetails({ call, index }: { call: Obj; index: number }): JSX.Element {
  const args = isObj(call.arguments) ? Object.entries(call.arguments).slice(0, 500) : []
  const extras: [string, unknown][] = (['errno', 'flags', 'nt_status', 'last_error', 'buffer', 'stacktrace'] as const)
    .filter((k) => call[k] !== undefined && call[k] !== null && !(Array.isArray(call[k]) && (call[k] as unknown[]).length === 0))
    .map((k) => [k, call[k]])
  const line = (v: unknown) => (typeof v === 'string' ? v : valueText(v, 65_536))
  return (
    <section aria-label="Call details" className="mt-2 rounded border border-zinc-200 p-2 text-sm dark:border-zinc-800">
      <div className="mb-1 flex flex-wrap items-baseline gap-2">
        <b className="font-mono"><SafeText value={valueText(call.api, 500)} /></b>
        <span className="text-xs text-zinc-500">call {typeof call.index === 'number' ? call.index : index} · <SafeText value={valueText(call.category, 200)} /> · tid {valueText(call.tid, 20)} · {callDate(call.time) || callTime(call.time)}</span>
        {callFailed(call) && <span className="text-xs font-semibold text-red-700 dark:text-red-400">failed</span>}
      </div>
      <table className="w-full text-xs">
        <tbody>
          {args.map(([k, v], i) => (
            <tr key={`${i}-${k}`} className="align-top">
              <th scope="row" className="w-40 py-0.5 pr-3 text-left font-medium text-zinc-500"><SafeText value={k} /></th>
              <td className="whitespace-pre-wrap break-all py-0.5 font-mono"><SafeLines value={line(v)} /></td>
            </tr>
          ))}
          <tr className="align-top">
            <th scope="row" className="py-0.5 pr-3 text-left font-medium text-zinc-500">return value</th>
            <td className="break-all py-0.5 font-mono"><SafeText value={valueText(call.return_value, 4096)} /></td>
          </tr>
          {extras.map(([k, v]) => (
            <tr key={k} className="align-top">
              <th scope="row" className="py-0.5 pr-3 text-left font-medium text-zinc-500">{k}</th>
              <td className="whitespace-pre-wrap break-all py-0.5 font-mono"><SafeLines value={line(v)} /></td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}

function sortedFacets(f: Record<string, number>, max: number): [string, number][] {
  return Object.entries(f).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, max)
}

function ProcessPicker({ listing, pid, onPid }: { listing: CallsListing; pid: number | null; onPid(pid: number): void }): JSX.Element {
  const known = listing.processes.some((p) => p.pid === pid)
  return (
    <label className="flex items-center gap-1">Process
      <select aria-label="Process" value={pid ?? ''} onChange={(e) => onPid(Number(e.target.value))}
        className="max-w-64 rounded border border-zinc-300 bg-transparent px-1 py-0.5 dark:border-zinc-700">
        {!known && pid !== null && <option value={pid}>pid {pid} · no calls</option>}
        {listing.processes.map((p) => <option key={p.pid} value={p.pid}>{plainSafe(valueText(p.process_name, 60)) || '(unknown)'} · pid {p.pid} · {counted(p.calls, 'call')}</option>)}
      </select>
    </label>
  )
}

export interface CallsViewProps {
  source: CallsSource
  listing: CallsListing
  /** The process shown (the first of the listing when it has no calls). */
  pid: number | null
  onPid(pid: number): void
}

export function CallsView({ source, listing, pid, onPid }: CallsViewProps): JSX.Element {
  const proc: ProcessCalls | undefined = pid === null ? listing.processes[0] : listing.processes.find((p) => p.pid === pid)
  const [categories, setCategories] = useState<string[]>([])
  const [api, setApi] = useState('')
  const [typed, setTyped] = useState('')
  const q = useDebounced(typed.trim().slice(0, 200), 250)
  const filter = useMemo<CallFilter>(() => ({ categories, api, q }), [categories, api, q])
  const key = `${proc?.pid ?? ''}|${filterKey(filter)}`
  // One set of pages per process and filter: `key` says which (the filter object is rebuilt on every change).
  const paged = useMemo(() => (proc ? new CallPages(source, proc.pid, filter) : null), [source, key])
  useEffect(() => () => paged?.dispose(), [paged])
  useSyncExternalStore(paged?.subscribe ?? noSubscribe, paged?.getVersion ?? zero)

  const scrollRef = useRef<HTMLDivElement>(null)
  const total = paged?.total ?? 0
  const { items, shift, realPx, scrollToRow } = useScaledRows(total, scrollRef)
  const first = items[0]?.index ?? 0
  const last = items[items.length - 1]?.index ?? 0
  useEffect(() => { paged?.want(first, last) }, [paged, first, last])

  const [selected, setSelected] = useState(0)
  useEffect(() => {
    setSelected(0)
    if (scrollRef.current) scrollRef.current.scrollTop = 0
  }, [paged])

  if (listing.processes.length === 0) return <p className="text-sm text-zinc-500">No calls were recorded.</p>
  if (proc === undefined) {
    return (
      <div className="flex flex-wrap items-center gap-2 text-sm">
        <ProcessPicker listing={listing} pid={pid} onPid={onPid} />
        <span className="text-zinc-500">No calls were recorded for pid {pid}.</span>
      </div>
    )
  }
  const toggle = (c: string) => setCategories((cur) => (cur.includes(c) ? cur.filter((x) => x !== c) : [...cur, c]))
  const select = (i: number) => {
    const next = Math.max(0, Math.min(total - 1, i))
    setSelected(next)
    scrollToRow(next)
  }
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (total === 0) return
    const pageRows = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? ROW_PX * 10) / ROW_PX) - 1)
    const moves: Record<string, number> = { ArrowDown: selected + 1, ArrowUp: selected - 1, PageDown: selected + pageRows, PageUp: selected - pageRows, Home: 0, End: total - 1 }
    const to = moves[e.key]
    if (to === undefined) return
    e.preventDefault()
    select(to)
  }
  const loading = paged !== null && paged.total === null && paged.error === null
  const current = paged?.row(selected)
  const apis = sortedFacets(proc.apis, MAX_API_OPTIONS)
  if (api !== '' && !apis.some(([a]) => a === api)) apis.unshift([api, 0])

  return (
    <div className="flex flex-col gap-2">
      <div className="flex flex-wrap items-center gap-2 text-sm">
        <ProcessPicker listing={listing} pid={proc.pid} onPid={onPid} />
        <label className="flex items-center gap-1">API
          <select aria-label="API" value={api} onChange={(e) => setApi(e.target.value)}
            className="max-w-56 rounded border border-zinc-300 bg-transparent px-1 py-0.5 font-mono text-xs dark:border-zinc-700">
            <option value="">all</option>
            {apis.map(([a, n]) => <option key={a} value={a}>{plainSafe(valueText(a, 60))}{n > 0 ? ` (${n.toLocaleString('en-US')})` : ''}</option>)}
          </select>
        </label>
        <input type="search" aria-label="Search calls" placeholder="Search API, arguments, return value" value={typed} onChange={(e) => setTyped(e.target.value)}
          className="min-w-48 flex-1 rounded border border-zinc-300 bg-transparent px-2 py-0.5 dark:border-zinc-700" />
      </div>
      <div role="group" aria-label="Categories" className="flex flex-wrap gap-1">
        {sortedFacets(proc.categories, MAX_FACET_BUTTONS).map(([c, n]) => (
          <button key={c} type="button" aria-pressed={categories.includes(c)} onClick={() => toggle(c)}
            className={`rounded border px-1.5 py-0.5 text-xs ${categories.includes(c) ? 'border-sky-600 bg-sky-100 dark:bg-sky-900' : 'border-zinc-300 dark:border-zinc-700'}`}>
            <SafeText value={c || '(none)'} /> <span className="text-zinc-500">{n.toLocaleString('en-US')}</span>
          </button>
        ))}
      </div>
      <p role="status" className="text-xs text-zinc-500" data-testid="calls-count">
        {loading ? 'Loading calls…' : `${total.toLocaleString('en-US')} of ${counted(proc.calls, 'call')}`}
        {proc.dropped > 0 && ` · ${proc.dropped.toLocaleString('en-US')} more were seen but not kept (over the per-process cap)`}
        {listing.origin === 'report' && (listing.unpaged ? ' · from the report (this server does not page calls)' : ' · from the report')}
      </p>
      {paged?.error && <p role="alert" className="text-sm text-red-700 dark:text-red-400">Calls: <SafeText value={paged.error.message} /></p>}
      <div className="rounded border border-zinc-200 dark:border-zinc-800">
        <div role="presentation" className={`${COLUMNS} h-7 border-b border-zinc-200 bg-zinc-50 text-xs font-medium uppercase tracking-wide text-zinc-500 dark:border-zinc-800 dark:bg-zinc-900`}>
          <span>Time</span><span>Tid</span><span>Category</span><span>API</span><span>Arguments</span><span>Return</span><span>Status</span>
        </div>
        <div ref={scrollRef} role="grid" aria-label="Calls" aria-rowcount={total} aria-busy={loading} tabIndex={0} onKeyDown={onKeyDown}
          aria-activedescendant={total > 0 ? `call-row-${selected}` : undefined}
          className="relative h-[28rem] overflow-auto outline-none focus-visible:ring-2 focus-visible:ring-sky-500" style={{ contain: 'strict' }}>
          <div style={{ height: realPx, position: 'relative', width: '100%', overflow: 'hidden' }}>
            <div style={{ position: 'absolute', top: 0, left: 0, width: '100%', transform: shift === 0 ? undefined : `translateY(${shift}px)` }}>
              {items.map((it) => (
                <CallRow key={it.index} index={it.index} start={it.start} call={paged?.row(it.index)} selected={it.index === selected} onSelect={setSelected} />
              ))}
            </div>
          </div>
          {!loading && total === 0 && <p className="absolute inset-x-0 top-0 p-3 text-sm text-zinc-500">No call matches.</p>}
        </div>
      </div>
      {current !== undefined && <CallDetails call={current} index={selected} />}
    </div>
  )
}
