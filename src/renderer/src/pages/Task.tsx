// One task: its facts and live status, its timeline, the actions (delete, reschedule, reboot,
// rereport), and once reported its report in tabs. The overview is drawn from /tasks/summary (the
// report without its heaviest keys); the full report.json is fetched only when a tab needs it.
// The Behavior tab's calls come in pages from the server (/aviary/tasks/<id>/calls), or from the
// full report where the server has no such route. A sample that never started says why up front,
// and a member of an archive says which member it is.
import { isTaskNote } from '../../../shared/task-notes'
import { useEffect, useMemo, useRef, useState, type JSX } from 'react'
import { useParams, useSearchParams } from 'react-router'
import { useQuery, useQueryClient } from '@tanstack/react-query'
import { Type } from 'typebox'
import { apiBase, fetchJson, HttpError, type ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { keys } from '../api/live'
import { useUi } from '../state/ui'
import { SafeText, When } from '../components/text'
import { StatusBadge } from '../components/status'
import { ReportViews, TABS } from '../report/ReportViews'
import { KeyValues, Mono } from '../report/common'
import { Timeline } from '../task/Timeline'
import { TaskActions } from '../task/TaskActions'
import { RunProgress } from '../task/RunProgress'
import { baseName } from '../report/model'
import { UNSCHEDULABLE, unschedulable } from '../task/unschedulable'
import { apiSources } from '../task/sources'
import { serviceCallsSource } from '../report/calls-source'
import { ReportPage } from '../report/report-context'
import { startFailure } from '../report/start-failure'
import { taskArchiveMember, taskArchiveName } from '../report/archive'
import type { Task } from '../../../shared/api/schemas'
import { CompareWith } from '../compare/CompareWith'
import { LiveTab } from '../console/LiveTab'
import { RecordingPlayer } from '../console/RecordingPlayer'
import { useTaskRecordings } from '../console/task-recordings'

const SETTLED = new Set(['reported', 'failed_analysis', 'failed_processing', 'failed_reporting'])

/** The task's network route: set when the analysis starts (null before; a host that routes nothing never sets it). */
function routeFact(task: Partial<Task>): JSX.Element | null {
  if (typeof task.route === 'string' && task.route !== '') return <SafeText value={task.route} />
  if (task.route === null && task.status === 'pending') return <span className="text-zinc-500" title="The route is chosen when the analysis starts">not yet chosen</span>
  return null
}


/** What was analysed: a URL, or the file's name (the target is the server's storage path, .../uploads/<sha256>/<name>). */
function targetShown(task: Partial<Task>): string {
  const target = typeof task.target === 'string' ? task.target : ''
  return task.category === 'url' ? target : baseName(target) || target
}

function TaskFacts({ task }: { task: Partial<Task> }): JSX.Element {
  const guest = task.guest && 'name' in task.guest ? task.guest : null
  // The reason no machine can run it is said above the facts; the other errors are listed here.
  // Notes (tags kept without a platform) are information, not errors: shown apart, not in red.
  const all = Array.isArray(task.errors) ? task.errors.filter((e) => !(typeof e === 'string' && e.startsWith(UNSCHEDULABLE))) : []
  const errors = all.filter((e) => !isTaskNote(e))
  const notes = all.filter(isTaskNote)
  return (
    <KeyValues rows={[
      ['Target', task.target && <span className="[overflow-wrap:anywhere]"><Mono value={targetShown(task)} /></span>],
      ['Archive member', taskArchiveMember(task) !== '' && (
        <span data-testid="task-archive-member"><Mono value={taskArchiveMember(task)} />
          {taskArchiveName(task) !== '' && <> <span className="text-zinc-500">from</span> <Mono value={taskArchiveName(task)} /></>}
          {' '}<span className="text-zinc-500">(the member of a submitted archive that this task runs)</span></span>
      )],
      ['Category', task.category && <SafeText value={task.category} />],
      ['Package', task.package && <SafeText value={task.package} />],
      ['Machine', (guest?.name ?? task.machine) && <SafeText value={guest?.name ?? task.machine} />],
      ['Platform', task.platform && <SafeText value={task.platform} />],
      ['Route', routeFact(task)],
      ['Priority', task.priority],
      ['Timeout', typeof task.timeout === 'number' && task.timeout > 0 ? `${task.timeout} s` : null],
      ['Added', task.added_on && <When value={task.added_on} absolute />],
      ['Started', task.started_on && <When value={task.started_on} absolute />],
      ['Completed', task.completed_on && <When value={task.completed_on} absolute />],
      ['Notes', notes.length > 0 && (
        <ul data-testid="task-notes" className="text-zinc-600 dark:text-zinc-400">{notes.slice(0, 10).map((e, i) => <li key={i}><SafeText value={e} /></li>)}</ul>
      )],
      ['Errors', errors.length > 0 && (
        <ul className="text-red-700 dark:text-red-400">{errors.slice(0, 50).map((e, i) => <li key={i}><SafeText value={e} /></li>)}</ul>
      )]
    ]} />
  )
}

/** A running task: its live console and its timeline. */
function RunningTabs({ connection, id, status, tab, onTab }: { connection: ConnectionId; id: number; status: string; tab: string; onTab(t: string): void }): JSX.Element {
  const current = tab === 'timeline' ? 'timeline' : 'live'
  const tabs = [{ id: 'live', label: 'Live' }, { id: 'timeline', label: 'Timeline' }]
  return (
    <div>
      <div role="tablist" aria-label="Running task" className="mb-3 flex gap-1 border-b border-zinc-200 dark:border-zinc-800">
        {tabs.map((t) => (
          <button key={t.id} type="button" role="tab" id={`run-tab-${t.id}`} aria-selected={current === t.id} aria-controls={`run-panel-${t.id}`} onClick={() => onTab(t.id)}
            className={`-mb-px border-b-2 px-3 py-1.5 text-sm ${current === t.id ? 'border-sky-700 font-medium' : 'border-transparent text-zinc-600 dark:text-zinc-400'}`}>{t.label}</button>
        ))}
      </div>
      <div role="tabpanel" id={`run-panel-${current}`} aria-labelledby={`run-tab-${current}`}>
        {current === 'live' ? <LiveTab connection={connection} id={id} /> : <Timeline connection={connection} id={id} status={status} />}
      </div>
    </div>
  )
}

export function TaskPage(): JSX.Element {
  const params = useParams()
  const id = /^\d{1,15}$/.test(params.id ?? '') ? Number(params.id) : null
  if (id === null) return <p role="alert" className="text-red-700">Not a task id: <SafeText value={params.id} /></p>
  return <TaskView id={id} />
}

function TaskView({ id }: { id: number }): JSX.Element {
  const connection = useUi((s) => s.connection)
  const qc = useQueryClient()
  const [search, setSearch] = useSearchParams()
  const tabParam = search.get('tab')
  const tab = tabParam !== null && (TABS.some((t) => t.id === tabParam) || tabParam === 'timeline' || tabParam === 'console' || tabParam === 'live') ? tabParam : 'summary'
  const [wantFull, setWantFull] = useState(false)

  const task = useQuery({
    queryKey: keys.task(connection, id),
    queryFn: async ({ signal }): Promise<{ task: Partial<Task> }> => (await clientOf(connection)).task(id, { signal }),
    // The event stream keeps it fresh where the server has one; polling covers servers without.
    refetchInterval: (q) => (SETTLED.has(String(q.state.data?.task.status)) ? false : 5000),
    retry: false
  })
  const status = String(task.data?.task.status ?? '')
  const reported = status === 'reported'
  const base = useQuery({ queryKey: ['apiBase', connection], queryFn: () => apiBase(connection), staleTime: Infinity })
  const summary = useQuery({
    queryKey: [...keys.task(connection, id), 'report', 'summary'],
    // Reports are read by the report views (report/model.ts), each field with care: no schema here.
    queryFn: ({ signal }) => fetchJson(connection, `/tasks/summary/${id}`, Type.Unknown(), {}, signal),
    enabled: reported, retry: false, staleTime: Infinity
  })
  const fullKey = useMemo(() => [...keys.task(connection, id), 'report', 'full'], [connection, id])
  const full = useQuery({
    queryKey: fullKey,
    queryFn: ({ signal }) => fetchJson(connection, `/tasks/report/${id}`, Type.Unknown(), {}, signal),
    enabled: reported && wantFull, retry: false, staleTime: Infinity
  })
  // A new source for each report loaded (a rereport brings new calls).
  const reportStamp = summary.dataUpdatedAt
  const calls = useMemo(() => serviceCallsSource({
    id,
    // The calls routes' answers are read, capped, by calls-source.ts's parseListing and parsePage.
    getJson: (path, signal) => fetchJson(connection, path, Type.Unknown(), {}, signal),
    isNotFound: (err) => err instanceof HttpError && err.status === 404,
    // Shared with the tabs that need the full report: it is fetched once.
    fullReport: () => qc.fetchQuery({ queryKey: fullKey, queryFn: ({ signal }) => fetchJson(connection, `/tasks/report/${id}`, Type.Unknown(), {}, signal), staleTime: Infinity })
  }), [connection, id, qc, fullKey, reportStamp])
  // The console sessions, once the run is over (while it runs they are still being written).
  const recordings = useTaskRecordings(connection, id, status !== '' && status !== 'running' && status !== 'pending')
  // A rereport takes the task back through `completed`: when it is reported again, reload.
  const prev = useRef(status)
  useEffect(() => {
    if (prev.current !== '' && prev.current !== 'reported' && reported) void qc.invalidateQueries({ queryKey: [...keys.task(connection, id), 'report'] })
    prev.current = status
  }, [status, reported, qc, connection, id])

  if (task.isPending) return <p role="status" className="text-sm text-zinc-500">Loading task {id}…</p>
  if (task.isError) return <div><h1 className="mb-2 text-xl font-semibold">Task {id}</h1><p role="alert" className="text-red-700 dark:text-red-400"><SafeText value={task.error.message} /></p></div>
  const t = task.data.task
  const taskErrors = Array.isArray(t.errors) ? t.errors : []
  const notStarted = startFailure(taskErrors)
  const sources = base.data ? apiSources(base.data, id) : null
  const timelineTab = { id: 'timeline', label: 'Timeline', render: () => <Timeline connection={connection} id={id} status={status} /> }
  const sessions = recordings.data ?? []
  const consoleTab = { id: 'console', label: 'Console', render: () => <RecordingPlayer recordings={sessions} /> }
  const setTab = (next: string) => setSearch((s) => { const n = new URLSearchParams(s); n.set('tab', next); return n }, { replace: true })

  const noMachine = unschedulable(t)
  let report: JSX.Element
  if (!reported) {
    report = (
      <div>
        {noMachine !== null ? (
          <p role="alert" data-testid="unschedulable" className="mb-3 rounded border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-950 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-100">
            No machine can run this task: <SafeText value={noMachine} />. It stays pending, with no report, until a machine that matches is configured (or it is deleted).
          </p>
        ) : (
          <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">{status.startsWith('failed') ? 'The analysis failed: see the errors and the timeline.' : 'The report appears here once the task is reported.'}</p>
        )}
        {status === 'running' && <RunProgress startedOn={t.started_on} timeout={t.timeout} />}
        {status === 'running' ? <RunningTabs connection={connection} id={id} status={status} tab={tab} onTab={setTab} /> : <Timeline connection={connection} id={id} status={status} />}
        {status !== 'running' && sessions.length > 0 && (
          <section className="mt-4"><h2 className="mb-2 text-lg font-semibold">Console sessions</h2><RecordingPlayer recordings={sessions} /></section>
        )}
      </div>
    )
  } else if (summary.isError) {
    report = <p role="alert" className="text-red-700 dark:text-red-400">Report: <SafeText value={summary.error.message} /></p>
  } else if (summary.isPending || sources === null) {
    report = <p role="status" className="text-sm text-zinc-500">Loading the report…</p>
  } else {
    const fullStatus = full.isError ? <p role="alert" className="text-red-700 dark:text-red-400">Full report: <SafeText value={full.error.message} /></p>
      : <p role="status" className="text-sm text-zinc-500">Loading the full report…</p>
    report = (
      <ReportPage.Provider value={{ calls, taskErrors }}>
        <ReportViews report={full.data ?? summary.data} partial={full.data === undefined} onNeedFull={() => setWantFull(true)} fullStatus={fullStatus}
          sources={sources} rawDownload={base.data ? `${base.data}/tasks/report/${id}/json` : null} route={typeof t.route === 'string' ? t.route : null}
          tab={tab} onTab={setTab} extra={sessions.length > 0 ? [timelineTab, consoleTab] : [timelineTab]} />
      </ReportPage.Provider>
    )
  }

  return (
    <div>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold">Task {id}</h1>
        <StatusBadge status={status} />
        <TaskActions connection={connection} id={id} task={t} />
        <CompareWith connection={connection} id={id} status={status} />
      </div>
      <div className="mb-4"><TaskFacts task={t} /></div>
      {notStarted !== null && (
        <p role="alert" data-testid="start-failed" className="mb-4 rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-200">
          <b>The sample did not start</b>: <SafeText value={notStarted} />. Nothing of it ran: the report has no processes and no behaviour.
        </p>
      )}
      {report}
    </div>
  )
}
