// A dry run on screen: every task the rule (or every enabled rule) would delete now, with its
// target, status, score, age and size, the samples that would go with them, and the disk it would
// free; then "Delete", which asks first and then deletes, of these tasks, the ones that still
// match (the service checks each again just before it goes). Once it has run, the panel shows
// what the run did instead of the dry run (whose tasks are gone), and says that tasks not finished
// (pending, running, being processed) are left alone by every rule.
import { useState, type JSX } from 'react'
import { Link } from 'react-router'
import { Bytes, SafeText } from '../components/text'
import { ScoreBadge, StatusBadge } from '../components/status'
import { counted } from '../format'
import type { Preview, RunRecord, Selection } from './api'

/** Rows drawn at once; the run still takes every task listed by the service. */
export const SHOWN_ROWS = 500

const titleOf = (sel: Selection): string =>
  sel.kind === 'all' ? 'every enabled rule' : sel.kind === 'rule' ? `rule #${sel.id} ${sel.name}` : 'the rule as written (not saved)'

export interface PreviewPanelProps {
  selection: Selection
  preview: Preview
  running: boolean
  result: RunRecord | null
  /** Tasks not finished now (pending, running, completed): no rule deletes them; null when unknown. */
  unfinished?: number | null
  runError: string | null
  onRun(): void
  onClose(): void
}

export function PreviewPanel({ selection, preview, running, result, runError, unfinished = null, onRun, onClose }: PreviewPanelProps): JSX.Element {
  const p = preview
  const count = p.tasks.length
  // Older services send no recordings.
  const recordings = Array.isArray(p.recordings) ? p.recordings : []
  const recordingBytes = p.total.recording_bytes ?? 0
  const draft = selection.kind === 'draft'
  const [confirming, setConfirming] = useState(false)
  const unfinishedNote = unfinished !== null && unfinished > 0 && (
    <p data-testid="retention-unfinished" className="text-sm text-zinc-700 dark:text-zinc-300">
      {counted(unfinished, 'task')} {unfinished === 1 ? 'is' : 'are'} not finished (pending, running or being processed): no rule deletes {unfinished === 1 ? 'it' : 'them'} until {unfinished === 1 ? 'it is' : 'they are'} reported or failed.
    </p>
  )
  if (result) {
    return (
      <section aria-labelledby="retention-preview-title" className="flex flex-col gap-2 rounded border border-zinc-300 p-3 dark:border-zinc-700">
        <header className="flex flex-wrap items-baseline gap-3">
          <h2 id="retention-preview-title" className="font-semibold">Run: <SafeText value={titleOf(selection)} /></h2>
          <button type="button" onClick={onClose} aria-label="Close the run's record" className="ml-auto rounded px-2 hover:bg-zinc-100 dark:hover:bg-zinc-800">✕</button>
        </header>
        <RunResult run={result} />
        {unfinishedNote}
      </section>
    )
  }
  return (
    <section aria-labelledby="retention-preview-title" className="flex flex-col gap-2 rounded border border-zinc-300 p-3 dark:border-zinc-700">
      <header className="flex flex-wrap items-baseline gap-3">
        <h2 id="retention-preview-title" className="font-semibold">Preview: <SafeText value={titleOf(selection)} /></h2>
        <button type="button" onClick={onClose} aria-label="Close the preview" className="ml-auto rounded px-2 hover:bg-zinc-100 dark:hover:bg-zinc-800">✕</button>
      </header>
      <p data-testid="preview-summary" className="text-sm">
        {count === 0 && recordings.length === 0 ? 'Nothing to delete now.' : count === 0 ? null : <>
          <strong>{counted(count, 'task')}</strong> would be deleted, freeing <strong><Bytes value={p.total.bytes + p.total.sample_bytes} /></strong>
          {p.samples.length > 0 && <> (analyses <Bytes value={p.total.bytes} />, {counted(p.samples.length, 'stored sample')} <Bytes value={p.total.sample_bytes} />)</>}.
        </>}
        {recordings.length > 0 && <> The live console recordings of <strong>{counted(recordings.length, 'task')}</strong> would be deleted first, freeing <strong><Bytes value={recordingBytes} /></strong>: those tasks stay.</>}
        {p.disk && <> Disk free now: <Bytes value={p.disk.free} /> of <Bytes value={p.disk.total} />.</>}
      </p>
      {count > 0 && (
        <div className="max-h-96 overflow-auto">
          <table className="w-full text-left text-sm" aria-label="Tasks the run would delete">
            <thead className="sticky top-0 bg-white dark:bg-zinc-900">
              <tr><th scope="col" className="pr-2">Task</th><th scope="col" className="pr-2">Target</th><th scope="col" className="pr-2">Status</th>
                <th scope="col" className="pr-2">Score</th><th scope="col" className="pr-2 text-right">Age (days)</th><th scope="col" className="text-right">Size</th></tr>
            </thead>
            <tbody>
              {p.tasks.slice(0, SHOWN_ROWS).map((t) => (
                <tr key={t.id} data-task-id={t.id} className="border-t border-zinc-200 dark:border-zinc-800">
                  <td className="pr-2"><Link to={`/tasks/${t.id}`} className="text-sky-800 underline dark:text-sky-300">#{t.id}</Link></td>
                  <td className="max-w-md truncate pr-2" title={t.target}><SafeText value={t.target} /></td>
                  <td className="pr-2"><StatusBadge status={t.status} /></td>
                  <td className="pr-2"><ScoreBadge score={t.score} /></td>
                  <td className="pr-2 text-right tabular-nums">{t.age_days.toFixed(1)}</td>
                  <td className="text-right tabular-nums"><Bytes value={t.bytes} /></td>
                </tr>
              ))}
            </tbody>
          </table>
          {count > SHOWN_ROWS && <p className="text-sm">… and {(count - SHOWN_ROWS).toLocaleString('en-US')} more (all {count.toLocaleString('en-US')} are deleted by the run).</p>}
        </div>
      )}
      {recordings.length > 0 && (
        <details className="text-sm" data-testid="preview-recordings">
          <summary>Tasks whose console recordings go ({recordings.length}), largest first: the tasks and their reports stay</summary>
          <ul>{recordings.map((r) => <li key={r.id}><Link to={`/tasks/${r.id}`} className="text-sky-800 underline dark:text-sky-300">#{r.id}</Link> <SafeText value={r.target} /> (<Bytes value={r.bytes} />)</li>)}</ul>
        </details>
      )}
      {p.samples.length > 0 && (
        <details className="text-sm">
          <summary>Stored samples removed with them ({p.samples.length}): no remaining task uses them</summary>
          <ul className="font-mono text-xs">{p.samples.map((s) => <li key={s.id}>{s.sha256} (<Bytes value={s.bytes} />)</li>)}</ul>
        </details>
      )}
      {unfinishedNote}
      {draft ? (
        <p className="text-sm text-zinc-700 dark:text-zinc-300">Save the rule to run it.</p>
      ) : (count > 0 || recordings.length > 0) && (confirming || running ? (
        <div role="group" aria-labelledby="retention-confirm" className="flex flex-wrap items-center gap-2 rounded border border-red-300 bg-red-50 px-2 py-1 text-sm dark:border-red-800 dark:bg-red-950">
          <span id="retention-confirm" className="text-red-900 dark:text-red-100">
            {count > 0
              ? <>Delete {counted(count, 'task')}, {count === 1 ? 'its analysis' : 'their analyses'}{p.samples.length > 0 ? ` and ${counted(p.samples.length, 'stored sample')}` : ''}{recordings.length > 0 ? ', and the console recordings listed' : ''}? This cannot be undone.</>
              : <>Delete the console recordings of {counted(recordings.length, 'task')}? This cannot be undone.</>}
          </span>
          <button type="button" disabled={running} onClick={onRun} className="rounded bg-red-700 px-3 py-1 font-medium text-white disabled:opacity-50">
            {running ? 'Deleting…' : count > 0 ? `Yes, delete ${count === 1 ? 'it' : `all ${count}`}` : `Yes, delete ${recordings.length === 1 ? 'it' : 'them'}`}
          </button>
          <button type="button" disabled={running} onClick={() => setConfirming(false)} className="rounded border border-zinc-400 px-3 py-1 disabled:opacity-50 dark:border-zinc-600">Cancel</button>
        </div>
      ) : (
        <div>
          <button type="button" onClick={() => setConfirming(true)} className="rounded bg-red-700 px-3 py-1 font-medium text-white">
            {count > 0 ? `${count === 1 ? 'Delete this task' : `Delete these ${counted(count, 'task')}`}${recordings.length > 0 ? ' and the recordings' : ''}…` : `Delete the recordings of ${counted(recordings.length, 'task')}…`}
          </button>
        </div>
      ))}
      {runError && <p role="alert" className="rounded border border-red-300 bg-red-50 px-2 py-1 text-sm text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100">The run failed: <SafeText value={runError} /></p>}
    </section>
  )
}

export function RunResult({ run }: { run: RunRecord }): JSX.Element {
  return (
    <div role="status" data-testid="run-result" className="rounded border border-emerald-300 bg-emerald-50 px-2 py-1 text-sm text-emerald-950 dark:border-emerald-800 dark:bg-emerald-950 dark:text-emerald-50">
      <p>Deleted {counted(run.deleted.length, 'task')}{run.samples.length > 0 && ` and ${counted(run.samples.length, 'stored sample')}`}{(run.recordings?.length ?? 0) > 0 && `, and the console recordings of ${counted(run.recordings!.length, 'task')}`}, freed <Bytes value={run.freed_bytes} />.</p>
      {run.skipped.length > 0 && (
        <ul aria-label="Left alone">
          {run.skipped.map((s) => <li key={s.id}>Task #{s.id} left alone: <SafeText value={s.reason} /></li>)}
        </ul>
      )}
      {run.deleted.filter((t) => t.warning).map((t) => <p key={t.id}>Task #{t.id}: <SafeText value={t.warning} /></p>)}
    </div>
  )
}
