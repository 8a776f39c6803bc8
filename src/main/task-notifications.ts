// Which task changes deserve a desktop notification: a task that reaches `reported` or fails.
// Plain Node (no Electron): it listens to the core's event bus and hands notices to a callback.
import { codePointLabel, replaceInvisible } from '../shared/invisible'

const FINISHED = new Set(['reported', 'failed_analysis', 'failed_processing', 'failed_reporting'])

export interface TaskNotice {
  taskId: number
  title: string
  body: string
}

/** The part of the core's EventBus this needs. */
export interface TaskEvents {
  on(event: 'task', listener: (e: { id: number; json: string }) => void): unknown
  on(event: 'task.deleted', listener: (e: { id: number }) => void): unknown
  off(event: 'task', listener: (e: { id: number; json: string }) => void): unknown
  off(event: 'task.deleted', listener: (e: { id: number }) => void): unknown
}

/** Calls `notify` once each time a task becomes finished; returns the unsubscribe function. */
export function watchFinishedTasks(events: TaskEvents, notify: (n: TaskNotice) => void): () => void {
  // The bus emits on every change of a task's JSON; only a change of status into a finished one counts.
  const last = new Map<number, string>()
  const onTask = (e: { id: number; json: string }) => {
    let task: { status?: unknown; target?: unknown; category?: unknown; errors?: unknown }
    try {
      task = JSON.parse(e.json) as typeof task
    } catch {
      return
    }
    const status = typeof task.status === 'string' ? task.status : ''
    const before = last.get(e.id)
    last.set(e.id, status)
    if (before === status || !FINISHED.has(status)) return
    notify(noticeOf(e.id, status, task))
  }
  const onDeleted = (e: { id: number }) => void last.delete(e.id)
  events.on('task', onTask)
  events.on('task.deleted', onDeleted)
  return () => {
    events.off('task', onTask)
    events.off('task.deleted', onDeleted)
  }
}

function noticeOf(id: number, status: string, task: { target?: unknown; category?: unknown; errors?: unknown }): TaskNotice {
  const target = typeof task.target === 'string' ? task.target : ''
  const name = task.category === 'url' ? target : target.split(/[\\/]/).pop() ?? ''
  const firstError = Array.isArray(task.errors) && typeof task.errors[0] === 'string' ? task.errors[0] : null
  const failed = status !== 'reported'
  return {
    taskId: id,
    title: failed ? `Task ${id} failed` : `Task ${id} finished`,
    body: [visible(name).slice(0, 200), failed ? `${status.replace('_', ' ')}${firstError ? `: ${visible(firstError).slice(0, 200)}` : ''}` : 'The report is ready']
      .filter(Boolean).join('\n')
  }
}

/** The invisible set (src/shared/invisible.ts: controls, bidi, zero-width and other format characters)
 *  shown as <U+202E>, never applied (a notification is plain text, but an override would still
 *  reorder what the analyst reads). */
export const visible = (s: string): string => replaceInvisible(s, (cp) => `<${codePointLabel(cp)}>`)
