// A task's status as a coloured badge (colour is never the only signal: the word is shown).
import type { JSX } from 'react'

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
    <span data-status={status} className={`inline-block rounded px-1.5 py-0.5 text-xs font-medium ${COLORS[status] ?? COLORS.pending}`}>
      {status.replace('_', ' ')}
    </span>
  )
}

/** Score 0–10 as a coloured pill. */
export function ScoreBadge({ score }: { score: number | null | undefined }): JSX.Element {
  if (score === null || score === undefined || !Number.isFinite(score)) return <span className="text-zinc-400">—</span>
  const tone = score >= 5 ? 'bg-red-600 text-white' : score >= 2 ? 'bg-amber-500 text-black' : 'bg-emerald-600 text-white'
  return <span title={`score ${score} of 10`} className={`inline-block rounded-full px-2 text-xs font-semibold ${tone}`}>{score.toFixed(1)}</span>
}
