// Counts for the dashboard (GET /aviary/stats), each from one index: by status from
// tasks_status_list, added per day from tasks_added (migration 3), finished per day from
// tasks_status_list again (a range of completed_on within each finished status).
import type { Db } from './database'
import { TASK_STATUSES, type TaskStatus } from '../../shared/api/schemas'

/** Statuses a task ends in: what "finished" counts. */
export const FINISHED_STATUSES: readonly TaskStatus[] = ['reported', 'failed_analysis', 'failed_processing', 'failed_reporting']

export class TaskStats {
  private readonly byStatus
  private readonly addedPerDay
  private readonly finishedPerDay

  constructor(db: Db) {
    this.byStatus = db.prepare<[], [string, number]>('SELECT status, count(*) FROM tasks GROUP BY status').raw()
    this.addedPerDay = db.prepare<[string], [string, number]>(
      'SELECT substr(added_on, 1, 10) AS day, count(*) FROM tasks WHERE added_on >= ? GROUP BY day'
    ).raw()
    this.finishedPerDay = db.prepare<[string], [string, number]>(
      `SELECT substr(completed_on, 1, 10) AS day, count(*) FROM tasks
       WHERE status IN (${FINISHED_STATUSES.map((s) => `'${s}'`).join(', ')}) AND completed_on >= ? GROUP BY day`
    ).raw()
  }

  /** Every status with its count (zeros included), and the total. */
  counts(): { total: number; byStatus: Record<TaskStatus, number> } {
    const byStatus = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>
    let total = 0
    for (const [status, n] of this.byStatus.all()) {
      total += n
      if (status in byStatus) byStatus[status as TaskStatus] = n
    }
    return { total, byStatus }
  }

  /** Tasks added and finished per local date (`YYYY-MM-DD`) from `since` on; days without any are absent. */
  perDay(since: string): { added: Map<string, number>; finished: Map<string, number> } {
    return {
      added: new Map(this.addedPerDay.all(`${since} 00:00:00`)),
      finished: new Map(this.finishedPerDay.all(`${since} 00:00:00`))
    }
  }
}
