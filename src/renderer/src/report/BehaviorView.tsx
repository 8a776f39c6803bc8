// Behaviour: the process tree (collapsible), each process's command line, then the summary's main
// categories (files written and deleted, connections, registry, mutexes). A hostile guest can fork
// a 100,000-deep chain, so the tree is flattened with an explicit stack (no recursion in render)
// and only a capped number of rows is drawn at a time.
import { useMemo, useState, type JSX } from 'react'
import { SafeText, When } from '../components/text'
import { isObj, num, objs, str, strs, type Obj } from './model'
import { DataTable, Empty, Mono, Section, Tags } from './common'

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

function ProcessTree({ roots }: { roots: Obj[] }): JSX.Element {
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
            <li key={r.key} role="treeitem" aria-level={r.depth + 1} aria-expanded={r.kids > 0 ? open : undefined} aria-selected={false}
              style={{ paddingLeft: `${Math.min(r.depth, MAX_INDENT) * 1.25}rem` }} className="py-0.5">
              <div className="flex items-baseline gap-2">
                {r.kids > 0 ? (
                  <button type="button" onClick={() => toggle(r.key)} aria-label={`${open ? 'Collapse' : 'Expand'} pid ${num(r.node, 'pid') ?? '?'}`} className="w-4 text-zinc-500">{open ? '▾' : '▸'}</button>
                ) : <span className="w-4" />}
                <b><SafeText value={str(r.node, 'process_name') || '(unknown)'} /></b>
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

export function BehaviorView({ report }: { report: unknown }): JSX.Element {
  const roots = objs(report, 'behavior', 'processtree')
  const processes = objs(report, 'behavior', 'processes')
  const categories = SUMMARY.map(([key, label]) => [label, strs(report, 'behavior', 'summary', key)] as const).filter(([, v]) => v.length > 0)
  return (
    <>
      <Section title="Processes" count={processes.length || roots.length}>
        {roots.length > 0 ? <ProcessTree roots={roots} /> : (
          <DataTable rows={processes} label="processes" columns={[
            { title: 'pid', cell: (p) => num(p, 'pid'), sort: (p) => num(p, 'pid') ?? -1 },
            { title: 'ppid', cell: (p) => num(p, 'ppid'), sort: (p) => num(p, 'ppid') ?? -1 },
            { title: 'name', cell: (p) => <SafeText value={str(p, 'process_name')} />, sort: (p) => str(p, 'process_name') },
            { title: 'command line', cell: (p) => <Mono value={str(p, 'command_line')} /> },
            { title: 'first seen', cell: (p) => <When value={p.first_seen} />, sort: (p) => num(p, 'first_seen') ?? 0 }
          ]} />
        )}
      </Section>
      {categories.length === 0 ? <Empty>No behaviour summary.</Empty> : categories.map(([label, values]) => (
        <Section key={label} title={label} count={values.length}><Tags values={values} /></Section>
      ))}
    </>
  )
}
