// One task list over several servers: the latest tasks of each selected connection (Aviary's
// /aviary/tasks, else Cuckoo's /tasks/list), merged by the time they were added, each row marked
// with where it comes from. Opening a row switches the UI to that server.
import { useMemo, useState, type JSX } from 'react'
import { useQueries } from '@tanstack/react-query'
import { useNavigate } from 'react-router'
import { HttpError, type ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { keys } from '../api/live'
import { StatusBadge } from '../components/status'
import { SafeText, When } from '../components/text'
import { useUi } from '../state/ui'
import { parseDate } from '../format'
import { ErrorNote } from '../dashboard/ErrorNote'
import type { SavedConnection } from './api'

interface TaskRow { id: number; status: string; added_on: string; target: string; category: string; sample?: { md5?: string } | Record<string, never> }
export interface SourcedTask extends TaskRow { source: ConnectionId; sourceName: string; time: number }

const PER_SOURCE = 100

async function latestTasks(c: ConnectionId, signal?: AbortSignal): Promise<TaskRow[]> {
  const client = await clientOf(c)
  try {
    return (await client.searchTasks({ limit: PER_SOURCE, order: 'desc' }, { signal })).tasks
  } catch (err) {
    if (!(err instanceof HttpError) || (err.status !== 404 && err.status !== 405)) throw err
  }
  return (await client.tasks(PER_SOURCE, undefined, { signal })).tasks
}

/** Newest first by added time; same time: the higher id first. */
export function mergeByAdded(lists: SourcedTask[][]): SourcedTask[] {
  return lists.flat().sort((a, b) => b.time - a.time || b.id - a.id)
}

/** A file task's target is a stored path: its last part is what people recognise. */
const shownTarget = (t: TaskRow): string => (t.category === 'url' ? t.target : t.target.split(/[\\/]/).pop() ?? t.target)

export function CombinedTasks({ connections }: { connections: SavedConnection[] }): JSX.Element {
  const sources = useMemo(() => [
    { id: null as ConnectionId, name: 'This computer' },
    ...connections.filter((c) => c.kind !== 'dispatcher').map((c) => ({ id: c.id as ConnectionId, name: c.name }))
  ], [connections])
  const [off, setOff] = useState<Set<string>>(new Set())
  const chosen = sources.filter((s) => !off.has(String(s.id)))
  const results = useQueries({
    queries: chosen.map((s) => ({
      queryKey: [...keys.tasks(s.id), 'combined', PER_SOURCE],
      queryFn: ({ signal }: { signal: AbortSignal }) => latestTasks(s.id, signal),
      refetchInterval: 15_000
    }))
  })
  const rows = mergeByAdded(results.map((r, i) => (r.data ?? []).map((t) => ({
    ...t, source: chosen[i]!.id, sourceName: chosen[i]!.name, time: parseDate(t.added_on)?.getTime() ?? 0
  }))))
  const setConnection = useUi((s) => s.setConnection)
  const navigate = useNavigate()
  const toggle = (id: ConnectionId): void => setOff((prev) => {
    const next = new Set(prev)
    if (!next.delete(String(id))) next.add(String(id))
    return next
  })

  return (
    <section aria-labelledby="combined-title" className="flex flex-col gap-2">
      <h2 id="combined-title" className="font-semibold">Combined tasks</h2>
      <fieldset className="flex flex-wrap gap-3 text-sm">
        <legend className="sr-only">Servers to include</legend>
        {sources.map((s) => (
          <label key={String(s.id)} className="flex items-center gap-1">
            <input type="checkbox" checked={!off.has(String(s.id))} onChange={() => toggle(s.id)} /> <SafeText value={s.name} />
          </label>
        ))}
      </fieldset>
      {results.map((r, i) => r.isError && <ErrorNote key={String(chosen[i]!.id)} prefix={`${chosen[i]!.name}`} error={r.error} />)}
      {results.some((r) => r.isPending) && <p role="status" className="text-sm text-zinc-500">Loading…</p>}
      {rows.length === 0 && results.every((r) => !r.isPending) ? <p className="text-sm text-zinc-500">No tasks on the selected servers.</p> : (
        <div className="max-h-[60vh] overflow-auto">
          <table className="w-full text-sm" aria-label="Combined tasks">
            <thead className="sticky top-0 bg-white dark:bg-zinc-950">
              <tr className="border-b border-zinc-200 text-left dark:border-zinc-800">
                <th className="px-2 py-1 font-medium">Source</th><th className="px-2 py-1 font-medium">Id</th><th className="px-2 py-1 font-medium">Target</th>
                <th className="px-2 py-1 font-medium">Status</th><th className="px-2 py-1 font-medium">Added</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((t) => (
                <tr key={`${String(t.source)}-${t.id}`} data-source={t.source === null ? 'local' : t.source} className="border-b border-zinc-100 dark:border-zinc-900">
                  <td className="px-2 py-1"><span className="rounded bg-zinc-100 px-1.5 text-xs dark:bg-zinc-800"><SafeText value={t.sourceName} /></span></td>
                  <td className="px-2 py-1 tabular-nums">
                    <button type="button" className="text-sky-700 hover:underline dark:text-sky-300" title={`Open task ${t.id} of ${t.sourceName}`}
                      onClick={() => { setConnection(t.source); void navigate(`/tasks/${t.id}`) }}>{t.id}</button>
                  </td>
                  <td className="max-w-md truncate px-2 py-1"><SafeText value={shownTarget(t)} /></td>
                  <td className="px-2 py-1"><StatusBadge status={t.status} /></td>
                  <td className="px-2 py-1"><When value={t.added_on} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}
