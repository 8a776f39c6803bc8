// Why a sample never started, from the messages the task and its report keep: Aviary's analyzer
// reports "the sample did not start: <the OS's error>" (the task's errors, its timeline, and the
// report's debug.errors); Cuckoo's analyzer raises "Unable to execute initial process, analysis
// aborted" from its package.
import { obj, strs } from './model'

const AVIARY = /the sample did not start: ([^\n]{1,2000})/
const CUCKOO = /unable to execute (?:the )?initial process/i

/** The reason in the messages, or null when none says the sample did not start. */
export function startFailure(messages: readonly unknown[]): string | null {
  for (const m of messages.slice(0, 500)) {
    if (typeof m !== 'string') continue
    const a = AVIARY.exec(m)
    if (a) return (a[1] as string).trim()
    if (CUCKOO.test(m)) return m.length > 2000 ? `${m.slice(0, 2000)}…` : m
  }
  return null
}

/** The reason from the task's errors (when the page has them), else from report.debug.errors. */
export function reportStartFailure(report: unknown, taskErrors: readonly unknown[]): string | null {
  return startFailure(taskErrors) ?? startFailure(strs(obj(report, 'debug'), 'errors'))
}
