// While a task runs: how long its analysis has run against its timeout, as a bar that moves every
// second. A task with timeout 0 runs for the server's default, which the page does not know: the
// elapsed time is shown alone, and says so.
import { useEffect, useState, type JSX } from 'react'
import { formatDuration, parseDate } from '../format'

export function RunProgress({ startedOn, timeout }: { startedOn: unknown; timeout: number | null | undefined }): JSX.Element | null {
  const started = parseDate(startedOn)
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(t)
  }, [])
  if (!started) return null
  const elapsed = Math.max(0, Math.round((now - started.getTime()) / 1000))
  const limit = typeof timeout === 'number' && timeout > 0 ? timeout : null
  const text = limit === null ? `${formatDuration(elapsed)}, the server's default timeout` : `${formatDuration(elapsed)} of ${formatDuration(limit)}`
  const pct = limit === null ? null : Math.min(100, (elapsed / limit) * 100)
  return (
    <div className="mb-4 flex max-w-xl flex-col gap-1 text-sm">
      <div className="flex justify-between gap-2">
        <span className="font-medium">Running</span>
        <span className="tabular-nums text-zinc-700 dark:text-zinc-300">{text}{limit !== null && elapsed > limit ? ' (past the timeout: the analysis is ending)' : ''}</span>
      </div>
      <div role="progressbar" aria-label="Analysis time" aria-valuemin={0} aria-valuemax={limit ?? undefined} aria-valuenow={elapsed}
        aria-valuetext={text} className="h-2 w-full overflow-hidden rounded bg-zinc-200 dark:bg-zinc-800">
        {pct === null
          ? <div className="h-full w-1/3 animate-pulse bg-sky-600" />
          : <div className="h-full bg-sky-600" style={{ width: `${pct}%` }} />}
      </div>
    </div>
  )
}
