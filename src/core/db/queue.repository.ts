// The scheduler's SQL: the pending queue, claiming a task together with a machine, finishing,
// re-queueing, and the errors a task carries while it waits. Which status may follow which is the
// scheduler's pure transition table (scheduler/transitions.ts); every update here is conditional
// on the status the caller expects, so a task rescheduled or deleted meanwhile is never overwritten.
import type { Db } from './database'
import type { TaskStatus } from '../../shared/api/schemas'
import { now } from '../../shared/time'

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
  private readonly claimTask
  private readonly lockMachine
  private readonly errorsStmt
  private readonly setErrorsStmt

  constructor(private readonly db: Db) {
    // Priority, then age (ids grow with age): the tasks_queue index serves this order.
    this.pendingStmt = db.prepare<[], QueuedTask>(
      `SELECT id, machine, platform, tags, priority, errors FROM tasks
       WHERE status = 'pending' ORDER BY priority DESC, id`
    )
    this.queuedStmt = db.prepare<[number], QueuedTask>(
      `SELECT id, machine, platform, tags, priority, errors FROM tasks WHERE id = ? AND status = 'pending'`
    )
    this.claimTask = db.prepare(
      `UPDATE tasks SET status = 'running', started_on = @now, completed_on = NULL, attempts = attempts + 1
       WHERE id = @id AND status = 'pending'`
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
        if (this.claimTask.run({ id: taskId, now: at }).changes !== 1) throw new ClaimLost()
        const errors = this.errors(taskId).filter((e) => !e.startsWith(dropErrorPrefix))
        this.setErrorsStmt.run(JSON.stringify(errors), taskId)
        return true
      })()
    } catch (err) {
      if (err instanceof ClaimLost) return false
      throw err
    }
  }

  /** Moves a task from one status to another; false when it was not in `from` any more. */
  move(id: number, from: TaskStatus, to: TaskStatus, opts: { completed?: boolean; requeue?: boolean; refund?: boolean } = {}): boolean {
    const sets = ['status = @to']
    if (opts.completed) sets.push('completed_on = @now')
    if (opts.requeue) sets.push('started_on = NULL', 'completed_on = NULL')
    // An attempt the service itself cut short (a clean stop) does not count against the task.
    if (opts.refund) sets.push('attempts = max(attempts - 1, 0)')
    const info = this.db.prepare(`UPDATE tasks SET ${sets.join(', ')} WHERE id = @id AND status = @from`)
      .run({ id, from, to, now: now() })
    return info.changes === 1
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

  /** The oldest task that finished its analysis and waits for processing (or a rereport). */
  nextCompleted(): number | undefined {
    return this.db.prepare<[], number>(
      `SELECT id FROM tasks WHERE status = 'completed' ORDER BY completed_on, id LIMIT 1`
    ).pluck().get()
  }

  attempts(id: number): number {
    return this.db.prepare<[number], number>('SELECT attempts FROM tasks WHERE id = ?').pluck().get(id) ?? 0
  }
}

/** The machine was locked but the task had left `pending`: the transaction rolls back. */
class ClaimLost extends Error {}
