// What an analyst can do with a task, through the API's own routes: delete (after a confirmation
// step), reschedule, reboot (a new task re-analysing the same target), rereport. Each result (or the
// server's message) is shown next to the buttons; lists and this task are refreshed.
import { useState, type JSX } from 'react'
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { Link, useNavigate } from 'react-router'
import { fetchJson, type ConnectionId } from '../api/http'
import { keys } from '../api/live'
import { SafeText } from '../components/text'

type Action = 'delete' | 'reschedule' | 'reboot' | 'rereport'
type Outcome = { ok: true; text: string; link?: number } | { ok: false; text: string }

const btn = 'rounded border border-zinc-300 px-2.5 py-1 text-sm hover:bg-zinc-100 disabled:opacity-50 dark:border-zinc-700 dark:hover:bg-zinc-800'

export function TaskActions({ connection, id }: { connection: ConnectionId; id: number }): JSX.Element {
  const qc = useQueryClient()
  const navigate = useNavigate()
  const [confirming, setConfirming] = useState(false)
  const [outcome, setOutcome] = useState<Outcome | null>(null)
  const m = useMutation({
    mutationFn: async (a: Action): Promise<Outcome> => {
      switch (a) {
        case 'delete':
          await fetchJson(connection, `/tasks/delete/${id}`)
          return { ok: true, text: `Task ${id} deleted.` }
        case 'reschedule': {
          const r = await fetchJson<{ task_id?: unknown }>(connection, `/tasks/reschedule/${id}`)
          return typeof r.task_id === 'number' ? { ok: true, text: `Rescheduled as task ${r.task_id}.`, link: r.task_id } : { ok: true, text: 'Rescheduled.' }
        }
        case 'reboot': {
          const r = await fetchJson<{ reboot_id?: unknown }>(connection, `/tasks/reboot/${id}`)
          return typeof r.reboot_id === 'number' ? { ok: true, text: `Reboot analysis created: task ${r.reboot_id}.`, link: r.reboot_id } : { ok: true, text: 'Reboot task created.' }
        }
        case 'rereport': {
          const r = await fetchJson<{ success?: unknown }>(connection, `/tasks/rereport/${id}`)
          return r.success === false ? { ok: false, text: 'The server did not regenerate the report.' } : { ok: true, text: 'The report is being regenerated.' }
        }
      }
    },
    onSuccess: (o, a) => {
      setOutcome(o)
      void qc.invalidateQueries({ queryKey: keys.tasks(connection) })
      if (a === 'delete') { qc.removeQueries({ queryKey: keys.task(connection, id) }); void navigate('/tasks', { state: { notice: o.text } }) }
      else void qc.invalidateQueries({ queryKey: keys.task(connection, id) })
    },
    onError: (err) => setOutcome({ ok: false, text: err.message })
  })
  const run = (a: Action) => { setOutcome(null); setConfirming(false); m.mutate(a) }
  return (
    <div className="flex flex-wrap items-center gap-2" aria-label="Task actions" role="group">
      {confirming ? (
        <span role="alertdialog" aria-label="Confirm deletion" className="flex items-center gap-2 rounded border border-red-300 px-2 py-1 text-sm dark:border-red-800">
          Delete task {id} and all its results?
          <button type="button" className={`${btn} border-red-500 text-red-700 dark:text-red-400`} onClick={() => run('delete')} autoFocus>Delete</button>
          <button type="button" className={btn} onClick={() => setConfirming(false)}>Cancel</button>
        </span>
      ) : <button type="button" className={btn} disabled={m.isPending} onClick={() => setConfirming(true)}>Delete…</button>}
      <button type="button" className={btn} disabled={m.isPending} onClick={() => run('reschedule')}>Reschedule</button>
      <button type="button" className={btn} disabled={m.isPending} onClick={() => run('reboot')}>Reboot</button>
      <button type="button" className={btn} disabled={m.isPending} onClick={() => run('rereport')}>Rereport</button>
      {m.isPending && <span role="status" className="text-sm text-zinc-500">Working…</span>}
      {outcome && (
        <span role={outcome.ok ? 'status' : 'alert'} className={`text-sm ${outcome.ok ? 'text-emerald-700 dark:text-emerald-400' : 'text-red-700 dark:text-red-400'}`}>
          <SafeText value={outcome.text} />
          {outcome.ok && outcome.link !== undefined && <> <Link to={`/tasks/${outcome.link}`} className="underline">open</Link></>}
        </span>
      )}
    </div>
  )
}
