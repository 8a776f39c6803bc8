// What an analyst can do with a task, through the API's own routes: delete (after a confirmation
// step), reschedule, reboot (a new task re-analysing the same target), rereport. Each result (or the
// server's message) is shown next to the buttons; lists and this task are refreshed. An action the
// task's state does not allow is disabled, with the reason on hover (never a server error after a click).
import { useState, type JSX } from 'react'
import { useMutation, useQueryClient } from '@tanstack/react-query'
import { Link, useNavigate } from 'react-router'
import type { ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { keys } from '../api/live'
import { SafeText } from '../components/text'

type Action = 'delete' | 'reschedule' | 'reboot' | 'rereport'
type Outcome = { ok: true; text: string; link?: number } | { ok: false; text: string }

const btn = 'rounded border border-zinc-300 px-2.5 py-1 text-sm hover:bg-zinc-100 disabled:cursor-not-allowed disabled:border-zinc-200 disabled:text-zinc-500 dark:border-zinc-700 dark:hover:bg-zinc-800 dark:disabled:border-zinc-800 dark:disabled:text-zinc-400'

const HAS_RUN = new Set(['completed', 'reported', 'failed_analysis', 'failed_processing', 'failed_reporting', 'recovered'])

/** Why an action cannot be done on a task in this state (the server's own rules), or null. */
export function actionBlocked(a: Action, task: { status?: string; category?: string }): string | null {
  const status = task.status ?? ''
  const state = status.replace('_', ' ')
  switch (a) {
    case 'delete':
      return status === 'running' ? 'The analysis is running: a task can be deleted once its analysis has ended.' : null
    case 'reschedule':
      return status === 'running' ? 'The analysis is running: reschedule it once it has ended.' : null
    case 'reboot':
      if (task.category === 'url') return 'A reboot analysis runs the same file again after the guest restarts: a URL task has no file.'
      return HAS_RUN.has(status) ? null : `A reboot analysis follows a run of this task, and this one is ${state}: nothing has run yet.`
    case 'rereport':
      return status === 'reported' ? null : `Only a reported task's report can be made again; this one is ${state}.`
  }
}

const LABELS: Record<Exclude<Action, 'delete'>, string> = { reschedule: 'Reschedule', reboot: 'Reboot', rereport: 'Rereport' }
const HINTS: Record<Exclude<Action, 'delete'>, string> = {
  reschedule: 'Queue a copy of this task; this one becomes recovered',
  reboot: 'A new task that runs the same file after the guest restarts',
  rereport: 'Process the analysis again and write a new report'
}

export function TaskActions({ connection, id, task }: { connection: ConnectionId; id: number; task: { status?: string; category?: string } }): JSX.Element {
  const qc = useQueryClient()
  const navigate = useNavigate()
  const [confirming, setConfirming] = useState(false)
  const [outcome, setOutcome] = useState<Outcome | null>(null)
  const m = useMutation({
    mutationFn: async (a: Action): Promise<Outcome> => {
      const client = await clientOf(connection)
      switch (a) {
        case 'delete':
          await client.deleteTask(id)
          return { ok: true, text: `Task ${id} deleted.` }
        case 'reschedule': {
          const r = await client.reschedule(id)
          return r.task_id !== undefined ? { ok: true, text: `Rescheduled as task ${r.task_id}.`, link: r.task_id } : { ok: true, text: 'Rescheduled.' }
        }
        case 'reboot': {
          const r = await client.reboot(id)
          return r.reboot_id !== undefined ? { ok: true, text: `Reboot analysis created: task ${r.reboot_id}.`, link: r.reboot_id } : { ok: true, text: 'Reboot task created.' }
        }
        case 'rereport': {
          const r = await client.rereport(id)
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
      ) : (
        <button type="button" className={btn} disabled={m.isPending || actionBlocked('delete', task) !== null}
          title={actionBlocked('delete', task) ?? 'Delete the task and its results (asks first)'} onClick={() => setConfirming(true)}>Delete…</button>
      )}
      {(['reschedule', 'reboot', 'rereport'] as const).map((a) => (
        <button key={a} type="button" className={btn} disabled={m.isPending || actionBlocked(a, task) !== null}
          title={actionBlocked(a, task) ?? HINTS[a]} onClick={() => run(a)}>{LABELS[a]}</button>
      ))}
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
