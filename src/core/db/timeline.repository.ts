// The live timeline of tasks: every stage with its time. Rows are written by the engine (and the
// `queued` row by a trigger at insert); GET /tasks/timeline/<id> and the event stream read them.
import type { Db } from './database'
import type { TimelineStage } from '../../shared/api/schemas'

export interface TimelineRow {
  id: number
  task_id: number
  at: number
  stage: TimelineStage
  message: string | null
}

export class TimelineRepository {
  private readonly insertStmt
  private readonly listStmt

  constructor(db: Db) {
    this.insertStmt = db.prepare('INSERT INTO task_events (task_id, at, stage, message) VALUES (?, ?, ?, ?)')
    this.listStmt = db.prepare<[number], TimelineRow>('SELECT * FROM task_events WHERE task_id = ? ORDER BY id')
  }

  /** Records a stage now; false when the task no longer exists (deleted meanwhile). */
  add(taskId: number, stage: TimelineStage, message: string | null = null, at = Date.now()): boolean {
    try {
      this.insertStmt.run(taskId, at, stage, message)
      return true
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return false
      throw err
    }
  }

  list(taskId: number): TimelineRow[] {
    return this.listStmt.all(taskId)
  }
}
