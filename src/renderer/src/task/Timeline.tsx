// A task's stages with their times (GET /tasks/timeline/<id>), in words, failures with their
// reasons. Times are exact, with the relative form on hover.
import type { JSX } from 'react'
import { useQuery } from '@tanstack/react-query'
import type { ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { keys } from '../api/live'
import { SafeText, When } from '../components/text'
import type { TimelineEntry } from '../../../shared/api/schemas'

/** The engine's stage names (TIMELINE_STAGES) as an analyst reads them; an unknown one is shown as sent. */
const STAGE_WORDS: Record<string, string> = {
  queued: 'queued', unschedulable: 'no machine can run it', machine_locked: 'machine taken', reverting: 'reverting the machine',
  started: 'machine started', agent_answered: 'agent answered', analyzer_started: 'analyzer started', sample_running: 'sample running',
  finished: 'analysis finished', timed_out: 'timed out', memory_dumped: 'memory dumped', machine_stopped: 'machine stopped',
  completed: 'completed', failed: 'failed', interrupted: 'interrupted', recovered: 'recovered', processing: 'processing',
  reported: 'reported', error: 'error',
  console_opened: 'console opened', console_input: 'typed and clicked in the console', console_closed: 'console closed',
  extended: 'extended', finish_requested: 'finish requested'
}

/**
 * The message of a stage. Cuckoo's analyzer ends with a bare "True" or "False" as its status
 * description (its complete() flag): said in words here.
 */
export function stageMessage(stage: string, message: string): string {
  if (stage === 'finished' && /^true$/i.test(message.trim())) return 'the analyzer ended normally'
  if (stage === 'finished' && /^false$/i.test(message.trim())) return 'the analyzer ended and reported a failure'
  return message
}

export function Timeline({ connection, id, status }: { connection: ConnectionId; id: number; status: string }): JSX.Element {
  // The status is part of the key: each state change (pushed by the event stream) reloads it.
  const q = useQuery({
    queryKey: [...keys.task(connection, id), 'timeline', status],
    queryFn: async ({ signal }): Promise<{ timeline: Partial<TimelineEntry>[] }> => (await clientOf(connection)).timeline(id, { signal }),
    retry: false
  })
  if (q.isPending) return <p className="text-sm text-zinc-600 dark:text-zinc-400">Loading the timeline…</p>
  if (q.isError) return <p role="alert" className="text-sm text-red-700 dark:text-red-400">Timeline: <SafeText value={q.error.message} /></p>
  const entries = Array.isArray(q.data.timeline) ? q.data.timeline : []
  if (entries.length === 0) return <p className="text-sm text-zinc-600 dark:text-zinc-400">No stages recorded.</p>
  return (
    <ol aria-label="Timeline" className="border-l-2 border-zinc-200 pl-4 text-sm dark:border-zinc-800">
      {entries.map((e, i) => {
        const stage = typeof e.stage === 'string' ? e.stage : ''
        const message = typeof e.message === 'string' ? stageMessage(stage, e.message) : ''
        return (
          <li key={i} className="mb-2" data-stage={stage}>
            <span className={`font-medium ${/fail|error|unschedulable/.test(stage) ? 'text-red-700 dark:text-red-400' : ''}`}><SafeText value={STAGE_WORDS[stage] ?? stage} /></span>{' '}
            <span className="text-zinc-600 dark:text-zinc-400"><When value={typeof e.time === 'number' ? e.time / 1000 : e.at} absolute /></span>
            {message !== '' && <div className="text-zinc-700 dark:text-zinc-300"><SafeText value={message} /></div>}
          </li>
        )
      })}
    </ol>
  )
}
