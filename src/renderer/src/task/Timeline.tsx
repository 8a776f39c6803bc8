// A task's stages with their times (GET /tasks/timeline/<id>), failures with their reasons.
import type { JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import { fetchJson, type ConnectionId } from '../api/http'
import { keys } from '../api/live'
import { SafeText, When } from '../components/text'
import type { TimelineEntry } from '../../../shared/api/schemas'


export function Timeline({ connection, id, status }: { connection: ConnectionId; id: number; status: string }): JSX.Element {
  // The status is part of the key: each state change (pushed by the event stream) reloads it.
  const q = useQuery({
    queryKey: [...keys.task(connection, id), 'timeline', status],
    queryFn: ({ signal }) => fetchJson<{ timeline: Partial<TimelineEntry>[] }>(connection, `/tasks/timeline/${id}`, {}, signal),
    retry: false
  })
  if (q.isPending) return <p className="text-sm text-zinc-500">Loading the timeline…</p>
  if (q.isError) return <p role="alert" className="text-sm text-red-700 dark:text-red-400">Timeline: <SafeText value={q.error.message} /></p>
  const entries = Array.isArray(q.data.timeline) ? q.data.timeline : []
  if (entries.length === 0) return <p className="text-sm text-zinc-500">No stages recorded.</p>
  return (
    <ol aria-label="Timeline" className="border-l-2 border-zinc-200 pl-4 text-sm dark:border-zinc-800">
      {entries.map((e, i) => (
        <li key={i} className="mb-2">
          <span className={`font-medium ${/fail/.test(String(e.stage)) ? 'text-red-700 dark:text-red-400' : ''}`}><SafeText value={e.stage} /></span>{' '}
          <span className="text-zinc-500"><When value={typeof e.time === 'number' ? e.time / 1000 : e.at} /></span>
          {e.message && <div className="text-zinc-600 dark:text-zinc-400"><SafeText value={e.message} /></div>}
        </li>
      ))}
    </ol>
  )
}
