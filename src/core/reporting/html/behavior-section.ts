// The process tree of report.html: nested lists with each process's name, pid and command line,
// walked with an explicit stack (a hostile guest can fork a 100,000-deep chain) and capped in both
// node count and depth, with a note of what was left out. Falls back to a flat table when the report
// has processes but no tree. Then the behaviour summary's main categories as capped lists.
import { text, when } from './escape'
import { MAX_LIST, moreLine, table, tags, type Obj } from './blocks'
import type { PageWriter } from './page-writer'
import { isObj, num, objs, str, summary } from '../report-view'

export const MAX_TREE_NODES = 2000
export const MAX_TREE_DEPTH = 64

function children(n: Obj): Obj[] {
  return Array.isArray(n.children) ? n.children.filter(isObj) : []
}

/** How many nodes a forest holds (stops counting at `limit`). */
function countNodes(roots: Obj[], limit = 10_000_000): number {
  let count = 0
  const todo: Obj[] = [...roots]
  while (todo.length > 0 && count < limit) {
    const n = todo.pop() as Obj
    count++
    for (const c of children(n)) todo.push(c)
  }
  return count
}

function nodeHtml(n: Obj): string {
  const name = str(n, 'process_name') || '(unknown)'
  const seen = num(n, 'first_seen')
  return `<b>${text(name, 300)}</b> <span class="muted">pid ${text(num(n, 'pid') ?? '?')}, ppid ${text(num(n, 'ppid') ?? '?')}` +
    `${seen !== null ? `, ${when(seen)}` : ''}</span><br><code>${text(str(n, 'command_line'), 2000)}</code>`
}

async function tree(w: PageWriter, roots: Obj[]): Promise<void> {
  const total = countNodes(roots)
  let shown = 0
  let cutDeep = 0
  w.put('<ul class="tree">')
  const stack: { nodes: Obj[]; i: number }[] = [{ nodes: roots, i: 0 }]
  while (stack.length > 0 && shown < MAX_TREE_NODES) {
    const top = stack[stack.length - 1] as { nodes: Obj[]; i: number }
    if (top.i >= top.nodes.length) {
      stack.pop()
      w.put(stack.length > 0 ? '</ul></li>' : '')
      continue
    }
    const n = top.nodes[top.i++] as Obj
    shown++
    w.put(`<li>${nodeHtml(n)}`)
    const kids = children(n)
    if (kids.length > 0 && stack.length < MAX_TREE_DEPTH) {
      w.put('<ul>')
      stack.push({ nodes: kids, i: 0 })
    } else {
      if (kids.length > 0) {
        const deeper = countNodes(kids)
        cutDeep += deeper
        w.put(`<p class="more">${deeper} descendants deeper than ${MAX_TREE_DEPTH} levels not shown.</p>`)
      }
      w.put('</li>')
    }
    await w.tick()
  }
  // Stopped at the node cap: close what is still open.
  for (let i = stack.length - 1; i > 0; i--) w.put('</ul></li>')
  w.put('</ul>' + moreLine(total - cutDeep, shown, 'processes'))
}

const SUMMARY_KEYS: [string, string][] = [
  ['command_line', 'Command lines'], ['file_created', 'Files created'], ['file_written', 'Files written'],
  ['file_deleted', 'Files deleted'], ['connects_ip', 'Connects to IPs'], ['connects_host', 'Connects to hosts'],
  ['resolves_host', 'Resolves hosts'], ['regkey_written', 'Registry keys written'], ['mutex', 'Mutexes'],
  ['dll_loaded', 'Libraries loaded']
]

export async function behaviorSection(w: PageWriter, report: Obj): Promise<void> {
  const roots = objs(report, 'behavior', 'processtree')
  const processes = objs(report, 'behavior', 'processes')
  w.put(`<section id="behavior"><h2>Processes (${processes.length || countNodes(roots)})</h2>`)
  if (roots.length > 0) await tree(w, roots)
  else {
    await table(w, processes, [
      { title: 'pid', cell: (p) => text(num(p, 'pid')) },
      { title: 'ppid', cell: (p) => text(num(p, 'ppid')) },
      { title: 'name', cell: (p) => text(str(p, 'process_name'), 300) },
      { title: 'command line', cell: (p) => `<code>${text(str(p, 'command_line'))}</code>` },
      { title: 'first seen', cell: (p) => when(p.first_seen) }
    ], 'processes')
  }
  for (const [key, label] of SUMMARY_KEYS) {
    const values = summary(report, key)
    if (values.length === 0) continue
    w.put(`<h3>${text(label)} (${values.length})</h3><p>${tags(values, MAX_LIST)}</p>`)
    await w.tick()
  }
  w.put('</section>')
}
