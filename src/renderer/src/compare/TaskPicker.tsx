// Picks a task to compare, from any connection: this computer or a saved Cuckoo-compatible server
// (dispatchers hold no reports to read). By id, or from the latest reported tasks of that server
// (Aviary's /aviary/tasks, searchable; a Cuckoo server's /tasks/list); where the page allows it,
// a file instead (a report.json or an analysis archive, read in the page).
import { useId, useState, type FormEvent, type JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { HttpError, type ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { useConnections } from '../components/ConnectionPicker'
import { SafeText, When } from '../components/text'
import { ScoreBadge } from '../components/status'
import { targetName, type ListTask } from '../tasks/task-source'
import { useDebounced } from '../tasks/use-debounced'
import { sameRef, type TaskRef } from './refs'

const LATEST = 50

async function reportedTasks(c: ConnectionId, q: string, signal: AbortSignal): Promise<{ tasks: ListTask[]; searchable: boolean }> {
  const client = await clientOf(c)
  try {
    const found = await client.searchTasks({ status: 'reported', limit: LATEST, order: 'desc', ...(q !== '' ? { q } : {}) }, { signal })
    return { tasks: found.tasks, searchable: true }
  } catch (err) {
    if (!(err instanceof HttpError) || err.status !== 404) throw err
  }
  // A Cuckoo server: no search, and its list is in completion order, oldest first; the newest
  // reported ones are the last page, found from the count in /cuckoo/status.
  const counts = await client.status({ signal }).then((s): Record<string, unknown> => s.tasks, () => undefined)
  const reported = typeof counts?.reported === 'number' ? counts.reported : 0
  const r: { tasks: ListTask[] } = await client.tasks(LATEST, Math.max(0, reported - LATEST), { status: 'reported', signal })
  return { tasks: [...r.tasks].filter((t) => t.status === 'reported').sort((x, y) => y.id - x.id), searchable: false }
}

export function TaskPicker({ initialConnection, exclude, onPick, onFile, label }: {
  initialConnection: ConnectionId
  /** The task it is compared with (not offered). */
  exclude?: TaskRef | null
  onPick(ref: TaskRef): void
  /** Offers a file instead of a task. */
  onFile?(file: File): void
  label: string
}): JSX.Element {
  const ids = useId()
  const connections = useConnections()
  const servers = (connections.data ?? []).filter((c) => c.kind !== 'dispatcher')
  const [picked, setConnection] = useState<ConnectionId>(initialConnection)
  // A connection that is not a saved analysis server (a dispatcher, one since removed): this computer.
  const connection = picked !== null && connections.isSuccess && !servers.some((c) => c.id === picked) ? null : picked
  const [typed, setTyped] = useState('')
  const [q, setQ] = useState('')
  const search = useDebounced(q.trim(), 250)
  const latest = useQuery({
    queryKey: ['compare', 'pick', connection, search],
    queryFn: ({ signal }) => reportedTasks(connection, search, signal),
    enabled: connection === null || connections.isSuccess,
    retry: false
  })
  const idValid = /^\d{1,15}$/.test(typed.trim())
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (idValid) onPick({ connection, id: Number(typed.trim()) })
  }
  const tasks = (latest.data?.tasks ?? []).filter((t) => !sameRef(exclude, { connection, id: t.id }))
  return (
    <div role="group" aria-label={label} className="flex flex-col gap-2 rounded border border-zinc-300 p-3 text-sm dark:border-zinc-700">
      <div className="flex flex-wrap items-end gap-3">
        <label className="flex flex-col gap-1">
          Server
          <select aria-label="Server to compare from" value={connection === null ? '' : String(connection)}
            onChange={(e) => setConnection(e.target.value === '' ? null : Number(e.target.value))}
            className="rounded border border-zinc-300 bg-transparent px-1 py-0.5 dark:border-zinc-700">
            <option value="">This computer</option>
            {servers.map((c) => <option key={c.id} value={c.id}>{c.name}</option>)}
          </select>
        </label>
        <form onSubmit={submit} className="flex items-end gap-2" aria-label="Task by id">
          <label className="flex flex-col gap-1" htmlFor={`${ids}-id`}>Task id</label>
          <input id={`${ids}-id`} inputMode="numeric" value={typed} onChange={(e) => setTyped(e.target.value)} aria-invalid={typed !== '' && !idValid}
            className="w-28 rounded border border-zinc-300 bg-transparent px-1 py-0.5 dark:border-zinc-700" />
          <button type="submit" disabled={!idValid} title={idValid ? undefined : 'Type a task id (digits)'}
            className="rounded bg-sky-700 px-2 py-0.5 text-white disabled:opacity-50">Use</button>
        </form>
        {latest.data?.searchable !== false && (
          <label className="flex flex-col gap-1">
            Search reported tasks
            <input type="search" value={q} onChange={(e) => setQ(e.target.value.slice(0, 200))} placeholder="hash, name, URL, domain:…"
              className="rounded border border-zinc-300 bg-transparent px-1 py-0.5 dark:border-zinc-700" />
          </label>
        )}
      </div>
      {onFile && (
        <label className="flex flex-wrap items-center gap-2">
          Or a report file (report.json, or an analysis archive: tar, tar.gz, tar.bz2, zip)
          <input type="file" aria-label="Report file" accept=".json,.tar,.gz,.tgz,.bz2,.tbz2,.zip,application/json,application/x-tar,application/gzip,application/x-bzip2,application/zip"
            onChange={(e) => { const f = e.target.files?.[0]; if (f) onFile(f); e.target.value = '' }} className="text-xs" />
        </label>
      )}
      {latest.isError && <p role="alert" className="text-red-700 dark:text-red-400">Cannot list tasks: <SafeText value={latest.error.message} /></p>}
      {latest.isPending && <p role="status" className="text-zinc-600 dark:text-zinc-400">Loading reported tasks…</p>}
      {latest.isSuccess && (tasks.length === 0 ? <p className="text-zinc-600 dark:text-zinc-400">No reported tasks{search ? ' match' : ' on this server'}.</p> : (
        <ul aria-label="Reported tasks" className="max-h-64 overflow-auto rounded border border-zinc-200 dark:border-zinc-800">
          {tasks.map((t) => (
            <li key={t.id} className="border-b border-zinc-100 last:border-b-0 dark:border-zinc-900">
              {/* The name is what the row shows, after a prefix only screen readers read (axe's label-content-name-mismatch). */}
              <button type="button" onClick={() => onPick({ connection, id: t.id })}
                className="flex w-full items-baseline gap-3 px-2 py-1 text-left hover:bg-zinc-50 focus-visible:outline-2 focus-visible:outline-sky-500 dark:hover:bg-zinc-900">
                <span className="w-14 shrink-0 tabular-nums"><span className="sr-only">Compare with task </span>{t.id}</span>
                <span className="min-w-0 flex-1 truncate font-mono text-xs"><SafeText value={targetName(t)} /></span>
                {'score' in t && <ScoreBadge score={t.score} />}
                <span className="shrink-0 text-xs text-zinc-600 dark:text-zinc-400"><When value={t.added_on} /></span>
              </button>
            </li>
          ))}
        </ul>
      ))}
    </div>
  )
}
