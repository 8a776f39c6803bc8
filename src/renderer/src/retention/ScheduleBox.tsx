// The retention schedule: on or off, its interval, the next and the last scheduled run.
import { useState, type JSX } from 'react'
import { When } from '../components/text'
import type { RetentionSettings } from './api'

export interface ScheduleBoxProps {
  schedule: RetentionSettings['schedule']
  busy: boolean
  error: string | null
  onSave(fields: { enabled: boolean; interval_minutes: number }): void
}

export function ScheduleBox({ schedule, busy, error, onSave }: ScheduleBoxProps): JSX.Element {
  const [enabled, setEnabled] = useState(schedule.enabled)
  const [minutes, setMinutes] = useState(String(schedule.interval_minutes))
  const changed = enabled !== schedule.enabled || minutes !== String(schedule.interval_minutes)
  return (
    <section aria-labelledby="retention-schedule-title" className="flex flex-col gap-2">
      <h2 id="retention-schedule-title" className="font-semibold">Schedule</h2>
      <form className="flex flex-wrap items-center gap-3 text-sm" onSubmit={(e) => { e.preventDefault(); onSave({ enabled, interval_minutes: Number(minutes) }) }}>
        <label className="flex items-center gap-2">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
          Run the enabled rules on a schedule
        </label>
        <label className="flex items-center gap-1">
          every
          <input type="number" min={1} step={1} value={minutes} onChange={(e) => setMinutes(e.target.value)} aria-label="Minutes between runs"
            className="w-20 rounded border border-zinc-400 bg-transparent px-1 dark:border-zinc-600" />
          minutes
        </label>
        <button type="submit" disabled={busy || !changed} className="rounded border border-zinc-400 px-3 py-0.5 disabled:opacity-50 dark:border-zinc-600">Save schedule</button>
      </form>
      <p data-testid="schedule-state" className="text-sm text-zinc-700 dark:text-zinc-300">
        {schedule.enabled && schedule.next_run_at ? <>On: next run <When value={schedule.next_run_at} absolute />.</> : 'Off: rules run only when you run them.'}
        {schedule.last_run_at && <> Last scheduled run <When value={schedule.last_run_at} />.</>}
      </p>
      {error && <p role="alert" className="rounded border border-red-300 bg-red-50 px-2 py-1 text-sm text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100">{error}</p>}
    </section>
  )
}
