// Tasks: rows, counters and the state changes the API asks for. The scheduler's transitions
// arrive with the engine; every write goes through here.
import type { Db } from './database'
import type { TaskStatus } from '../../shared/api/schemas'
import { now } from '../../shared/time'
import { LIST_ORDER, TaskViews, type Alloc } from './task-views'

export interface TaskRow {
  id: number
  category: string
  target: string
  sample_id: number | null
  package: string | null
  timeout: number
  priority: number
  options: string | null
  machine: string | null
  platform: string | null
  tags: string
  custom: string | null
  owner: string
  memory: number
  enforce_timeout: number
  clock: string
  added_on: string
  started_on: string | null
  completed_on: string | null
  status: TaskStatus
  submit_id: number | null
  route: string | null
  processing: string | null
  errors: string
}

/** What a submission decides about how a task runs (parsed from the create forms). */
export interface TaskSettings {
  package: string | null
  timeout: number
  priority: number
  options: string | null
  machine: string | null
  platform: string | null
  tags: string[]
  custom: string | null
  owner: string
  memory: boolean
  enforce_timeout: boolean
  clock: string | null
}

export interface NewTask extends TaskSettings {
  category: 'file' | 'url' | 'archive'
  target: string
  sample_id: number | null
  submit_id: number | null
  errors: string[]
}

export interface ListFilter {
  limit?: number | undefined
  offset?: number | undefined
  status?: string | undefined
  owner?: string | undefined
  completedAfter?: string | undefined
  sampleId?: number | undefined
}

export type StatusCounts = Record<'total' | 'pending' | 'running' | 'completed' | 'reported', number>



export class TasksRepository {
  private readonly db: Db
  private readonly getStmt
  private readonly insertStmt
  private readonly deleteStmt
  private readonly countsStmt
  private readonly listCache = new Map<string, import('better-sqlite3').Statement<unknown[], number>>()
  private readonly views: TaskViews

  /** `jsonCacheBytes` bounds the memory spent on serialized tasks kept for the API. */
  constructor(db: Db, jsonCacheBytes: number) {
    this.db = db
    this.views = new TaskViews(db, jsonCacheBytes)
    this.getStmt = db.prepare<[number], TaskRow>('SELECT * FROM tasks WHERE id = ?')
    this.insertStmt = db.prepare(
      `INSERT INTO tasks (category, target, sample_id, package, timeout, priority, options, machine, platform,
         tags, custom, owner, memory, enforce_timeout, clock, added_on, status, submit_id, errors)
       VALUES (@category, @target, @sample_id, @package, @timeout, @priority, @options, @machine, @platform,
         @tags, @custom, @owner, @memory, @enforce_timeout, @clock, @added_on, 'pending', @submit_id, @errors)`
    )
    this.deleteStmt = db.prepare('DELETE FROM tasks WHERE id = ?')
    this.countsStmt = db.prepare<[], StatusCounts>(
      `SELECT count(*) AS total,
         coalesce(sum(status = 'pending'), 0) AS pending, coalesce(sum(status = 'running'), 0) AS running,
         coalesce(sum(status = 'completed'), 0) AS completed, coalesce(sum(status = 'reported'), 0) AS reported
       FROM tasks`
    )
  }

  get(id: number): TaskRow | undefined {
    return this.getStmt.get(id)
  }

  /** The /tasks/view body of a task, {"task":<json>}, already serialized (task_json). */
  viewBody(id: number): Buffer | undefined {
    return this.views.viewBody(id)
  }

  /** The task as the API shows it, serialized (task_json). */
  viewJson(id: number): string | undefined {
    return this.db.prepare<[number], string>('SELECT json FROM task_json WHERE id = ?').pluck().get(id)
  }

  insert(task: NewTask): number {
    const added = now()
    const info = this.insertStmt.run({
      ...task,
      tags: JSON.stringify(task.tags),
      errors: JSON.stringify(task.errors),
      memory: task.memory ? 1 : 0,
      enforce_timeout: task.enforce_timeout ? 1 : 0,
      clock: task.clock ?? added,
      added_on: added
    })
    return Number(info.lastInsertRowid)
  }

  /** Several tasks in one transaction: a submission lands whole or not at all. */
  insertMany(tasks: NewTask[]): number[] {
    return this.db.transaction((all: NewTask[]) => all.map((t) => this.insert(t)))(tasks)
  }

  /** The /tasks/list body, {"tasks":[...]}, in list order. Unfiltered pages come from memory. */
  listBody(filter: ListFilter, alloc?: Alloc): Buffer {
    const unfiltered = filter.status === undefined && filter.owner === undefined &&
      filter.completedAfter === undefined && filter.sampleId === undefined
    if (unfiltered) return this.views.pageBody(filter.limit, filter.offset ?? 0, alloc)
    const where: string[] = []
    const args: (string | number)[] = []
    if (filter.status !== undefined) { where.push('t.status = ?'); args.push(filter.status) }
    if (filter.owner !== undefined) { where.push('t.owner = ?'); args.push(filter.owner) }
    if (filter.completedAfter !== undefined) { where.push('t.completed_on > ?'); args.push(filter.completedAfter) }
    if (filter.sampleId !== undefined) { where.push('t.sample_id = ?'); args.push(filter.sampleId) }
    const sql = `SELECT t.id FROM tasks t WHERE ${where.join(' AND ')} ${LIST_ORDER} LIMIT ? OFFSET ?`
    let stmt = this.listCache.get(sql)
    if (!stmt) {
      stmt = this.db.prepare<unknown[], number>(sql).pluck()
      this.listCache.set(sql, stmt)
    }
    return this.views.listBody(stmt.all(...args, filter.limit ?? -1, filter.offset ?? 0), alloc)
  }

  /** Ids of the tasks that use a sample, ascending. */
  idsOfSample(sampleId: number): number[] {
    return this.db.prepare<[number], number>('SELECT id FROM tasks WHERE sample_id = ? ORDER BY id').pluck().all(sampleId)
  }

  delete(id: number): boolean {
    return this.deleteStmt.run(id).changes === 1
  }

  counts(): StatusCounts {
    return this.countsStmt.get() as StatusCounts
  }

  /** Reschedule: the old task becomes `recovered` and a pending copy takes its place, at once. */
  reschedule(id: number, copy: NewTask): number {
    return this.db.transaction(() => {
      this.db.prepare(`UPDATE tasks SET status = 'recovered' WHERE id = ?`).run(id)
      return this.insert(copy)
    })()
  }

  /** reported → completed, so processing and reporting run again; false for any other status. */
  rereport(id: number): boolean {
    const info = this.db
      .prepare(`UPDATE tasks SET status = 'completed', completed_on = ? WHERE id = ? AND status = 'reported'`)
      .run(now(), id)
    return info.changes === 1
  }

  /** Deletes the row unless the task is running; says which happened. */
  deleteUnlessRunning(id: number): 'deleted' | 'running' | 'missing' {
    return this.db.transaction(() => {
      const row = this.db.prepare<[number], { status: string }>('SELECT status FROM tasks WHERE id = ?').get(id)
      if (!row) return 'missing'
      if (row.status === 'running') return 'running'
      this.delete(id)
      return 'deleted'
    })()
  }
}
