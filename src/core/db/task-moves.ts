// The one place where a task's status changes. TaskMoves.move(id, from, to) refuses a move the
// transition table (transitions.ts) does not have, and writes only while the task is
// still in `from`, so a task that was rescheduled, re-reported or deleted meanwhile is never
// overwritten. The scheduler's claim, the end of a run, recovery, processing, reschedule and
// rereport all call it (through QueueRepository and TasksRepository).
//
// That no other code writes a status is checked by task-moves.test.ts, which reads the sources:
// a plain rule in plain sight, rather than a database trigger calling back into JS.
import type { Statement } from 'better-sqlite3'
import type { Db } from './database'
import type { TaskStatus } from '../../shared/api/schemas'
import { canMove, IllegalTransition } from './transitions'
import { now } from '../../shared/time'

/** What changes together with the status. */
export interface MoveEffects {
  /** Claimed for a run: started_on = now, completed_on cleared, attempts + 1. */
  started?: boolean
  /** The run ended (or a rereport): completed_on = now. */
  completed?: boolean
  /** Queued again as if new: started_on and completed_on cleared. */
  requeue?: boolean
  /** An attempt the service itself cut short (a clean stop) does not count: attempts - 1. */
  refund?: boolean
}

const EFFECTS: Record<keyof MoveEffects, string[]> = {
  started: ['started_on = @now', 'completed_on = NULL', 'attempts = attempts + 1'],
  completed: ['completed_on = @now'],
  requeue: ['started_on = NULL', 'completed_on = NULL'],
  refund: ['attempts = max(attempts - 1, 0)']
}

const movers = new WeakMap<Db, TaskMoves>()

export class TaskMoves {
  private readonly statements = new Map<string, Statement>()
  private readonly statusStmt

  /** The mover of a connection (one per connection, sharing its prepared statements). */
  static of(db: Db): TaskMoves {
    let mover = movers.get(db)
    if (!mover) {
      mover = new TaskMoves(db)
      movers.set(db, mover)
    }
    return mover
  }

  private constructor(private readonly db: Db) {
    this.statusStmt = db.prepare<[number], TaskStatus>('SELECT status FROM tasks WHERE id = ?').pluck()
  }

  /**
   * Moves the task from `from` to `to`, with `effects`; false when it was not in `from` (any more)
   * or does not exist. Throws IllegalTransition for a move the table does not have.
   */
  move(id: number, from: TaskStatus, to: TaskStatus, effects: MoveEffects = {}): boolean {
    if (!canMove(from, to)) throw new IllegalTransition(from, to)
    return this.statement(effects).run({ id, from, to, now: now() }).changes === 1
  }

  /** The task's status now; undefined when there is no such task. */
  status(id: number): TaskStatus | undefined {
    return this.statusStmt.get(id)
  }

  private statement(effects: MoveEffects): Statement {
    const keys = (Object.keys(EFFECTS) as (keyof MoveEffects)[]).filter((k) => effects[k])
    const key = keys.join(',')
    let stmt = this.statements.get(key)
    if (!stmt) {
      const sets = ['status = @to', ...keys.flatMap((k) => EFFECTS[k])]
      stmt = this.db.prepare(`UPDATE tasks SET ${sets.join(', ')} WHERE id = @id AND status = @from`)
      this.statements.set(key, stmt)
    }
    return stmt
  }
}
