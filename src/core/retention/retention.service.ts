// Retention: the rules (retention-rules.ts), their dry run (retention-plan.ts) and the run that
// deletes what the dry run lists. The API, the schedule and `aviary retention` all come here.
//
// A run computes the plan again at its start (what the preview would list at that moment) and,
// when given the ids a preview showed, keeps only those. It then deletes the tasks one by one
// through TasksService.delete, the code path of /tasks/delete. Just before each delete the task's
// status is read again: a task that became pending, running or completed meanwhile (a reschedule,
// a rereport), or that processing holds, is skipped with the reason. The check and the delete's
// own check-and-delete (TasksRepository.deleteUnlessBusy) run in the same turn of the event loop,
// so nothing in the service can change the task between them. Runs never overlap: a second waits
// for the first, then plans again. Every run is recorded (retention-log.ts).
import { rm } from 'node:fs/promises'
import type { Db } from '../db/database'
import { ARTIFACTS, type StorageLayout } from '../storage/layout'
import type { TasksService } from '../tasks/tasks.service'
import { ApiError } from '../errors'
import { TaskMoves } from '../db/task-moves'
import { ProcessingClaims } from '../db/processing-claims'
import { diskSpace as realDiskSpace, type DiskSpace } from '../../shared/disk-space'
import {
  RETENTION_STATUSES, type Preview, type Rule, type RunBody, type RunRecord, type RetentionSettings
} from '../../shared/api/retention'
import { RuleStore, checkRule, toRule } from './retention-rules'
import { RetentionLog } from './retention-log'
import { planRetention, samplePaths, type Plan } from './retention-plan'

export interface RetentionDeps {
  db: Db
  layout: StorageLayout
  /** The service's task deletion (the same instance the API's /tasks/delete uses). */
  tasks: TasksService
  log?: { info(msg: string): void; warn(msg: string): void }
  /** Free space of a folder's file system; a test gives a figure the test machine cannot have. */
  diskSpace?: (dir: string) => Promise<DiskSpace | null>
  /** Epoch ms now; tests move it. */
  now?: () => number
}

export type Trigger = RunRecord['trigger']

const FINAL = new Set<string>(RETENTION_STATUSES)

export class RetentionService {
  readonly rules: RuleStore
  readonly history: RetentionLog
  private readonly moves: TaskMoves
  private readonly claims: ProcessingClaims
  private readonly now: () => number
  private readonly diskSpace: (dir: string) => Promise<DiskSpace | null>
  private queue: Promise<unknown> = Promise.resolve()
  private stopping = false
  /** Start of the last scheduled run (epoch ms), read from the log once, then kept here. */
  private lastScheduled: number | null | undefined

  constructor(private readonly d: RetentionDeps) {
    this.rules = new RuleStore(d.layout.root)
    this.history = new RetentionLog(d.layout.root)
    this.moves = TaskMoves.of(d.db)
    this.claims = ProcessingClaims.of(d.db)
    this.now = d.now ?? Date.now
    this.diskSpace = d.diskSpace ?? realDiskSpace
  }

  /** The rules and the schedule, with its next and last run. */
  settings(): RetentionSettings {
    const file = this.rules.read()
    const s = file.schedule
    const last = this.lastScheduledStart()
    const next = this.nextScheduledRun()
    return {
      schedule: {
        enabled: s.enabled,
        interval_minutes: s.interval_minutes,
        next_run_at: next === null ? null : new Date(next).toISOString(),
        last_run_at: last === null ? null : new Date(last).toISOString()
      },
      rules: file.rules
    }
  }

  /** Epoch ms of the next scheduled run (one interval after the last, or after it was turned on); null when off. */
  nextScheduledRun(): number | null {
    const s = this.rules.read().schedule
    if (!s.enabled) return null
    const from = Math.max(this.lastScheduledStart() ?? 0, s.enabled_at ?? 0)
    return from + s.interval_minutes * 60_000
  }

  private lastScheduledStart(): number | null {
    if (this.lastScheduled === undefined) this.lastScheduled = this.history.lastStart('schedule')
    return this.lastScheduled
  }

  setSchedule(input: unknown): RetentionSettings {
    this.rules.setSchedule(input, this.now())
    return this.settings()
  }

  /** What would go: one saved rule, a draft not saved, or (neither) every enabled rule. */
  async preview(which: { rule?: number | undefined; draft?: unknown } = {}): Promise<Preview> {
    const { keeps: _keeps, ...preview } = await this.plan(this.select(which))
    return preview
  }

  /** Deletes what the preview lists now (only `tasks` of it, when given); waits for a run under way. */
  run(body: RunBody, trigger: Trigger): Promise<RunRecord> {
    // The rules are read when the run begins, after any run before it.
    const next = this.queue.then(() => this.runNow(this.select({ rule: body.rule }), body.tasks, trigger))
    this.queue = next.catch(() => undefined)
    return next
  }

  /** Ends after the run under way (its remaining tasks are skipped); no run starts after this. */
  async stop(): Promise<void> {
    this.stopping = true
    await this.queue
  }

  private select(which: { rule?: number | undefined; draft?: unknown }): Rule[] {
    // A draft is shown as rule 0: it is not saved.
    if (which.draft !== undefined) return [toRule(0, checkRule(which.draft))]
    if (which.rule !== undefined) return [this.rules.rule(which.rule)]
    return this.rules.read().rules.filter((r) => r.enabled)
  }

  private plan(rules: Rule[]): Promise<Plan> {
    return planRetention({
      db: this.d.db, layout: this.d.layout, diskSpace: this.diskSpace, isProcessing: (id) => this.claims.isHeld(id)
    }, rules, new Date(this.now()))
  }

  private async runNow(rules: Rule[], only: number[] | undefined, trigger: Trigger): Promise<RunRecord> {
    const started = new Date(this.now())
    const before = await this.diskSpace(this.d.layout.analysesRoot)
    const plan = await this.plan(rules)
    const record: RunRecord = {
      started_at: started.toISOString(), finished_at: '', trigger, rules: plan.rules,
      deleted: [], skipped: [], samples: [], recordings: [], freed_bytes: 0, disk_free_before: before?.free ?? null, disk_free_after: null
    }
    const wanted = only === undefined ? null : new Set(only)
    if (wanted) {
      const planned = new Set([...plan.tasks.map((t) => t.id), ...plan.recordings.map((r) => r.id)])
      for (const id of [...wanted].sort((a, b) => a - b)) if (!planned.has(id)) record.skipped.push({ id, reason: this.whyNot(id) })
    }
    // Recordings first (a free_until_gb rule plans them before any task).
    for (const r of plan.recordings) {
      if (wanted && !wanted.has(r.id)) continue
      const busy = this.busy(r.id)
      if (busy !== null || this.stopping) continue
      try {
        await rm(this.d.layout.artifact(r.id, ARTIFACTS.console), { recursive: true, force: true, maxRetries: 3 })
        record.recordings!.push(r)
      } catch (err) {
        this.d.log?.warn(`retention: the console recordings of task ${r.id} could not be removed (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
      }
    }
    const gone = new Set<number>()
    for (const t of plan.tasks) {
      if (wanted && !wanted.has(t.id)) continue
      if (this.stopping) { record.skipped.push({ id: t.id, reason: 'the service stopped before its turn' }); continue }
      const busy = this.busy(t.id)
      if (busy !== null) { record.skipped.push({ id: t.id, reason: busy }); continue }
      // No await between the check above and the delete's own check (see the header).
      const deleting = this.d.tasks.delete(t.id)
      try {
        await deleting
        record.deleted.push({ id: t.id, target: t.target, status: t.status, score: t.score, bytes: t.bytes })
        gone.add(t.id)
      } catch (err) {
        if (this.moves.status(t.id) === undefined && err instanceof ApiError && err.statusCode === 500) {
          // The row is gone but its folder could not be removed: deleted, with what is left over.
          record.deleted.push({ id: t.id, target: t.target, status: t.status, score: t.score, bytes: 0, warning: err.message })
          gone.add(t.id)
        } else {
          record.skipped.push({ id: t.id, reason: err instanceof ApiError ? err.message : 'the delete failed' })
        }
      }
    }
    await this.removeSamples(plan, gone, record)
    record.freed_bytes = record.deleted.reduce((a, t) => a + t.bytes, 0) + record.samples.reduce((a, s) => a + s.bytes, 0) +
      record.recordings!.reduce((a, r) => a + r.bytes, 0)
    record.disk_free_after = (await this.diskSpace(this.d.layout.analysesRoot))?.free ?? null
    record.finished_at = new Date(this.now()).toISOString()
    this.history.append(record)
    if (trigger === 'schedule') this.lastScheduled = started.getTime()
    this.d.log?.info(`retention (${trigger}): deleted ${record.deleted.length} tasks, ${record.samples.length} samples and the console recordings of ${record.recordings!.length} tasks, ` +
      `${record.freed_bytes} bytes freed, ${record.skipped.length} skipped`)
    return record
  }

  /**
   * The planned samples whose planned tasks all went, and that no task uses now (checked just
   * before their files go). A submission of the same bytes that is between storing them and
   * inserting its task at that very moment is not seen (docs/retention.md).
   */
  private async removeSamples(plan: Plan, gone: Set<number>, record: RunRecord): Promise<void> {
    const users = this.d.db.prepare<[number], number>('SELECT count(*) FROM tasks WHERE sample_id = ?').pluck()
    for (const s of plan.samples) {
      const mine = plan.tasks.filter((t) => t.sample_id === s.id)
      if (!mine.every((t) => gone.has(t.id)) || users.get(s.id) !== 0) continue
      try {
        for (const p of samplePaths(this.d.layout, s.sha256)) await rm(p, { recursive: true, force: true, maxRetries: 3 })
        record.samples.push(s)
      } catch (err) {
        this.d.log?.warn(`retention: sample ${s.sha256} could not be removed (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
      }
    }
  }

  /** Why a task may not be deleted now; null when it may. */
  private busy(id: number): string | null {
    const status = this.moves.status(id)
    if (status === undefined) return 'it was deleted meanwhile'
    if (!FINAL.has(status)) return `it is ${status} now`
    if (this.claims.isHeld(id)) return 'it is being processed'
    return null
  }

  /** Why a task the caller listed is not in the plan now. */
  private whyNot(id: number): string {
    return this.busy(id) ?? 'it no longer matches the rules'
  }
}
