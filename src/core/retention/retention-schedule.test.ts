// The rules file and the schedule: rules checked with the field named, retention.json written and
// read back (and a hand-broken one refused with nothing deleted), and the schedule driven by a
// clock the test moves (no sleeping through an hour): off by default, first run one interval
// after it is turned on, then one per interval, only the enabled rules.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createLayout, type StorageLayout } from '../storage/layout'
import { openDatabase, type Db } from '../db/database'
import { TasksRepository } from '../db/tasks.repository'
import { TasksService } from '../tasks/tasks.service'
import { formatDatetime } from '../../shared/time'
import { ApiError } from '../errors'
import { RetentionService } from './retention.service'
import { RetentionSchedule } from './retention-schedule'
import { RULES_FILE } from './retention-rules'

const MIN = 60_000
let dir: string
let layout: StorageLayout
let db: Db
let repo: TasksRepository
let clock: number
let retention: RetentionService

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-retention-schedule-'))
  layout = createLayout(dir)
  layout.ensure()
  db = openDatabase(layout.database)
  repo = new TasksRepository(db)
  clock = new Date(2026, 10, 20, 12, 0, 0).getTime()
  retention = new RetentionService({ db, layout, tasks: new TasksService(repo, layout), now: () => clock })
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A reported task finished `days` before the clock, with an analysis folder. */
function oldTask(days: number, tags: string[] = []): number {
  const id = repo.insert({
    category: 'url', target: 'http://example.com/', sample_id: null, package: null, timeout: 0, priority: 1, options: null,
    machine: null, platform: null, tags, custom: null, owner: '', memory: false, enforce_timeout: false, clock: null, submit_id: null, errors: []
  })
  const when = formatDatetime(new Date(clock - days * 86_400_000))
  db.prepare("UPDATE tasks SET status = 'reported', added_on = ?, completed_on = ? WHERE id = ?").run(when, when, id)
  mkdirSync(layout.analysis(id), { recursive: true })
  writeFileSync(path.join(layout.analysis(id), 'analysis.log'), 'x')
  return id
}

const refusal = (fn: () => unknown): { status: number; message: string } => {
  try {
    fn()
  } catch (err) {
    if (err instanceof ApiError) return { status: err.statusCode, message: err.message }
    throw err
  }
  throw new Error('not refused')
}

describe('retention rules', () => {
  it('names the field at fault', () => {
    const r = retention.rules
    expect(refusal(() => r.add({ name: 'x' }))).toEqual({ status: 400, message: expect.stringMatching(/^rule: give at least one condition/) })
    expect(refusal(() => r.add({ name: '', older_than_days: 1 })).message).toBe('name: text of 1 to 100 characters')
    expect(refusal(() => r.add({ name: 'x', statuses: ['running'] })).message).toMatch(/^statuses\.0: a list of distinct statuses among reported, .*never deleted/)
    expect(refusal(() => r.add({ name: 'x', older_than_days: -1 })).message).toMatch(/^older_than_days: a number of days/)
    expect(refusal(() => r.add({ name: 'x', score_below: 2, score_above: 5 })).message).toMatch(/^score_below: must be above score_above/)
    expect(refusal(() => r.add({ name: 'x', free_until_gb: 0 })).message).toBe('free_until_gb: a number of GiB above 0')
    expect(refusal(() => r.replace(42, { name: 'x', older_than_days: 1 }))).toEqual({ status: 404, message: 'Retention rule 42 not found' })
    expect(existsSync(path.join(dir, RULES_FILE))).toBe(false) // nothing written by a refusal
  })

  it('keeps rules in retention.json with their defaults, ids never reused', () => {
    const a = retention.rules.add({ name: 'a', older_than_days: 30, score_below: 2 })
    expect(a).toEqual({ id: 1, name: 'a', enabled: true, age_of: 'completed', keep_samples: true, older_than_days: 30, score_below: 2 })
    retention.rules.remove(a.id)
    const b = retention.rules.add({ name: 'b', tags: ['t'], enabled: false })
    expect(b.id).toBe(2)
    const file = JSON.parse(readFileSync(path.join(dir, RULES_FILE), 'utf8')) as { rules: unknown[]; next_id: number }
    expect(file).toMatchObject({ next_id: 3, rules: [b], schedule: { enabled: false, interval_minutes: 60 } })
  })

  it('refuses to run on a hand-broken retention.json, saying what to fix, and deletes nothing', async () => {
    const id = oldTask(40)
    writeFileSync(path.join(dir, RULES_FILE), JSON.stringify({ schedule: { enabled: true, interval_minutes: 60, enabled_at: 0 }, next_id: 2, rules: [{ id: 1, name: 'r', enabled: true, age_of: 'completed', keep_samples: true, older_than_days: 'thirty' }] }))
    await expect(retention.run({}, 'api')).rejects.toThrow(/^retention\.json in the data directory rules\.0\.older_than_days: a number of days from 0 to 36500; fix or remove it/)
    const schedule = new RetentionSchedule(retention, { now: () => clock, log: { warn: () => undefined } })
    clock += 2 * 60 * MIN
    await schedule.tick()
    expect(repo.get(id)).toBeDefined()
    writeFileSync(path.join(dir, RULES_FILE), '{"schedule":')
    expect(refusal(() => retention.settings()).message).toMatch(/^retention\.json in the data directory is not JSON/)
  })
})

describe('the retention schedule', () => {
  it('is off by default; turned on, runs the enabled rules once per interval from then', async () => {
    const schedule = new RetentionSchedule(retention, { now: () => clock })
    const first = oldTask(40)
    const tagged = oldTask(40, ['lab'])
    retention.rules.add({ name: 'old', older_than_days: 30 })
    retention.rules.add({ name: 'lab, disabled', tags: ['lab'], enabled: false, statuses: ['reported'] })
    // Tasks a disabled rule alone would take stay; `tagged` is old too, so "old" takes it.
    clock += 24 * 60 * MIN
    await schedule.tick()
    expect(repo.get(first)).toBeDefined() // off: nothing ran
    expect(retention.settings().schedule).toEqual({ enabled: false, interval_minutes: 60, next_run_at: null, last_run_at: null })

    retention.setSchedule({ enabled: true, interval_minutes: 30 })
    const on = clock
    expect(retention.settings().schedule.next_run_at).toBe(new Date(on + 30 * MIN).toISOString())
    clock += 29 * MIN
    await schedule.tick()
    expect(repo.get(first)).toBeDefined() // not yet due
    clock += MIN
    await schedule.tick()
    expect(repo.get(first)).toBeUndefined()
    expect(repo.get(tagged)).toBeUndefined()
    const [run] = retention.history.recent(1)
    expect(run).toMatchObject({ trigger: 'schedule', rules: [1], started_at: new Date(on + 30 * MIN).toISOString() })
    expect(retention.settings().schedule.last_run_at).toBe(run!.started_at)

    // The next run is one interval after that one, not sooner.
    const later = oldTask(40)
    clock += 10 * MIN
    await schedule.tick()
    expect(repo.get(later)).toBeDefined()
    clock += 20 * MIN
    await schedule.tick()
    expect(repo.get(later)).toBeUndefined()
    expect(retention.history.recent(10).map((r) => r.trigger)).toEqual(['schedule', 'schedule'])

    // Turned off, it stops.
    retention.setSchedule({ enabled: false })
    const last = oldTask(40)
    clock += 120 * MIN
    await schedule.tick()
    expect(repo.get(last)).toBeDefined()
  })

  it('looks on its own timer', async () => {
    const id = oldTask(40)
    retention.rules.add({ name: 'old', older_than_days: 30 })
    retention.setSchedule({ enabled: true, interval_minutes: 1 })
    clock += 2 * MIN
    const schedule = new RetentionSchedule(retention, { now: () => clock, checkMs: 5 })
    schedule.start()
    for (let i = 0; i < 400 && repo.get(id); i++) await new Promise((r) => setTimeout(r, 5))
    await schedule.stop()
    expect(repo.get(id)).toBeUndefined()
  })
})
