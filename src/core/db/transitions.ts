// Task states as Cuckoo 2 has them, and which may follow which. This table is the rule: every
// change of a task's status is made by TaskMoves.move (task-moves.ts), which refuses a move
// that is not listed here (and a test checks that no other code writes a status). The API's moves (reschedule → recovered, rereport → completed)
// are here too, so a reader sees every way a task can go in one place.
import type { TaskStatus } from '../../shared/api/schemas'

export const TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  // picked by the scheduler; reschedule marks the old task recovered
  pending: ['running', 'recovered'],
  // the run ended (completed, or failed with a reason); interrupted, or cut off by a crash, it is
  // queued again (pending). Not `recovered`: a task stops being `running` only when its run has
  // ended, else the old task could be deleted while the run still writes into its folder.
  running: ['completed', 'failed_analysis', 'pending'],
  // processing and reporting move it on
  completed: ['reported', 'failed_processing', 'failed_reporting', 'recovered'],
  // rereport sends it back to processing
  reported: ['completed', 'recovered'],
  failed_analysis: ['recovered'],
  failed_processing: ['completed', 'recovered'],
  failed_reporting: ['completed', 'recovered'],
  // rescheduled already: rescheduling it again queues one more copy and leaves it recovered (no move)
  recovered: []
}

export function canMove(from: TaskStatus, to: TaskStatus): boolean {
  return TRANSITIONS[from].includes(to)
}

export class IllegalTransition extends Error {
  constructor(readonly from: TaskStatus, readonly to: TaskStatus) {
    super(`a task cannot go from ${from} to ${to}`)
  }
}
