// Compare: two reported tasks, on the same connection or on two (this computer, a remote Aviary, a
// Cuckoo 2 server), side by side. The URL names both (`#/compare?a=local:12&b=3:45`, and `diff=1`
// for "only differences"), so a comparison can be bookmarked and reloaded. Each side's task is
// read with /tasks/view, and its report is digested off the page's thread (compare/fetch-facts.ts):
// the page holds two digests, never a report. A side not chosen yet, or changed, is picked here,
// from any connection or as a file (a report.json or an analysis archive, read in the page; the URL
// then says `a=file`, and after a reload the page asks for the file again).
import { useDeferredValue, useMemo, useState, type JSX } from 'react'
import { useNavigate, useSearchParams } from 'react-router'
import { useQuery } from '@tanstack/react-query'
import { apiUrl, type ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { useConnections } from '../components/ConnectionPicker'
import { StatusBadge, ScoreBadge } from '../components/status'
import { SafeText } from '../components/text'
import { useUi } from '../state/ui'
import { targetName } from '../tasks/task-source'
import { CompareView } from '../compare/CompareView'
import { loadFacts, type FactsAnswer } from '../compare/fetch-facts'
import { TaskPicker } from '../compare/TaskPicker'
import { FILE_PARAM, parseRef, refParam, sameRef, type TaskRef } from '../compare/refs'
import type { Task } from '../../../shared/api/schemas'

const SETTLED = new Set(['reported', 'failed_analysis', 'failed_processing', 'failed_reporting'])

interface Side {
  ref: TaskRef | null
  /** The URL says this side is a file opened in the page; `file` is it, when it is still open. */
  wantsFile: boolean
  file: File | null
  serverName: string
  /** The connection is not (or no longer) saved on this service. */
  unknownServer: boolean
  /** The connection is a dispatcher: it holds no reports. */
  dispatcher: boolean
  task: Partial<Task> | undefined
  taskError: Error | null
  facts: FactsAnswer | undefined
  factsError: Error | null
}

function useSide(ref: TaskRef | null, wantsFile: boolean, file: File | null): Side {
  const connections = useConnections()
  const connection: ConnectionId = ref?.connection ?? null
  const id = ref?.id ?? 0
  const saved = connection === null ? null : (connections.data ?? []).find((c) => c.id === connection)
  const unknownServer = connection !== null && connections.isSuccess && saved === undefined
  const dispatcher = saved?.kind === 'dispatcher'
  const task = useQuery({
    queryKey: ['compare', connection, id, 'task'],
    queryFn: async ({ signal }): Promise<{ task: Partial<Task> }> => (await clientOf(connection)).task(id, { signal }),
    // A remote side waits for the saved connections: a dispatcher or a removed one is not asked.
    enabled: ref !== null && !wantsFile && (connection === null || (connections.isSuccess && !unknownServer && !dispatcher)),
    // A side still running is followed until it is reported (or fails).
    refetchInterval: (q) => (SETTLED.has(String(q.state.data?.task.status)) ? false : 5000),
    retry: false
  })
  const reported = task.data?.task.status === 'reported'
  const fromFile = wantsFile && file !== null
  const facts = useQuery({
    queryKey: fromFile ? ['compare', 'file', file.name, file.size, file.lastModified] : ['compare', connection, id, 'facts'],
    queryFn: async ({ signal }) => loadFacts(fromFile ? { file }
      : { summaryUrl: await apiUrl(connection, `/tasks/summary/${id}`), reportUrl: await apiUrl(connection, `/tasks/report/${id}`) }, signal),
    enabled: fromFile || (ref !== null && reported),
    // Only the two digests on screen are kept: a side changed lets its digest go at once. A digest
    // is never refetched, so it needs no deep comparison with a previous one (20,000 rows each).
    gcTime: 0, staleTime: Infinity, retry: false, structuralSharing: false
  })
  return {
    ref,
    wantsFile,
    file,
    serverName: connection === null ? 'This computer' : saved?.name ?? `connection ${connection}`,
    unknownServer,
    dispatcher,
    task: task.data?.task,
    taskError: task.error,
    facts: facts.data,
    factsError: facts.error
  }
}

function SideCard({ name, side, picking, onChange }: { name: 'A' | 'B'; side: Side; picking: boolean; onChange(): void }): JSX.Element {
  const navigate = useNavigate()
  const setConnection = useUi((s) => s.setConnection)
  const { ref, task, facts } = side
  const status = String(task?.status ?? '')
  let body: JSX.Element
  if (side.wantsFile) {
    body = side.file === null ? <p className="text-zinc-700 dark:text-zinc-300">This side was a file opened in the page: open it again below.</p> : (
      <>
        <p className="flex flex-wrap items-center gap-2">
          {facts && <ScoreBadge score={facts.facts.score} />}
          <span className="min-w-0 break-all font-mono text-xs"><SafeText value={facts?.facts.title || side.file.name} /></span>
        </p>
        {side.factsError && <p role="alert" className="mt-1 text-red-700 dark:text-red-400"><SafeText value={side.file.name} />: <SafeText value={side.factsError.message} /></p>}
        {!facts && !side.factsError && <p role="status" className="mt-1 text-zinc-600 dark:text-zinc-400">Reading <SafeText value={side.file.name} />…</p>}
      </>
    )
  } else if (ref === null) body = <p className="text-zinc-700 dark:text-zinc-300">Pick a task below.</p>
  else if (side.unknownServer) body = <p role="alert" className="text-red-700 dark:text-red-400">Connection {ref.connection} is not saved on this computer (removed?): pick another task.</p>
  else if (side.dispatcher) body = <p role="alert" className="text-red-700 dark:text-red-400"><SafeText value={side.serverName} /> is a dispatcher: it keeps no reports to compare. Pick the task on the node that ran it.</p>
  else if (side.taskError) body = <p role="alert" className="text-red-700 dark:text-red-400">Task {ref.id}: <SafeText value={side.taskError.message} /></p>
  else if (task === undefined) body = <p role="status" className="text-zinc-600 dark:text-zinc-400">Loading task {ref.id}…</p>
  else {
    body = (
      <>
        <p className="flex flex-wrap items-center gap-2">
          <StatusBadge status={status} />
          {facts && <ScoreBadge score={facts.facts.score} />}
          <span className="min-w-0 break-all font-mono text-xs"><SafeText value={facts?.facts.title || (task.target ? targetName({ category: task.category ?? '', target: task.target }) : '')} /></span>
        </p>
        {status !== 'reported' && <p className="mt-1 text-zinc-700 dark:text-zinc-300">{SETTLED.has(status) ? `Task ${ref.id} ended without a report (${status.replace('_', ' ')}): there is nothing to compare.` : `Task ${ref.id} has no report yet: it is compared once it is reported.`}</p>}
        {status === 'reported' && side.factsError && <p role="alert" className="mt-1 text-red-700 dark:text-red-400">Report: <SafeText value={side.factsError.message} /></p>}
        {status === 'reported' && !facts && !side.factsError && <p role="status" className="mt-1 text-zinc-600 dark:text-zinc-400">Reading the report…</p>}
        {facts && <p className="mt-1 text-xs text-zinc-600 dark:text-zinc-400">{facts.source === 'summary' ? 'From the report summary (/tasks/summary).' : 'From the full report (the server has no /tasks/summary).'}</p>}
      </>
    )
  }
  return (
    <section aria-label={`Analysis ${name}`} data-side={name} className="min-w-0 flex-1 rounded border border-zinc-300 p-3 text-sm dark:border-zinc-700">
      <div className="mb-1 flex flex-wrap items-baseline gap-2">
        <h2 className="text-base font-semibold">{name}</h2>
        {side.wantsFile && <span className="rounded bg-zinc-100 px-1.5 text-xs dark:bg-zinc-800">file{side.file && <> <SafeText value={side.file.name} /></>}</span>}
        {ref !== null && !side.wantsFile && (
          <>
            <span className="rounded bg-zinc-100 px-1.5 text-xs dark:bg-zinc-800"><SafeText value={side.serverName} /></span>
            <button type="button" className="text-sky-800 underline dark:text-sky-300" title={`Open task ${ref.id} of ${side.serverName}`}
              onClick={() => { setConnection(ref.connection); void navigate(`/tasks/${ref.id}`) }}>task {ref.id}</button>
          </>
        )}
        <button type="button" aria-expanded={picking} onClick={onChange} className="ml-auto rounded border border-zinc-300 px-2 py-0.5 text-xs hover:bg-zinc-100 dark:border-zinc-700 dark:hover:bg-zinc-800">
          {ref === null && !side.wantsFile ? 'Pick…' : picking ? 'Cancel' : 'Change…'}
        </button>
      </div>
      {body}
    </section>
  )
}

export function ComparePage(): JSX.Element {
  const [search, setSearch] = useSearchParams()
  const refs = { a: parseRef(search.get('a')), b: parseRef(search.get('b')) }
  const onlyDiff = search.get('diff') === '1'
  const current = useUi((s) => s.connection)
  const wants = { a: search.get('a') === FILE_PARAM, b: search.get('b') === FILE_PARAM }
  const [files, setFiles] = useState<{ a: File | null; b: File | null }>({ a: null, b: null })
  const [picking, setPicking] = useState<'a' | 'b' | null>(null)
  const sides = { a: useSide(refs.a, wants.a, files.a), b: useSide(refs.b, wants.b, files.b) }
  const update = (change: (n: URLSearchParams) => void) => setSearch((prev) => { const n = new URLSearchParams(prev); change(n); return n }, { replace: true })
  const pick = (which: 'a' | 'b', ref: TaskRef) => { update((n) => n.set(which, refParam(ref))); setPicking(null) }
  const pickFile = (which: 'a' | 'b', file: File) => { setFiles((f) => ({ ...f, [which]: file })); update((n) => n.set(which, FILE_PARAM)); setPicking(null) }
  // A side missing from the URL (or a file no longer open) is picked at once; a bad value in a bookmark says so.
  const missing = (k: 'a' | 'b') => (wants[k] ? files[k] === null : refs[k] === null)
  const open = picking ?? (missing('a') ? 'a' : missing('b') ? 'b' : null)
  const bad = (['a', 'b'] as const).filter((k) => search.get(k) !== null && refs[k] === null && !wants[k])
  const fa = sides.a.facts?.facts
  const fb = sides.b.facts?.facts
  // Drawn in a deferred (time-sliced) render: a comparison of 20,000-row lists takes React over a
  // tenth of a second, which must not block the page (bench/ui-compare.bench.mjs).
  const shown = useDeferredValue(useMemo(() => (fa && fb ? { a: fa, b: fb, onlyDiff } : null), [fa, fb, onlyDiff]))
  return (
    <div>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold">Compare</h1>
        <button type="button" disabled={search.get('a') === null && search.get('b') === null} onClick={() => {
          setFiles((f) => ({ a: f.b, b: f.a }))
          update((n) => {
            const a = n.get('a'); const b = n.get('b')
            if (b !== null) n.set('a', b); else n.delete('a')
            if (a !== null) n.set('b', a); else n.delete('b')
          })
        }} className="rounded border border-zinc-300 px-2 py-0.5 text-sm hover:bg-zinc-100 disabled:opacity-50 dark:border-zinc-700 dark:hover:bg-zinc-800">Swap A and B</button>
        <label className="flex items-center gap-1 text-sm">
          <input type="checkbox" checked={onlyDiff} onChange={(e) => update((n) => { if (e.target.checked) n.set('diff', '1'); else n.delete('diff') })} />
          Only differences
        </label>
      </div>
      {bad.length > 0 && <p role="alert" className="mb-2 text-sm text-red-700 dark:text-red-400">Not a task in this link: {bad.map((k) => `${k}=${search.get(k) ?? ''}`).join(', ')} (expected local:ID or CONNECTION:ID).</p>}
      {sameRef(refs.a, refs.b) && <p className="mb-2 text-sm text-amber-900 dark:text-amber-200">A and B are the same task: everything is shared.</p>}
      <div className="mb-4 flex flex-col gap-3 md:flex-row">
        <SideCard name="A" side={sides.a} picking={picking === 'a'} onChange={() => setPicking((p) => (p === 'a' ? null : 'a'))} />
        <SideCard name="B" side={sides.b} picking={picking === 'b'} onChange={() => setPicking((p) => (p === 'b' ? null : 'b'))} />
      </div>
      {open !== null && (
        <div className="mb-4">
          <TaskPicker key={open} label={`Pick task ${open.toUpperCase()}`} initialConnection={refs[open]?.connection ?? refs[open === 'a' ? 'b' : 'a']?.connection ?? current}
            exclude={refs[open === 'a' ? 'b' : 'a']} onPick={(r) => pick(open, r)} onFile={(f) => pickFile(open, f)} />
        </div>
      )}
      {shown !== null ? <CompareView a={shown.a} b={shown.b} onlyDiff={shown.onlyDiff} /> : fa && fb ? <p role="status" className="text-sm text-zinc-600 dark:text-zinc-400">Comparing…</p> : null}
    </div>
  )
}
