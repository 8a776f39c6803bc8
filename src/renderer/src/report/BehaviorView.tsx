// Behaviour: the process tree (collapsible), each process's command line; the calls of the
// process selected in it (CallsView); then the summary's main categories (files written and
// deleted, connections, registry, mutexes). A hostile guest can fork a 100,000-deep chain, so the
// tree is flattened with an explicit stack (no recursion in render) and only a capped number of
// rows is drawn at a time. A sample that never started says why, instead of an empty tree.
import { useContext, useEffect, useMemo, useState, type JSX } from 'react'
import { SafeText, When } from '../components/text'
import { isObj, num, objs, str, strs, type Obj } from './model'
import { DataTable, Empty, Mono, Section, Tags } from './common'
import { reportCallsSource, type CallsListing, type CallsSource } from './calls-source'
import { CallsView } from './CallsView'
import { ReportPage } from './report-context'
import { reportStartFailure } from './start-failure'

const DEFAULT_OPEN_DEPTH = 6
const MAX_ROWS = 2000
const MAX_INDENT = 30

interface Row { key: string; node: Obj; depth: number; kids: number }

function children(n: Obj): Obj[] {
  return Array.isArray(n.children) ? n.children.filter(isObj) : []
}

/** The rows a reader sees: every node whose ancestors are all open, in tree order. */
export function visibleRows(roots: Obj[], isOpen: (key: string, depth: number) => boolean, max = MAX_ROWS): { rows: Row[]; cut: boolean } {
  const rows: Row[] = []
  const stack: { node: Obj; key: string; depth: number }[] = roots.map((node, i) => ({ node, key: String(i), depth: 0 })).reverse()
  while (stack.length > 0) {
    if (rows.length >= max) return { rows, cut: true }
    const { node, key, depth } = stack.pop() as { node: Obj; key: string; depth: number }
    const kids = children(node)
    rows.push({ key, node, depth, kids: kids.length })
    if (kids.length > 0 && isOpen(key, depth)) {
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ node: kids[i] as Obj, key: `${key}.${i}`, depth: depth + 1 })
    }
  }
  return { rows, cut: false }
}

/** Processes in the tree (every node, not only the roots), walked with an explicit stack. */
export function treeSize(roots: Obj[], max = 1_000_000): number {
  const stack = [...roots]
  let n = 0
  while (stack.length > 0 && n < max) {
    const node = stack.pop() as Obj
    n++
    for (const c of children(node)) stack.push(c)
  }
  return n
}

/**
 * How many processes ran: behavior.processes and behavior.generic list each one (both are left
 * out of /tasks/summary), the tree holds each one under its parent, the calls listing those with calls.
 */
export function processCount(report: unknown, listed = 0): number {
  return Math.max(objs(report, 'behavior', 'processes').length, objs(report, 'behavior', 'generic').length,
    treeSize(objs(report, 'behavior', 'processtree')), listed)
}

interface TreeSelection { selected: number | null; onSelect(pid: number): void }

function ProcessTree({ roots, selected, onSelect }: { roots: Obj[] } & TreeSelection): JSX.Element {
  const [toggled, setToggled] = useState<ReadonlySet<string>>(new Set())
  const isOpen = (key: string, depth: number) => (depth < DEFAULT_OPEN_DEPTH) !== toggled.has(key)
  const { rows, cut } = useMemo(() => visibleRows(roots, (k, d) => (d < DEFAULT_OPEN_DEPTH) !== toggled.has(k)), [roots, toggled])
  const toggle = (key: string) => setToggled((t) => { const n = new Set(t); if (n.has(key)) n.delete(key); else n.add(key); return n })
  return (
    <>
      <ul role="tree" aria-label="Process tree" className="text-sm">
        {rows.map((r) => {
          const open = isOpen(r.key, r.depth)
          return (
            <li key={r.key} role="treeitem" aria-level={r.depth + 1} aria-expanded={r.kids > 0 ? open : undefined} aria-selected={num(r.node, 'pid') !== null && num(r.node, 'pid') === selected}
              style={{ paddingLeft: `${Math.min(r.depth, MAX_INDENT) * 1.25}rem` }} className="py-0.5">
              <div className="flex items-baseline gap-2">
                {r.kids > 0 ? (
                  <button type="button" onClick={() => toggle(r.key)} aria-label={`${open ? 'Collapse' : 'Expand'} pid ${num(r.node, 'pid') ?? '?'}`} className="w-4 text-zinc-500">{open ? '▾' : '▸'}</button>
                ) : <span className="w-4" />}
                {num(r.node, 'pid') !== null
                  ? <button type="button" className={`rounded px-1 text-left font-bold hover:underline ${num(r.node, 'pid') === selected ? 'bg-sky-100 dark:bg-sky-900' : ''}`} title="Show its calls" onClick={() => onSelect(num(r.node, 'pid') as number)}><SafeText value={str(r.node, 'process_name') || '(unknown)'} /></button>
                  : <b><SafeText value={str(r.node, 'process_name') || '(unknown)'} /></b>}
                <span className="text-xs text-zinc-500">pid {num(r.node, 'pid') ?? '?'}{r.kids > 0 && !open ? ` · ${r.kids} children` : ''}{r.depth > MAX_INDENT ? ` · depth ${r.depth}` : ''}</span>
              </div>
              {str(r.node, 'command_line') && <div className="ml-6 break-all"><Mono value={str(r.node, 'command_line')} /></div>}
            </li>
          )
        })}
      </ul>
      {cut && <p className="text-xs text-zinc-500">Only the first {MAX_ROWS} rows are shown: collapse branches to see others (report.json has them all).</p>}
    </>
  )
}

const SUMMARY: [string, string][] = [
  ['command_line', 'Command lines'], ['file_created', 'Files created'], ['file_written', 'Files written'],
  ['file_deleted', 'Files deleted'], ['connects_ip', 'Connects to IPs'], ['connects_host', 'Connects to hosts'],
  ['resolves_host', 'Resolves hosts'], ['regkey_written', 'Registry keys written'], ['regkey_deleted', 'Registry keys deleted'],
  ['mutex', 'Mutexes'], ['dll_loaded', 'Libraries loaded']
]

/** The listing of the calls source, once (it may page from the server or read the full report). */
function useCallsListing(source: CallsSource, enabled: boolean): { listing: CallsListing | null; error: string | null } {
  const [state, setState] = useState<{ source: CallsSource; listing: CallsListing | null; error: string | null } | null>(null)
  useEffect(() => {
    if (!enabled) return
    let live = true
    source.listing().then((listing) => { if (live) setState({ source, listing, error: null }) },
      (err: unknown) => { if (live) setState({ source, listing: null, error: err instanceof Error ? err.message : String(err) }) })
    return () => { live = false }
  }, [source, enabled])
  return state?.source === source ? state : { listing: null, error: null }
}

export function BehaviorView({ report }: { report: unknown }): JSX.Element {
  const page = useContext(ReportPage)
  const roots = objs(report, 'behavior', 'processtree')
  const processes = objs(report, 'behavior', 'processes')
  const source = useMemo(() => page.calls ?? reportCallsSource(report), [page.calls, report])
  // A sample that never started has no process and no calls: nothing to ask the server for.
  const failed = processCount(report) === 0 ? reportStartFailure(report, page.taskErrors) : null
  const { listing, error } = useCallsListing(source, failed === null)
  const [pid, setPid] = useState<number | null>(null)
  const categories = SUMMARY.map(([key, label]) => [label, strs(report, 'behavior', 'summary', key)] as const).filter(([, v]) => v.length > 0)
  const count = processCount(report, listing?.processes.length ?? 0)
  const selected = pid ?? listing?.processes[0]?.pid ?? null
  return (
    <>
      {failed !== null && (
        <p role="alert" className="mb-4 rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-200">
          The sample did not start: <SafeText value={failed} />. No process ran, so there is no behaviour to show.
        </p>
      )}
      <Section title="Processes" count={count}>
        {roots.length > 0 ? <ProcessTree roots={roots} selected={selected} onSelect={setPid} /> : processes.length > 0 ? (
          <DataTable rows={processes} label="processes" columns={[
            { title: 'pid', cell: (p) => num(p, 'pid'), sort: (p) => num(p, 'pid') ?? -1 },
            { title: 'ppid', cell: (p) => num(p, 'ppid'), sort: (p) => num(p, 'ppid') ?? -1 },
            { title: 'name', cell: (p) => <SafeText value={str(p, 'process_name')} />, sort: (p) => str(p, 'process_name') },
            { title: 'command line', cell: (p) => <Mono value={str(p, 'command_line')} /> },
            { title: 'first seen', cell: (p) => <When value={p.first_seen} />, sort: (p) => num(p, 'first_seen') ?? 0 }
          ]} />
        ) : <Empty>{failed !== null ? 'No process: the sample did not start.' : 'No processes.'}</Empty>}
      </Section>
      {failed === null && (
        <Section title="Calls" count={listing?.processes.reduce((n, p) => n + p.calls, 0)}>
          {error !== null ? <p role="alert" className="text-sm text-red-700 dark:text-red-400">Calls: <SafeText value={error} /></p>
            : listing === null ? <p role="status" className="text-sm text-zinc-500">Loading the calls…</p>
              : <CallsView source={source} listing={listing} pid={selected} onPid={setPid} />}
        </Section>
      )}
      {categories.length === 0 ? <Empty>No behaviour summary.</Empty> : categories.map(([label, values]) => (
        <Section key={label} title={label} count={values.length}><Tags values={values} /></Section>
      ))}
    </>
  )
}
