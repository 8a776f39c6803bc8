// The scheduler's SQL: the pending queue, claiming a task together with a machine, finishing,
// re-queueing, the errors a task carries while it waits, and the processor's claims. Status
// changes go through TaskMoves (task-moves.ts), which checks them against the transition table
// (transitions.ts) and writes only while the task is in the status the caller expects,
// so a task rescheduled or deleted meanwhile is never overwritten.
import type { Db } from './database'
import type { TaskStatus } from '../../shared/api/schemas'
import { now } from '../../shared/time'
import { TaskMoves } from './task-moves'
import { ProcessingClaims } from './processing-claims'

/** What the scheduler needs of a pending task to choose a machine for it. */
export interface QueuedTask {
  id: number
  machine: string | null
  platform: string | null
  tags: string
  priority: number
  errors: string
}

export class QueueRepository {
  private readonly pendingStmt
  private readonly queuedStmt
  private readonly moves: TaskMoves
  private readonly claims: ProcessingClaims
  private readonly lockMachine
  private readonly errorsStmt
  private readonly setErrorsStmt

  constructor(private readonly db: Db) {
    this.moves = TaskMoves.of(db)
    this.claims = ProcessingClaims.of(db)
    // Priority, then age (ids grow with age): the tasks_queue index serves this order.
    this.pendingStmt = db.prepare<[], QueuedTask>(
      `SELECT id, machine, platform, tags, priority, errors FROM tasks
       WHERE status = 'pending' ORDER BY priority DESC, id`
    )
    this.queuedStmt = db.prepare<[number], QueuedTask>(
      `SELECT id, machine, platform, tags, priority, errors FROM tasks WHERE id = ? AND status = 'pending'`
    )
    this.lockMachine = db.prepare(
      `UPDATE machines SET locked = 1, locked_changed_on = @now WHERE id = @machineId AND locked = 0 AND configured = 1`
    )
    this.errorsStmt = db.prepare<[number], string>('SELECT errors FROM tasks WHERE id = ?').pluck()
    this.setErrorsStmt = db.prepare('UPDATE tasks SET errors = ? WHERE id = ?')
  }

  /** One task if it is still pending. */
  queued(id: number): QueuedTask | undefined {
    return this.queuedStmt.get(id)
  }

  /** Pending tasks in scheduling order, read lazily: the caller stops when machines run out. */
  pending(): IterableIterator<QueuedTask> {
    return this.pendingStmt.iterate()
  }

  /**
   * Takes the task and the machine together, or neither: the task must still be pending and the
   * machine unlocked. Errors that only explained the wait (those starting with
   * `dropErrorPrefix`) are dropped.
   */
  claim(taskId: number, machineId: number, dropErrorPrefix: string): boolean {
    try {
      return this.db.transaction(() => {
        const at = now()
        if (this.lockMachine.run({ machineId, now: at }).changes !== 1) return false
        if (!this.moves.move(taskId, 'pending', 'running', { started: true })) throw new ClaimLost()
        const errors = this.errors(taskId).filter((e) => !e.startsWith(dropErrorPrefix))
        this.setErrorsStmt.run(JSON.stringify(errors), taskId)
        return true
      })()
    } catch (err) {
      if (err instanceof ClaimLost) return false
      throw err
    }
  }

  /**
   * Moves a task from one status to another; false when it was not in `from` any more. A move the
   * transition table does not have throws IllegalTransition (TaskMoves.move).
   */
  move(id: number, from: TaskStatus, to: TaskStatus, opts: { completed?: boolean; requeue?: boolean; refund?: boolean } = {}): boolean {
    return this.moves.move(id, from, to, opts)
  }

  errors(id: number): string[] {
    const raw = this.errorsStmt.get(id)
    return raw === undefined ? [] : (JSON.parse(raw) as string[])
  }

  /** Adds an error message to the task unless it already carries the same one. */
  addError(id: number, message: string): boolean {
    return this.db.transaction(() => {
      const errors = this.errors(id)
      if (errors.includes(message)) return false
      errors.push(message)
      return this.setErrorsStmt.run(JSON.stringify(errors), id).changes === 1
    })()
  }

  /** Tasks a previous process left `running`, with how often each was started. */
  running(): { id: number; attempts: number }[] {
    return this.db.prepare<[], { id: number; attempts: number }>(
      `SELECT id, attempts FROM tasks WHERE status = 'running' ORDER BY id`
    ).all()
  }

  /** The oldest task that finished its analysis (or was re-reported) and nobody processes yet. */
  nextCompleted(): number | undefined {
    return this.db.prepare<[], number>(
      `SELECT id FROM tasks WHERE status = 'completed' AND processing IS NULL ORDER BY completed_on, id LIMIT 1`
    ).pluck().get()
  }

  /** Claims a completed task for processing by `instance`; false if it is gone, moved on or claimed. */
  claimProcessing(id: number, instance: string): boolean {
    return this.claims.claim(id, instance)
  }

  /** Ends the processing claim (after the last write into the task's folder). */
  releaseProcessing(id: number): void {
    this.claims.release(id)
  }

  /** Clears processing claims left by a process that is gone; returns how many. */
  clearStaleProcessing(): number {
    return this.claims.clearStale()
  }

  attempts(id: number): number {
    return this.db.prepare<[number], number>('SELECT attempts FROM tasks WHERE id = ?').pluck().get(id) ?? 0
  }
}

/** The machine was locked but the task had left `pending`: the transaction rolls back. */
class ClaimLost extends Error {}
