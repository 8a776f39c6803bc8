// The record of the latest retention runs (retention-log.jsonl): when, what started it, what it
// deleted and freed, and what it left alone and why.
import type { JSX } from 'react'
import { Bytes, SafeText, When } from '../components/text'
import { ErrorNote } from '../dashboard/ErrorNote'
import { counted } from '../format'
import type { RunRecord } from './api'

const TRIGGER: Record<string, string> = { api: 'run from the UI or API', schedule: 'scheduled', cli: 'aviary retention run' }

export function RunsList({ runs, error }: { runs: RunRecord[] | undefined; error: Error | null }): JSX.Element {
  return (
    <section aria-labelledby="retention-runs-title" className="flex flex-col gap-2">
      <h2 id="retention-runs-title" className="font-semibold">Recent runs</h2>
      {error && <ErrorNote prefix="Could not read the record of runs" error={error} />}
      {runs && runs.length === 0 && <p className="text-sm">No run yet.</p>}
      {runs && runs.length > 0 && (
        <ul aria-label="Recent retention runs" className="flex flex-col gap-1 text-sm">
          {runs.map((r) => (
            <li key={`${r.started_at}-${r.trigger}`} data-trigger={r.trigger}>
              <When value={r.started_at} absolute />, {TRIGGER[r.trigger] ?? r.trigger}: deleted {counted(r.deleted.length, 'task')}
              {r.samples.length > 0 && ` and ${counted(r.samples.length, 'sample')}`}, freed <Bytes value={r.freed_bytes} />
              {r.skipped.length > 0 && <>, left {r.skipped.length} alone</>}
              {r.deleted.length > 0 && (
                <details className="ml-4">
                  <summary>Deleted tasks</summary>
                  <ul className="ml-4">{r.deleted.map((t) => <li key={t.id}>#{t.id} <SafeText value={t.target} /> ({t.status.replace('_', ' ')}, <Bytes value={t.bytes} />)</li>)}</ul>
                </details>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}
