// Tasks: rows, counters, and the changes the API asks for (insert, delete, reschedule, rereport).
// Not every write of a task is here: the scheduler, the runs, recovery and the processor write
// through QueueRepository (status, errors, processing claims), processing's scores go through
// TaskScores (task-search.ts). Every change of a status, from here or there, is made by TaskMoves
// (task-moves.ts), which checks it against the transition table (transitions.ts). The database
// itself does not refuse other writes: task-moves.test.ts reads the sources and fails if any
// other code writes a status.
// Whichever repository (or other connection) writes, the events are the same: SQL triggers note
// every change in the change journal, which the event bus reads (events/event-bus.ts). The API's
// bodies, {"task":...} and {"tasks":[...]}, come from task_json through TaskBodies (task-bodies.ts).
import type { Db } from './database'
import type { TaskStatus } from '../../shared/api/schemas'
import type { TaskSettings } from '../../shared/api/task-fields'
import { now } from '../../shared/time'
import { LIST_ORDER, TaskBodies } from './task-bodies'
import { TaskMoves } from './task-moves'
import { ProcessingClaims } from './processing-claims'

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

/** What a submission decides about how a task runs: the task fields parsed (src/shared/api/task-fields.ts). */
export type { TaskSettings }

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
  private readonly bodies: TaskBodies
  private readonly moves: TaskMoves
  private readonly claims: ProcessingClaims

  constructor(db: Db) {
    this.db = db
    this.bodies = new TaskBodies(db)
    this.moves = TaskMoves.of(db)
    this.claims = ProcessingClaims.of(db)
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

  /** Whether the task exists: its results are served only while it does. */
  exists(id: number): boolean {
    return this.moves.status(id) !== undefined
  }

  /** The /tasks/view body of a task, {"task":<json>}, already serialized (task_json). */
  viewBody(id: number): string | undefined {
    return this.bodies.view(id)
  }

  /** The task as the API shows it, serialized (task_json). */
  viewJson(id: number): string | undefined {
    return this.bodies.json(id)
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

  /** The /tasks/list body, {"tasks":[...]}, in list order (task-bodies.ts). */
  listBody(filter: ListFilter): Buffer {
    const unfiltered = filter.status === undefined && filter.owner === undefined &&
      filter.completedAfter === undefined && filter.sampleId === undefined
    if (unfiltered) return this.bodies.page(filter.limit, filter.offset ?? 0)
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
    return this.bodies.list(stmt.all(...args, filter.limit ?? -1, filter.offset ?? 0))
  }

  /** Ids of the tasks that use a sample, ascending. */
  idsOfSample(sampleId: number): number[] {
    return this.db.prepare<[number], number>('SELECT id FROM tasks WHERE sample_id = ? ORDER BY id').pluck().all(sampleId)
  }

  /** The route a run took (Cuckoo shows it once the analysis starts). */
  setRoute(id: number, route: string): void {
    this.db.prepare('UPDATE tasks SET route = ? WHERE id = ?').run(route, id)
  }

  delete(id: number): boolean {
    return this.deleteStmt.run(id).changes === 1
  }

  counts(): StatusCounts {
    return this.countsStmt.get() as StatusCounts
  }

  /**
   * Reschedule: the old task becomes `recovered` and a pending copy is queued, at once. A task
   * rescheduled already stays `recovered` and gets one more copy, as each reschedule makes one in
   * Cuckoo 2.0.7. Undefined when there is no such task; IllegalTransition (nothing written) when
   * its status cannot become `recovered` (it is running).
   */
  reschedule(id: number, copy: NewTask): number | undefined {
    return this.db.transaction(() => {
      const from = this.moves.status(id)
      if (from === undefined) return undefined
      if (from !== 'recovered' && !this.moves.move(id, from, 'recovered')) return undefined
      return this.insert(copy)
    })()
  }

  /** reported → completed, so processing and reporting run again; false for any other status. */
  rereport(id: number): boolean {
    return this.moves.move(id, 'reported', 'completed', { completed: true })
  }

  /**
   * Deletes the row unless the task is running or being processed; says which happened. Once the
   * row is gone the processor cannot claim the task, so nothing writes into its folder after.
   */
  deleteUnlessBusy(id: number): 'deleted' | 'running' | 'processing' | 'missing' {
    return this.db.transaction(() => {
      const status = this.moves.status(id)
      if (status === undefined) return 'missing'
      if (status === 'running') return 'running'
      if (this.claims.isHeld(id)) return 'processing'
      this.delete(id)
      return 'deleted'
    })()
  }

  /** Resolves when no processing of the task is under way (at once if none is). */
  processed(id: number): Promise<void> {
    return this.claims.released(id)
  }
}
