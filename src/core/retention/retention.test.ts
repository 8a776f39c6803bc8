// Retention on a real data directory: a real SQLite file, real analysis folders and a real sample
// store on disk, tasks deleted through the real TasksService (the /tasks/delete path). What the
// preview lists is what the run deletes; tasks that run, wait or are processed are never touched;
// sizes are what `du` says; samples go only as "keep samples" says.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createLayout, type StorageLayout } from '../storage/layout'
import { openDatabase, type Db } from '../db/database'
import { TasksRepository, type NewTask } from '../db/tasks.repository'
import { SamplesRepository } from '../db/samples.repository'
import { ProcessingClaims } from '../db/processing-claims'
import { TasksService } from '../tasks/tasks.service'
import { formatDatetime } from '../../shared/time'
import type { DiskSpace } from '../../shared/disk-space'
import { RetentionService } from './retention.service'
import { diskUsage } from './disk-usage'

const DAY = 86_400_000
const KiB = 1024

let dir: string
let layout: StorageLayout
let db: Db
let repo: TasksRepository
let samples: SamplesRepository
let tasks: TasksService
let clock: number
let free: DiskSpace | null
let retention: RetentionService

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-retention-'))
  layout = createLayout(dir)
  layout.ensure()
  db = openDatabase(layout.database)
  repo = new TasksRepository(db)
  samples = new SamplesRepository(db)
  tasks = new TasksService(repo, layout)
  clock = Date.now()
  free = null
  retention = new RetentionService({
    db, layout, tasks, now: () => clock,
    // Only where a test sets a figure: the test machine's disk cannot be made to have N GiB free.
    diskSpace: async (d) => free ?? (await import('../../shared/disk-space')).diskSpace(d)
  })
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A stored sample: its binary and one hard-linked upload name, as SampleStore.commit leaves them. */
function storeSample(content: string, name: string): { id: number; sha256: string; target: string } {
  const sha256 = createHash('sha256').update(content).digest('hex')
  writeFileSync(layout.binary(sha256), content)
  mkdirSync(layout.uploadDir(sha256), { recursive: true })
  const target = layout.upload(sha256, name)
  if (!existsSync(target)) linkSync(layout.binary(sha256), target)
  const { sample } = samples.upsert({
    file_size: content.length, file_type: 'data', md5: createHash('md5').update(content).digest('hex'), crc32: '00000000',
    sha1: createHash('sha1').update(content).digest('hex'), sha256, sha512: createHash('sha512').update(content).digest('hex'), ssdeep: null
  })
  return { id: sample.id, sha256, target }
}

interface Made { status?: string; daysOld?: number; score?: number | null; tags?: string[]; kib?: number; sample?: { id: number; target: string; sha256: string } }

/** A task as its life left it: status, completion time, score, and an analysis folder of `kib`. */
function task(o: Made = {}): number {
  const base: NewTask = {
    category: o.sample ? 'file' : 'url', target: o.sample?.target ?? 'http://example.com/', sample_id: o.sample?.id ?? null,
    package: null, timeout: 0, priority: 1, options: null, machine: null, platform: null, tags: o.tags ?? [], custom: null,
    owner: '', memory: false, enforce_timeout: false, clock: null, submit_id: null, errors: []
  }
  const id = repo.insert(base)
  const when = formatDatetime(new Date(clock - (o.daysOld ?? 40) * DAY))
  db.prepare('UPDATE tasks SET status = ?, added_on = ?, started_on = ?, completed_on = ?, score = ? WHERE id = ?')
    .run(o.status ?? 'reported', when, when, when, o.score === undefined ? 1 : o.score, id)
  const folder = layout.analysis(id)
  mkdirSync(path.join(folder, 'reports'), { recursive: true })
  writeFileSync(path.join(folder, 'reports', 'report.json'), Buffer.alloc((o.kib ?? 8) * KiB, 0x61))
  if (o.sample) symlinkSync(layout.binary(o.sample.sha256), path.join(folder, 'binary'))
  return id
}

const statusOf = (id: number) => db.prepare<[number], string>('SELECT status FROM tasks WHERE id = ?').pluck().get(id)
const du = (...paths: string[]) => Number(execFileSync('du', ['-s', '-c', '-B1', ...paths], { encoding: 'utf8' }).trim().split('\n').pop()!.split('\t')[0])

describe('retention', () => {
  it('previews by age, status, score and tag, and the run deletes exactly that list through /tasks/delete\'s path', async () => {
    const old = task({ daysOld: 40, score: 1 })
    const oldHigh = task({ daysOld: 40, score: 6 })
    const young = task({ daysOld: 5, score: 0.5 })
    const oldFailed = task({ daysOld: 40, status: 'failed_analysis', score: null })
    const tagged = task({ daysOld: 40, score: 1.5, tags: ['x64', 'keep-short'] })
    const unscored = task({ daysOld: 40, score: null })
    // Old enough and low enough, but not finished: never listed.
    const pending = task({ daysOld: 90, status: 'pending', score: 0 })
    const running = task({ daysOld: 90, status: 'running', score: 0 })
    const completed = task({ daysOld: 90, status: 'completed', score: 0 })
    const rule = retention.rules.add({ name: 'old and harmless', older_than_days: 30, score_below: 2 })

    const preview = await retention.preview({ rule: rule.id })
    expect(preview.tasks.map((t) => t.id)).toEqual([old, tagged])
    expect(preview.tasks[0]).toMatchObject({ id: old, target: 'http://example.com/', status: 'reported', score: 1, rules: [rule.id] })
    expect(preview.tasks[0]!.age_days).toBeCloseTo(40, 1)
    expect(preview.total.tasks).toBe(2)
    expect(preview.total.bytes).toBe(du(layout.analysis(old), layout.analysis(tagged)))
    expect(preview.samples).toEqual([])

    const byTag = await retention.preview({ draft: { name: 'draft', tags: ['keep-short'] } })
    expect(byTag.tasks.map((t) => t.id)).toEqual([tagged])
    const failed = await retention.preview({ draft: { name: 'draft', statuses: ['failed_analysis'] } })
    expect(failed.tasks.map((t) => t.id)).toEqual([oldFailed])
    const above = await retention.preview({ draft: { name: 'draft', score_above: 5 } })
    expect(above.tasks.map((t) => t.id)).toEqual([oldHigh])
    const everythingOld = await retention.preview({ draft: { name: 'draft', older_than_days: 30 } })
    expect(everythingOld.tasks.map((t) => t.id)).toEqual([old, oldHigh, oldFailed, tagged, unscored])

    const run = await retention.run({ rule: rule.id }, 'api')
    expect(run.deleted.map((t) => t.id)).toEqual(preview.tasks.map((t) => t.id))
    expect(run.skipped).toEqual([])
    expect(run.freed_bytes).toBe(preview.total.bytes)
    for (const id of [old, tagged]) {
      expect(repo.get(id)).toBeUndefined()
      expect(existsSync(layout.analysis(id))).toBe(false)
      expect(repo.viewBody(id)).toBeUndefined() // nor does the API's view
    }
    for (const id of [oldHigh, young, oldFailed, unscored, pending, running, completed]) {
      expect(repo.get(id)).toBeDefined()
      expect(existsSync(layout.analysis(id))).toBe(true)
    }
    expect(statusOf(running)).toBe('running')
    // The record is on disk, newest first.
    const [logged] = retention.history.recent(5)
    expect(logged).toMatchObject({ trigger: 'api', rules: [rule.id], freed_bytes: preview.total.bytes })
    expect(logged!.deleted.map((t) => t.id)).toEqual([old, tagged])
  })

  it('skips, with the reason, a listed task that was rereported, is processed, or runs by the time its turn comes', async () => {
    const a = task({ score: 1 })
    const b = task({ score: 1 })
    const c = task({ score: 1 })
    const d = task({ score: 1 })
    const rule = retention.rules.add({ name: 'all old', older_than_days: 30 })
    const preview = await retention.preview({ rule: rule.id })
    expect(preview.tasks.map((t) => t.id)).toEqual([a, b, c, d])

    // After the preview: b is re-reported and its processing starts; c is rereported (waits for
    // processing); d is deleted by someone else.
    expect(repo.rereport(b)).toBe(true)
    expect(ProcessingClaims.of(db).claim(b, 'test')).toBe(true)
    expect(repo.rereport(c)).toBe(true)
    await tasks.delete(d)

    const run = await retention.run({ rule: rule.id, tasks: preview.tasks.map((t) => t.id) }, 'api')
    expect(run.deleted.map((t) => t.id)).toEqual([a])
    expect(run.skipped).toEqual([
      { id: b, reason: 'it is completed now' },
      { id: c, reason: 'it is completed now' },
      { id: d, reason: 'it was deleted meanwhile' }
    ])
    expect(statusOf(b)).toBe('completed')
    expect(existsSync(layout.analysis(b))).toBe(true)
    ProcessingClaims.of(db).release(b)
  })

  it('reads each task\'s status again just before it goes: one re-reported during the run is left alone', async () => {
    const a = task()
    const b = task()
    const c = task()
    // The /tasks/delete path, with a rereport and its processing starting while the run is on a.
    class DuringTheRun extends TasksService {
      override async delete(id: number): Promise<void> {
        await super.delete(id)
        if (id === a) {
          expect(repo.rereport(b)).toBe(true)
          expect(ProcessingClaims.of(db).claim(b, 'test')).toBe(true)
        }
      }
    }
    const racing = new RetentionService({ db, layout, tasks: new DuringTheRun(repo, layout), now: () => clock })
    const rule = racing.rules.add({ name: 'old', older_than_days: 30 })
    const run = await racing.run({ rule: rule.id }, 'api')
    expect(run.deleted.map((t) => t.id)).toEqual([a, c])
    expect(run.skipped).toEqual([{ id: b, reason: 'it is completed now' }])
    expect(existsSync(layout.analysis(b))).toBe(true)
    ProcessingClaims.of(db).release(b)
  })

  it('deletes only what the preview showed, even when more matches by the time of the run', async () => {
    const a = task({ daysOld: 40 })
    const rule = retention.rules.add({ name: 'old', older_than_days: 30 })
    const shown = (await retention.preview({ rule: rule.id })).tasks.map((t) => t.id)
    const b = task({ daysOld: 40 }) // arrives after the preview
    const run = await retention.run({ rule: rule.id, tasks: shown }, 'api')
    expect(run.deleted.map((t) => t.id)).toEqual([a])
    expect(repo.get(b)).toBeDefined()
    // Without a list, a run deletes what the preview would list now.
    const again = await retention.run({ rule: rule.id }, 'cli')
    expect(again.deleted.map((t) => t.id)).toEqual([b])
  })

  it('measures folders as du does: blocks, hard links once, symbolic links not followed', async () => {
    const s = storeSample('x'.repeat(300 * KiB), 'big.bin')
    const id = task({ kib: 100, sample: s })
    const folder = layout.analysis(id)
    mkdirSync(path.join(folder, 'files', 'deep'), { recursive: true })
    writeFileSync(path.join(folder, 'files', 'deep', 'a'), Buffer.alloc(33 * KiB + 7))
    linkSync(path.join(folder, 'files', 'deep', 'a'), path.join(folder, 'files', 'a-again'))
    const usage = await diskUsage([folder])
    expect(usage).toEqual({ bytes: du(folder), complete: true })
    // The `binary` link into the sample store adds only itself, not the 300 KiB sample.
    expect(usage.bytes).toBeLessThan(300 * KiB)
    expect((await diskUsage([layout.binary(s.sha256), layout.uploadDir(s.sha256)])).bytes).toBe(du(layout.binary(s.sha256), layout.uploadDir(s.sha256)))
  })

  it('selects by folder size, and largest first until the disk would have N GiB free', async () => {
    const small = task({ kib: 16 })
    const mid = task({ kib: 200 })
    const big = task({ kib: 400 })
    const bigger = task({ kib: 800 })
    const large = await retention.preview({ draft: { name: 'large', larger_than_mb: 0.1 } })
    expect(large.tasks.map((t) => t.id)).toEqual([mid, big, bigger])

    const size = async (id: number) => (await diskUsage([layout.analysis(id)])).bytes
    // 1 GiB free; wanted: 1 GiB plus a bit more than the largest folder: the two largest go.
    free = { free: 1024 ** 3, total: 10 * 1024 ** 3, used: 9 * 1024 ** 3 }
    const want = (1024 ** 3 + (await size(bigger)) + 1) / 1024 ** 3
    const plan = await retention.preview({ draft: { name: 'room', free_until_gb: want } })
    expect(plan.tasks.map((t) => t.id)).toEqual([big, bigger])
    expect(plan.disk).toEqual({ free: 1024 ** 3, total: 10 * 1024 ** 3 })
    // Already enough room: nothing.
    expect((await retention.preview({ draft: { name: 'room', free_until_gb: 0.5 } })).tasks).toEqual([])
    // Combined with another condition: only among the tasks that meet it.
    db.prepare('UPDATE tasks SET score = 9 WHERE id = ?').run(bigger)
    const lowOnly = await retention.preview({ draft: { name: 'room', free_until_gb: (1024 ** 3 + (await size(big)) + 1) / 1024 ** 3, score_below: 2 } })
    expect(lowOnly.tasks.map((t) => t.id)).toEqual([mid, big])
    // More than all of them free: all of them, and no more.
    const all = await retention.preview({ draft: { name: 'room', free_until_gb: 2, score_below: 2 } })
    expect(all.tasks.map((t) => t.id)).toEqual([small, mid, big])
  })

  it('counts console recordings, and frees space with them first: the tasks stay while recordings suffice', async () => {
    const rec = (id: number, kib: number) => {
      mkdirSync(path.join(layout.analysis(id), 'console'), { recursive: true })
      writeFileSync(path.join(layout.analysis(id), 'console', '0001.vncrec'), Buffer.alloc(kib * KiB, 0x62))
    }
    const a = task({ kib: 16 })
    const b = task({ kib: 600 })
    const c = task({ kib: 16 })
    rec(a, 300)
    rec(c, 100)
    const recSize = async (id: number) => (await diskUsage([path.join(layout.analysis(id), 'console')])).bytes
    const listed = await retention.preview({ draft: { name: 'old', older_than_days: 30 } })
    expect(listed.tasks.map((t) => [t.id, t.recording_bytes])).toEqual([[a, await recSize(a)], [b, 0], [c, await recSize(c)]])
    expect(listed.recordings).toEqual([])

    // Room for a bit more than the largest recording: that recording alone goes, no task.
    free = { free: 1024 ** 3, total: 10 * 1024 ** 3, used: 9 * 1024 ** 3 }
    const want = (1024 ** 3 + (await recSize(a)) + 1) / 1024 ** 3
    const plan = await retention.preview({ draft: { name: 'room', free_until_gb: want } })
    expect(plan.tasks).toEqual([])
    expect(plan.recordings.map((r) => r.id)).toEqual([a, c])
    expect(plan.total.recording_bytes).toBe((await recSize(a)) + (await recSize(c)))
    const smaller = await retention.preview({ draft: { name: 'room', free_until_gb: (1024 ** 3 + (await recSize(a)) - 1) / 1024 ** 3 } })
    expect(smaller.recordings.map((r) => r.id)).toEqual([a])

    // More than every recording frees: the recordings, then the largest task for the rest.
    const more = await retention.preview({ draft: { name: 'room', free_until_gb: (1024 ** 3 + (await recSize(a)) + (await recSize(c)) + 100 * KiB) / 1024 ** 3 } })
    expect(more.tasks.map((t) => t.id)).toEqual([b])
    expect(more.recordings.map((r) => r.id)).toEqual([a, c])

    // The run: the recordings go, every task stays, and the record says what was freed.
    const rule = retention.rules.add({ name: 'room', free_until_gb: (1024 ** 3 + (await recSize(a)) + (await recSize(c)) - 1) / 1024 ** 3 })
    const bytes = (await recSize(a)) + (await recSize(c))
    const run = await retention.run({ rule: rule.id }, 'api')
    expect(run.deleted).toEqual([])
    expect(run.recordings!.map((r) => r.id)).toEqual([a, c])
    expect(run.freed_bytes).toBe(bytes)
    for (const id of [a, b, c]) expect(statusOf(id)).toBe('reported')
    expect(existsSync(path.join(layout.analysis(a), 'console'))).toBe(false)
    expect(existsSync(path.join(layout.analysis(a), 'reports', 'report.json'))).toBe(true)
  })

  it('keep samples: the stored sample stays; without it, it goes once no task uses it', async () => {
    const shared = storeSample('shared bytes', 'shared.exe')
    const alone = storeSample('alone bytes', 'alone.exe')
    const busy = storeSample('busy bytes', 'busy.exe')
    const s1 = task({ sample: shared })
    const s2 = task({ sample: shared, daysOld: 2 }) // too young: it keeps `shared` in use
    const a1 = task({ sample: alone })
    const b1 = task({ sample: busy })
    task({ sample: busy, status: 'pending' }) // a pending task uses `busy`
    const kept = retention.rules.add({ name: 'keep', older_than_days: 30 })
    const keepPreview = await retention.preview({ rule: kept.id })
    expect(keepPreview.tasks.map((t) => t.id)).toEqual([s1, a1, b1])
    expect(keepPreview.samples).toEqual([])

    const drop = retention.rules.replace(kept.id, { name: 'drop samples', older_than_days: 30, keep_samples: false })
    const preview = await retention.preview({ rule: drop.id })
    expect(preview.samples).toEqual([{ id: alone.id, sha256: alone.sha256, bytes: du(layout.binary(alone.sha256), layout.uploadDir(alone.sha256)) }])
    expect(preview.total.sample_bytes).toBe(preview.samples[0]!.bytes)
    const run = await retention.run({ rule: drop.id }, 'api')
    expect(run.samples.map((s) => s.sha256)).toEqual([alone.sha256])
    expect(run.freed_bytes).toBe(preview.total.bytes + preview.total.sample_bytes)
    expect(existsSync(layout.binary(alone.sha256))).toBe(false)
    expect(existsSync(layout.uploadDir(alone.sha256))).toBe(false)
    expect(samples.get(alone.id)).toBeDefined() // its hashes stay known
    for (const s of [shared, busy]) {
      expect(existsSync(layout.binary(s.sha256))).toBe(true)
      expect(existsSync(s.target)).toBe(true)
    }
    expect(repo.get(s2)).toBeDefined()

    // Once the last task of `shared` goes too, a rule without keep samples removes it.
    const everything = retention.rules.add({ name: 'all', statuses: ['reported'], keep_samples: false })
    const last = await retention.run({ rule: everything.id }, 'api')
    expect(last.deleted.map((t) => t.id)).toEqual([s2])
    expect(last.samples.map((s) => s.sha256)).toEqual([shared.sha256])
    expect(existsSync(layout.binary(busy.sha256))).toBe(true)
  })

  it('keeps the sample when one of the rules that chose its tasks keeps samples', async () => {
    const s = storeSample('two rules', 'two.exe')
    task({ sample: s, score: 1 })
    retention.rules.add({ name: 'drop', older_than_days: 30, keep_samples: false })
    retention.rules.add({ name: 'keep', score_below: 2 })
    const preview = await retention.preview()
    expect(preview.tasks[0]!.rules).toEqual([1, 2])
    expect(preview.samples).toEqual([])
  })

  it('runs one at a time: a second run waits, plans again and finds nothing left', async () => {
    for (let i = 0; i < 5; i++) task()
    const rule = retention.rules.add({ name: 'old', older_than_days: 30 })
    const [first, second] = await Promise.all([retention.run({ rule: rule.id }, 'api'), retention.run({ rule: rule.id }, 'api')])
    expect(first.deleted).toHaveLength(5)
    expect(second.deleted).toEqual([])
    expect(second.skipped).toEqual([])
  })
})
