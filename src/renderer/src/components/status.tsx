// A task's status as a coloured badge (colour is never the only signal: the word is shown).
import type { JSX } from 'react'
import { scoreLevel, scoreWords, type ScoreLevel } from '../../../shared/score'
import { unschedulable } from '../task/unschedulable'
import { startFailure } from '../report/start-failure'

const COLORS: Record<string, string> = {
  pending: 'bg-zinc-200 text-zinc-800 dark:bg-zinc-700 dark:text-zinc-100',
  running: 'bg-sky-200 text-sky-900 dark:bg-sky-800 dark:text-sky-100',
  completed: 'bg-indigo-200 text-indigo-900 dark:bg-indigo-800 dark:text-indigo-100',
  reported: 'bg-emerald-200 text-emerald-900 dark:bg-emerald-800 dark:text-emerald-100',
  recovered: 'bg-amber-200 text-amber-900 dark:bg-amber-800 dark:text-amber-100',
  failed_analysis: 'bg-red-200 text-red-900 dark:bg-red-900 dark:text-red-100',
  failed_processing: 'bg-red-200 text-red-900 dark:bg-red-900 dark:text-red-100',
  failed_reporting: 'bg-red-200 text-red-900 dark:bg-red-900 dark:text-red-100'
}

export function StatusBadge({ status }: { status: string }): JSX.Element {
  return (
    <span data-status={status} className={`inline-block whitespace-nowrap rounded px-1.5 py-0.5 text-xs font-medium ${COLORS[status] ?? COLORS.pending}`}>
      {status.replace('_', ' ')}
    </span>
  )
}

const MARK = 'whitespace-nowrap rounded border border-amber-600 px-1 text-xs font-medium text-amber-800 dark:border-amber-400 dark:text-amber-300'

/**
 * A task's status, with a mark where the status alone would mislead: "no machine" for a pending
 * task no machine can run (the scheduler's reason on hover), "not started" for a task whose sample
 * never ran (the OS's reason on hover): its report and score are of nothing. One line, never wrapped.
 */
export function TaskStatusBadge({ task }: { task: { status: string; errors?: unknown } }): JSX.Element {
  const why = unschedulable(task)
  const failed = startFailure(Array.isArray(task.errors) ? task.errors : [])
  return (
    <span className="inline-flex items-center gap-1 whitespace-nowrap">
      <StatusBadge status={task.status} />
      {why !== null && <span data-unschedulable title={`No machine can run this task: ${why}`} className={MARK}>no machine</span>}
      {failed !== null && <span data-not-started title={`The sample did not start: ${failed}`} className={MARK}>not started</span>}
    </span>
  )
}

/** Each level of the shared scale (src/shared/score.ts), light and dark; text and pill pass WCAG AA contrast. */
const SCORE_TONES: Record<ScoreLevel, string> = {
  none: 'bg-zinc-200 text-zinc-800 dark:bg-zinc-700 dark:text-zinc-100',
  low: 'bg-yellow-200 text-yellow-900 dark:bg-yellow-900 dark:text-yellow-100',
  medium: 'bg-orange-200 text-orange-900 dark:bg-orange-800 dark:text-orange-50',
  high: 'bg-red-700 text-white dark:bg-red-700 dark:text-white'
}

/** Score 0–10 as a coloured pill, its level in words on hover. */
export function ScoreBadge({ score }: { score: number | null | undefined }): JSX.Element {
  if (score === null || score === undefined || !Number.isFinite(score)) return <span className="text-zinc-500 dark:text-zinc-400">—</span>
  const level = scoreLevel(score)
  return (
    <span data-level={level} title={`score ${score} of 10: ${scoreWords(score)}`}
      className={`inline-block rounded-full px-2 text-xs font-semibold ${SCORE_TONES[level]}`}>{score.toFixed(1)}</span>
  )
}
