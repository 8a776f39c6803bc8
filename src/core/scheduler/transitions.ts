// Task states as Cuckoo 2 has them, and which may follow which: the one table the engine's moves
// are checked against. The API's own moves (reschedule → recovered, rereport → completed) are
// in it too, so a reader sees every way a task can go in one place.
import type { TaskStatus } from '../../shared/api/schemas'

export const TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  // picked by the scheduler; reschedule marks the old task recovered
  pending: ['running', 'recovered'],
  // the run ended (completed, or failed with a reason); interrupted or recovered after a crash
  // it is queued again (pending); rescheduled meanwhile it becomes recovered
  running: ['completed', 'failed_analysis', 'pending', 'recovered'],
  // processing and reporting (the reports issue) move it on
  completed: ['reported', 'failed_processing', 'failed_reporting', 'recovered'],
  reported: ['completed', 'recovered'],
  failed_analysis: ['recovered'],
  failed_processing: ['completed', 'recovered'],
  failed_reporting: ['completed', 'recovered'],
  recovered: []
}

export function canMove(from: TaskStatus, to: TaskStatus): boolean {
  return TRANSITIONS[from].includes(to)
}

export class IllegalTransition extends Error {
  constructor(from: TaskStatus, to: TaskStatus) {
    super(`a task cannot go from ${from} to ${to}`)
  }
}
