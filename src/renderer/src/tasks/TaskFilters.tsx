// Filters of the task list: a search (any kind, or one kind picked next to the box: domain, IP,
// URL, signature, hash, name, file, command line, mutex, registry key, tag, machine, task id; Cuckoo's
// and CAPE's spellings of the kinds too; a kind no one knows is said under the box; the query language of shared/search-query.ts
// typed as is works too), sent once typing pauses and only when the service could mean it; the
// order (newest or oldest first, highest or lowest score first); one toggle chip per state and per
// category (none pressed = all).
import { useEffect, useState, type JSX } from 'react'
import { TASK_STATUSES } from '../../../shared/api/schemas'
import { TASK_CATEGORIES, type TaskSort } from '../../../shared/api/ui-schemas'
import { checkSearch, formatSearch, KIND_ALIASES, SEARCH_KIND_HELP, SEARCH_KINDS, type SearchKind } from '../../../shared/search-query'
import { useTasksView, type SearchIn } from './filter-store'
import { useDebounced } from './use-debounced'

const KIND_LABELS: Record<SearchKind, string> = {
  domain: 'Domain', ip: 'IP address', url: 'URL', sig: 'Signature', alert: 'IDS alert', hash: 'Hash', name: 'Name', file: 'File', command: 'Command line',
  mutex: 'Mutex', key: 'Registry key', tag: 'Tag', machine: 'Machine', id: 'Task id'
}
const PLACEHOLDERS: Record<SearchIn, string> = {
  any: 'Search: domain, IP, URL, hash, signature, alert, name, file, command, tag, machine, id, or kind:value',
  domain: 'evil.example (and its subdomains)', ip: '203.0.113.9 or 2001:db8::1', url: 'evil.example/gate.php', sig: 'antivm or antivm_generic_disk', alert: '2019401 or "ET TROJAN"',
  hash: 'md5, sha1, sha256, or its first 6+ hex digits', name: 'part of a file name or URL', file: '/tmp/update.bin or crontab.txt',
  command: 'curl, or a whole command line', mutex: 'Global\\EvilMutex', key: 'HKEY_CURRENT_USER\\Software\\…\\Run', tag: 'win7', machine: 'cuckoo1', id: '42'
}
const SORTS: { value: `${TaskSort}:${'asc' | 'desc'}`; label: string }[] = [
  { value: 'id:desc', label: 'Newest first' },
  { value: 'id:asc', label: 'Oldest first' },
  { value: 'score:desc', label: 'Highest score first' },
  { value: 'score:asc', label: 'Lowest score first' }
]
const CATEGORY_LABELS: Record<string, string> = { file: 'file', url: 'URL', archive: 'archive' }

/** The query of the box's text searched as `kind` (the text as typed for "everything", or when it names its kind). */
export function composeQuery(kind: SearchIn, text: string): string {
  const t = text.trim()
  if (t === '' || kind === 'any' || t.toLowerCase().startsWith(`${kind}:`)) return t
  return formatSearch([{ kind, value: t }])
}

/** Cuckoo's and CAPE's spellings of a kind, as the help lists them. */
function aliasesOf(kind: SearchKind): string {
  const names = Object.entries(KIND_ALIASES).filter(([, k]) => k === kind).map(([a]) => `${a}:`)
  return names.length === 0 ? '' : ` (also ${names.join(' ')})`
}

/** Why the service could not search this query, or null. */
function problemOf(q: string): string | null {
  try {
    checkSearch(q)
    return null
  } catch (err) {
    return (err as Error).message
  }
}

export function TaskFilters({ searchUnsupported }: { searchUnsupported: boolean }): JSX.Element {
  const v = useTasksView()
  // The box shows the text of the query in force; a query set elsewhere (a link, a reset) wins over stale text.
  const [typed, setTyped] = useState(() => {
    const s = useTasksView.getState()
    if (composeQuery(s.kind, s.text) === s.q) return s.text
    useTasksView.setState({ text: s.q, kind: 'any' })
    return s.q
  })
  const settled = useDebounced(typed, 300)
  const query = composeQuery(v.kind, settled)
  const problem = problemOf(query)
  useEffect(() => {
    if (problem === null && query !== useTasksView.getState().q) useTasksView.getState().setQ(query)
  }, [query, problem])
  const type = (text: string) => {
    setTyped(text)
    v.setText(text)
  }
  const now = () => {
    const q = composeQuery(v.kind, typed)
    if (problemOf(q) === null) v.setQ(q)
  }

  const chip = (pressed: boolean) =>
    `rounded-full border px-2.5 py-0.5 text-xs focus-visible:outline-2 focus-visible:outline-sky-500 ${pressed
      ? 'border-sky-700 bg-sky-700 text-white dark:border-sky-500 dark:bg-sky-700'
      : 'border-zinc-300 text-zinc-700 hover:bg-zinc-100 dark:border-zinc-700 dark:text-zinc-300 dark:hover:bg-zinc-800'}`
  const field = 'rounded border border-zinc-300 bg-transparent px-2 py-1 text-sm dark:border-zinc-700 dark:bg-zinc-900'
  const unsupported = searchUnsupported && (v.q !== '' || v.statuses.length > 1 || v.categories.length > 0 || v.sort !== 'id' || v.order !== 'desc')

  return (
    <div role="search" aria-label="Search and filter tasks" className="flex flex-col gap-2">
      <div className="flex flex-wrap items-center gap-2">
        <select aria-label="Search in" value={v.kind} onChange={(e) => v.setKind(e.target.value as SearchIn)} className={field}
          title={v.kind === 'any' ? 'Every kind the text can be' : SEARCH_KIND_HELP[v.kind]}>
          <option value="any">Everything</option>
          {SEARCH_KINDS.map((k) => <option key={k} value={k}>{KIND_LABELS[k]}</option>)}
        </select>
        <input type="search" aria-label="Search tasks" placeholder={PLACEHOLDERS[v.kind]} value={typed} spellCheck={false}
          aria-invalid={problem !== null} aria-describedby={problem !== null ? 'task-search-problem' : undefined}
          onChange={(e) => type(e.target.value)}
          onKeyDown={(e) => { if (e.key === 'Enter') now() }}
          className={`w-96 max-w-full ${field}`} />
        <select aria-label="Sort tasks" value={`${v.sort}:${v.order}`} className={field}
          onChange={(e) => { const [sort, order] = e.target.value.split(':') as [TaskSort, 'asc' | 'desc']; v.setSort(sort, order) }}>
          {SORTS.map((s) => <option key={s.value} value={s.value}>{s.label}</option>)}
        </select>
        <details className="relative text-xs text-zinc-600 dark:text-zinc-400">
          <summary className="cursor-pointer select-none">Search syntax</summary>
          <div className="absolute right-0 z-10 mt-1 w-[32rem] max-w-[90vw] rounded border border-zinc-200 bg-white p-3 shadow dark:border-zinc-700 dark:bg-zinc-900">
            <p>Plain text finds every kind it can be. <code>kind:value</code> finds one kind; terms separated by blanks must all match; quotes keep blanks in one term.</p>
            <dl className="mt-2 grid grid-cols-[auto_1fr] gap-x-3 gap-y-1">
              {SEARCH_KINDS.map((k) => [<dt key={`${k}-t`}><code>{k}:</code></dt>, <dd key={`${k}-d`}>{SEARCH_KIND_HELP[k]}{aliasesOf(k)}</dd>])}
            </dl>
          </div>
        </details>
      </div>
      {problem !== null ? (
        <p id="task-search-problem" role="alert" className="text-xs text-red-700 dark:text-red-400">{problem}</p>
      ) : null}
      <div className="flex flex-wrap items-center gap-x-4 gap-y-1">
        <div role="group" aria-label="Filter by state" className="flex flex-wrap gap-1">
          <button type="button" aria-pressed={v.statuses.length === 0} className={chip(v.statuses.length === 0)} onClick={v.clearStatuses}>all</button>
          {TASK_STATUSES.map((s) => (
            <button key={s} type="button" aria-pressed={v.statuses.includes(s)} className={chip(v.statuses.includes(s))} onClick={() => v.toggleStatus(s)}>
              {s.replace('_', ' ')}
            </button>
          ))}
        </div>
        <div role="group" aria-label="Filter by category" className="flex flex-wrap gap-1">
          <button type="button" aria-pressed={v.categories.length === 0} className={chip(v.categories.length === 0)} onClick={v.clearCategories}>any category</button>
          {TASK_CATEGORIES.map((c) => (
            <button key={c} type="button" aria-pressed={v.categories.includes(c)} className={chip(v.categories.includes(c))} onClick={() => v.toggleCategory(c)}>
              {CATEGORY_LABELS[c]}
            </button>
          ))}
        </div>
      </div>
      {unsupported ? (
        <p role="status" className="w-full text-xs text-amber-700 dark:text-amber-400">
          This server has no task search (a Cuckoo server): the list shows every task{v.statuses.length === 1 ? ' in that state' : ''}, newest first; search, categories, sorting and several states at once need an Aviary server.
        </p>
      ) : null}
    </div>
  )
}
