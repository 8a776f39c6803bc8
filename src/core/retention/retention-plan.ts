// What a set of rules would delete now: the dry run. The preview shows this plan, and a run
// computes it again at its start and deletes exactly what it lists (retention.service.ts).
//
// A rule selects tasks in a final status (RETENTION_STATUSES: never pending, running or completed,
// so never a task that runs or waits for, or is in, processing) that meet every condition it
// has: age, status, score, tags (any of), analysis folder size; "free until N GiB" then takes the
// largest of those first until the analyses' disk would have N GiB free. Several rules: the union,
// each task once with the rules that chose it.
//
// keep_samples: a stored sample (storage/binaries/<sha256> and its names under uploads/) goes
// only when every task that uses it is deleted by this plan and no rule that chose those tasks
// keeps samples. The sample's row (its hashes, /files/view) stays; its bytes go.
import type { Db } from '../db/database'
import type { StorageLayout } from '../storage/layout'
import type { DiskSpace } from '../../shared/disk-space'
import { formatDatetime, parseDatetime } from '../../shared/time'
import { RETENTION_STATUSES, type PlannedSample, type PlannedTask, type Preview, type Rule } from '../../shared/api/retention'
import { diskUsage } from './disk-usage'
import { ARTIFACTS } from '../storage/layout'

export interface PlanDeps {
  db: Db
  layout: StorageLayout
  /** The analyses' file system (shared/disk-space.ts; a test gives its own). */
  diskSpace(dir: string): Promise<DiskSpace | null>
  /** Whether processing holds the task now (db/processing-claims.ts). */
  isProcessing(id: number): boolean
}

export interface Plan extends Preview {
  /** Per task: whether a rule that chose it keeps samples. */
  keeps: Map<number, boolean>
}

interface Row {
  id: number
  category: string
  target: string
  status: string
  score: number | null
  added_on: string
  completed_on: string | null
  sample_id: number | null
}

const GIB = 1024 ** 3
const MIB = 1024 ** 2
const DAY_MS = 86_400_000

/** What the API shows as a task's target: the file name or the URL, never the server's path. */
export function shownTarget(category: string, target: string): string {
  return category === 'url' ? target : target.slice(target.lastIndexOf('/') + 1)
}

export async function planRetention(deps: PlanDeps, rules: readonly Rule[], now: Date): Promise<Plan> {
  const chosen = new Map<number, { row: Row; bytes: number; rules: number[]; keep: boolean }>()
  const sizes = new Map<number, number>()
  const recSizes = new Map<number, number>()
  const recordingsOnly = new Map<number, { row: Row; bytes: number }>()
  const disk = await deps.diskSpace(deps.layout.analysesRoot)
  for (const rule of rules) {
    let rows = candidates(deps.db, rule, now).filter((r) => !deps.isProcessing(r.id))
    for (const r of rows) {
      if (!sizes.has(r.id)) sizes.set(r.id, (await diskUsage([deps.layout.analysis(r.id)])).bytes)
      if (!recSizes.has(r.id)) recSizes.set(r.id, (await diskUsage([deps.layout.artifact(r.id, ARTIFACTS.console)])).bytes)
    }
    if (rule.larger_than_mb !== undefined) rows = rows.filter((r) => sizes.get(r.id)! > rule.larger_than_mb! * MIB)
    if (rule.free_until_gb !== undefined) {
      const f = recordingsFirst(rows, sizes, recSizes, disk?.free ?? null, rule.free_until_gb * GIB)
      for (const row of f.recordings) recordingsOnly.set(row.id, { row, bytes: recSizes.get(row.id)! })
      rows = f.tasks
    }
    for (const row of rows) {
      const entry = chosen.get(row.id) ?? { row, bytes: sizes.get(row.id)!, rules: [], keep: false }
      entry.rules.push(rule.id)
      entry.keep ||= rule.keep_samples
      chosen.set(row.id, entry)
    }
  }
  const ordered = [...chosen.values()].sort((a, b) => a.row.id - b.row.id)
  // A task deleted whole takes its recordings with it.
  for (const id of chosen.keys()) recordingsOnly.delete(id)
  const recordings = [...recordingsOnly.values()].sort((a, b) => a.row.id - b.row.id)
    .map(({ row, bytes }) => ({ id: row.id, target: shownTarget(row.category, row.target), bytes }))
  const tasks: PlannedTask[] = ordered.map(({ row, bytes, rules: ids }) => ({
    id: row.id,
    target: shownTarget(row.category, row.target),
    category: row.category,
    status: row.status,
    score: row.score,
    added_on: row.added_on,
    completed_on: row.completed_on,
    age_days: ageDays(row.completed_on ?? row.added_on, now),
    bytes,
    recording_bytes: recSizes.get(row.id) ?? 0,
    sample_id: row.sample_id,
    rules: ids
  }))
  const samples = await samplesGoing(deps, ordered.map((e) => ({ id: e.row.id, sample: e.row.sample_id, keep: e.keep })))
  return {
    generated_at: now.toISOString(),
    rules: rules.map((r) => r.id),
    tasks,
    samples,
    recordings,
    total: {
      tasks: tasks.length, bytes: sum(tasks.map((t) => t.bytes)), sample_bytes: sum(samples.map((s) => s.bytes)),
      recording_bytes: sum(recordings.map((r) => r.bytes))
    },
    disk: disk ? { free: disk.free, total: disk.total } : null,
    keeps: new Map(ordered.map((e) => [e.row.id, e.keep]))
  }
}

/** One rule's tasks by the conditions SQL can answer (status, age, score, tags), by id. */
function candidates(db: Db, rule: Rule, now: Date): Row[] {
  const where = ['status IN (SELECT value FROM json_each(@statuses))']
  const args: Record<string, string | number> = { statuses: JSON.stringify(rule.statuses ?? RETENTION_STATUSES) }
  if (rule.older_than_days !== undefined) {
    // Stored times are local `YYYY-MM-DD HH:MM:SS`, which compare as text.
    where.push(`${rule.age_of === 'added' ? 'added_on' : 'coalesce(completed_on, added_on)'} < @cutoff`)
    args.cutoff = formatDatetime(new Date(now.getTime() - rule.older_than_days * DAY_MS))
  }
  if (rule.score_below !== undefined) { where.push('score < @below'); args.below = rule.score_below }
  if (rule.score_above !== undefined) { where.push('score > @above'); args.above = rule.score_above }
  if (rule.tags !== undefined) {
    where.push(`EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid(tasks.tags) THEN tasks.tags ELSE '[]' END) t
      WHERE t.value IN (SELECT value FROM json_each(@tags)))`)
    args.tags = JSON.stringify(rule.tags)
  }
  return db.prepare<[Record<string, string | number>], Row>(
    `SELECT id, category, target, status, score, added_on, completed_on, sample_id FROM tasks WHERE ${where.join(' AND ')} ORDER BY id`
  ).all(args)
}

/**
 * Freeing space, console recordings go first (they are the largest part of an analysis an analyst
 * can most easily do without: the report, the capture and the screenshots stay): the largest
 * recordings until enough is free; if all of them are not enough, the tasks too, the largest
 * first, each counted for what is left of it.
 */
function recordingsFirst(rows: Row[], sizes: Map<number, number>, recSizes: Map<number, number>, free: number | null, wanted: number): { recordings: Row[]; tasks: Row[] } {
  if (free === null || free >= wanted) return { recordings: [], tasks: [] }
  const recordings: Row[] = []
  let freed = 0
  for (const row of rows.filter((r) => recSizes.get(r.id)! > 0).sort((a, b) => recSizes.get(b.id)! - recSizes.get(a.id)! || a.id - b.id)) {
    if (free + freed >= wanted) break
    recordings.push(row)
    freed += recSizes.get(row.id)!
  }
  if (free + freed >= wanted) return { recordings, tasks: [] }
  const rest = new Map(rows.map((r) => [r.id, sizes.get(r.id)! - recSizes.get(r.id)!]))
  return { recordings, tasks: largestUntilFree(rows, rest, free + freed, wanted) }
}

/** The largest first, until what is free plus what they free reaches `wanted`. */
function largestUntilFree(rows: Row[], sizes: Map<number, number>, free: number | null, wanted: number): Row[] {
  // Without a free-space figure there is no way to know when to stop: nothing is chosen.
  if (free === null || free >= wanted) return []
  const out: Row[] = []
  let freed = 0
  for (const row of [...rows].sort((a, b) => sizes.get(b.id)! - sizes.get(a.id)! || a.id - b.id)) {
    if (free + freed >= wanted) break
    out.push(row)
    freed += sizes.get(row.id)!
  }
  return out
}

/** The samples whose every task goes and that no choosing rule keeps. */
async function samplesGoing(deps: PlanDeps, going: { id: number; sample: number | null; keep: boolean }[]): Promise<PlannedSample[]> {
  const bySample = new Map<number, { count: number; keep: boolean }>()
  for (const t of going) {
    if (t.sample === null) continue
    const s = bySample.get(t.sample) ?? { count: 0, keep: false }
    s.count++
    s.keep ||= t.keep
    bySample.set(t.sample, s)
  }
  const users = deps.db.prepare<[number], number>('SELECT count(*) FROM tasks WHERE sample_id = ?').pluck()
  const sha = deps.db.prepare<[number], string>('SELECT sha256 FROM samples WHERE id = ?').pluck()
  const out: PlannedSample[] = []
  for (const [id, s] of [...bySample].sort((a, b) => a[0] - b[0])) {
    if (s.keep || users.get(id) !== s.count) continue
    const sha256 = sha.get(id)
    if (sha256 === undefined || !/^[0-9a-f]{64}$/.test(sha256)) continue
    const { bytes } = await diskUsage(samplePaths(deps.layout, sha256))
    out.push({ id, sha256, bytes })
  }
  return out
}

/** What a stored sample is on disk: its binary and the folder of its submitted names. */
export function samplePaths(layout: StorageLayout, sha256: string): string[] {
  return [layout.binary(sha256), layout.uploadDir(sha256)]
}

function ageDays(stamp: string, now: Date): number {
  const then = parseDatetime(stamp)
  if (!then) return 0
  return Math.max(0, Math.round(((now.getTime() - then.getTime()) / DAY_MS) * 100) / 100)
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0)
