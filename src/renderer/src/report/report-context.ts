// What the page that shows a report knows besides the report itself, for the views that can use
// it: the Task page gives the task's calls through its server (paged) and the task's errors; the
// Offline page gives nothing, and the views then read the report alone.
import { createContext } from 'react'
import type { CallsSource } from './calls-source'

export interface ReportPageContext {
  /** The task's calls through its server (pages, with a fallback to the full report), or null. */
  calls: CallsSource | null
  /** The task's errors as its server lists them (tasks/view), when the page has the task. */
  taskErrors: readonly string[]
}

export const ReportPage = createContext<ReportPageContext>({ calls: null, taskErrors: [] })
