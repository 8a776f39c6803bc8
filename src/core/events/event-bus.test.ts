// The event bus on a real database file: an event for every kind of write, whichever repository
// or connection makes it; nothing for a change rolled back; nothing lost in a burst; the journal
// it reads stays small.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { openDatabase, type Db } from '../db/database'
import { TasksRepository, type NewTask } from '../db/tasks.repository'
import { QueueRepository } from '../db/queue.repository'
import { MachinesRepository } from '../db/machines.repository'
import { GuestsRepository } from '../db/guests.repository'
import { TimelineRepository } from '../db/timeline.repository'
import { SamplesRepository } from '../db/samples.repository'
import { TaskScores } from '../db/task-search'
import { parseFleetConfig } from '../machinery/machines-config'
import { EventBus } from './event-bus'

const task = (over: Partial<NewTask> = {}): NewTask => ({
  category: 'url', target: 'http://example.com/', sample_id: null, package: null, timeout: 0, priority: 1, options: null,
  machine: null, platform: null, tags: [], custom: null, owner: '', memory: false, enforce_timeout: false, clock: null,
  submit_id: null, errors: [], ...over
})
const turn = () => new Promise((r) => setImmediate(r))
const POLL_MS = 20

type Heard = { event: string; id: number; status?: string; body?: Record<string, unknown> }

let dir: string
let db: Db
let bus: EventBus
let heard: Heard[]
let tasks: TasksRepository
let machines: MachinesRepository

function listen(b: EventBus, into: Heard[]): void {
  b.on('task', (e) => {
    const body = JSON.parse(e.json) as Record<string, unknown>
    into.push({ event: 'task', id: e.id, status: body.status as string, body })
  })
  b.on('task.deleted', (e) => into.push({ event: 'task.deleted', id: e.id }))
  b.on('task.queued', (ids) => { for (const id of ids) into.push({ event: 'task.queued', id }) })
  b.on('stage', (e) => into.push({ event: 'stage', id: e.task_id, status: e.stage }))
  b.on('machine', (m) => into.push({ event: 'machine', id: m.id, status: m.locked ? 'locked' : 'free' }))
}

/** What was heard since the last call. */
async function take(): Promise<Heard[]> {
  await turn()
  return heard.splice(0)
}

/** Waits until `until` holds for what was heard since the last call (another connection's writes). */
async function takeUntil(until: (h: Heard[]) => boolean, ms = 5000): Promise<Heard[]> {
  const end = Date.now() + ms
  while (!until(heard) && Date.now() < end) await new Promise((r) => setTimeout(r, 5))
  return heard.splice(0)
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-bus-'))
  db = openDatabase(path.join(dir, 'aviary.db'))
  tasks = new TasksRepository(db)
  machines = new MachinesRepository(db)
  machines.sync(parseFleetConfig({ machines: [{ name: 'win1', ip: '10.0.0.10' }] }).machines)
  bus = new EventBus(db, machines, { pollMs: POLL_MS })
  heard = []
  listen(bus, heard)
})

afterEach(() => {
  bus.close()
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('event bus', () => {
  it('hears every kind of write this connection makes, through any repository', async () => {
    const queue = new QueueRepository(db)
    const guests = new GuestsRepository(db)
    const timeline = new TimelineRepository(db)
    const win1 = machines.findByName('win1')!

    const id = tasks.insert(task())
    expect(await take()).toEqual([
      { event: 'stage', id, status: 'queued' },
      { event: 'task', id, status: 'pending', body: expect.objectContaining({ id, target: 'http://example.com/' }) },
      { event: 'task.queued', id }
    ])
    // claim: the task and the machine in one transaction
    expect(queue.claim(id, win1.id, 'none')).toBe(true)
    expect(await take()).toEqual([
      { event: 'task', id, status: 'running', body: expect.anything() },
      { event: 'machine', id: win1.id, status: 'locked' }
    ])
    queue.addError(id, 'something broke')
    expect((await take()).map((h) => [h.event, h.body?.errors])).toEqual([['task', ['something broke']]])
    tasks.setRoute(id, 'internet')
    expect((await take()).map((h) => [h.event, h.body?.route])).toEqual([['task', 'internet']])
    const guest = guests.start(id, { id: win1.id, name: 'win1', label: 'win1', driver: 'kvm' })
    expect((await take()).map((h) => [h.event, (h.body?.guest as { id?: number }).id])).toEqual([['task', guest]])
    expect(timeline.add(id, 'started', 'up')).toBe(true)
    expect(await take()).toEqual([{ event: 'stage', id, status: 'started' }])
    new TaskScores(db).set(id, 7.5)
    expect((await take()).map((h) => h.event)).toEqual(['task'])
    // requeued (a run that could not start): queued again
    expect(queue.move(id, 'running', 'pending', { requeue: true })).toBe(true)
    expect((await take()).map((h) => [h.event, h.status])).toEqual([['task', 'pending'], ['task.queued', undefined]])
    machines.unlock(win1.id)
    expect(await take()).toEqual([{ event: 'machine', id: win1.id, status: 'free' }])
    // reschedule: the old task becomes recovered, its copy is queued
    const copy = tasks.reschedule(id, task())!
    expect((await take()).map((h) => [h.event, h.id, h.status])).toEqual([
      ['stage', copy, 'queued'], ['task', id, 'recovered'], ['task', copy, 'pending'], ['task.queued', copy, undefined]
    ])
    // a sample's row changes every task that shows it
    const { sample } = new SamplesRepository(db).upsert({
      file_size: 3, file_type: 'data', md5: 'a'.repeat(32), crc32: '00000000', sha1: 'b'.repeat(40), sha256: 'c'.repeat(64),
      sha512: 'd'.repeat(128), ssdeep: null
    })
    const withSample = [tasks.insert(task({ sample_id: sample.id })), tasks.insert(task({ sample_id: sample.id }))]
    await take()
    db.prepare(`UPDATE samples SET file_type = 'ASCII text' WHERE id = ?`).run(sample.id)
    expect((await take()).map((h) => [h.event, h.id, (h.body?.sample as { file_type?: string }).file_type]))
      .toEqual(withSample.map((t) => ['task', t, 'ASCII text']))
    expect(tasks.delete(copy)).toBe(true)
    expect(await take()).toEqual([{ event: 'task.deleted', id: copy }])
  })

  it('makes one event of several changes of a task in one turn, carrying the task as it is then', async () => {
    const id = tasks.insert(task())
    const queue = new QueueRepository(db)
    queue.addError(id, 'one')
    queue.addError(id, 'two')
    const tasksHeard = (await take()).filter((h) => h.event === 'task')
    expect(tasksHeard).toHaveLength(1)
    expect(tasksHeard[0]!.body?.errors).toEqual(['one', 'two'])
  })

  it('hears what another connection commits (a second process, a script)', async () => {
    const other = new Database(path.join(dir, 'aviary.db'))
    try {
      const insert = other.prepare(`INSERT INTO tasks (category, target, clock, added_on)
        VALUES ('url', 'http://other.example/', '2026-01-01 00:00:00', '2026-01-01 00:00:00')`)
      const id = Number(insert.run().lastInsertRowid)
      const created = await takeUntil((h) => h.some((e) => e.event === 'task.queued'))
      expect(created).toEqual([
        { event: 'stage', id, status: 'queued' },
        { event: 'task', id, status: 'pending', body: expect.objectContaining({ target: 'http://other.example/' }) },
        { event: 'task.queued', id }
      ])
      other.prepare(`UPDATE tasks SET errors = '["from a script"]' WHERE id = ?`).run(id)
      const updated = await takeUntil((h) => h.length > 0)
      expect(updated.map((h) => [h.event, h.body?.errors])).toEqual([['task', ['from a script']]])
      other.prepare(`UPDATE machines SET status = 'poweroff' WHERE name = 'win1'`).run()
      expect((await takeUntil((h) => h.length > 0)).map((h) => h.event)).toEqual(['machine'])
      other.prepare('DELETE FROM tasks WHERE id = ?').run(id)
      expect(await takeUntil((h) => h.length > 0)).toEqual([{ event: 'task.deleted', id }])
    } finally {
      other.close()
    }
  })

  it('says nothing of a change rolled back, also when a transaction is held open across turns', async () => {
    expect(() => db.transaction(() => {
      tasks.insert(task())
      throw new Error('changed my mind')
    })()).toThrow('changed my mind')
    expect(await take()).toEqual([])
    db.exec('BEGIN')
    const gone = tasks.insert(task())
    await new Promise((r) => setTimeout(r, 3 * POLL_MS)) // the bus waits for the transaction's end
    expect(heard).toEqual([])
    db.exec('ROLLBACK')
    await new Promise((r) => setTimeout(r, 3 * POLL_MS))
    expect(heard).toEqual([])
    // The task's id and its journal rows' numbers are handed out again: the change is still heard.
    const id = tasks.insert(task())
    expect(id).toBe(gone)
    expect((await take()).map((h) => [h.event, h.id])).toEqual([['stage', id], ['task', id], ['task.queued', id]])
    db.exec('BEGIN')
    const late = tasks.insert(task())
    await turn()
    expect(heard).toEqual([])
    db.exec('COMMIT')
    expect((await takeUntil((h) => h.length === 3)).map((h) => [h.event, h.id])).toEqual([['stage', late], ['task', late], ['task.queued', late]])
  })

  it('loses nothing in a burst from both connections', async () => {
    const other = new Database(path.join(dir, 'aviary.db'))
    try {
      const insert = other.prepare(`INSERT INTO tasks (category, target, clock, added_on)
        VALUES ('url', ?, '2026-01-01 00:00:00', '2026-01-01 00:00:00')`)
      const mine: number[] = []
      const theirs: number[] = []
      // 1,500 tasks there in 30 transactions, interleaved with 600 here, some in the same turn; last,
      // 3,000 here in one transaction (9,000 journal rows: several pages), with nothing after it.
      for (let round = 0; round < 30; round++) {
        other.transaction(() => {
          for (let i = 0; i < 50; i++) theirs.push(Number(insert.run(`http://theirs/${round}/${i}`).lastInsertRowid))
        })()
        for (let i = 0; i < 20; i++) mine.push(tasks.insert(task({ target: `http://mine/${round}/${i}` })))
        if (round % 5 === 0) await turn()
      }
      mine.push(...tasks.insertMany(Array.from({ length: 3000 }, (_, i) => task({ target: `http://mine/last/${i}` }))))
      const all = [...mine, ...theirs]
      const done = await takeUntil((h) => new Set(h.filter((e) => e.event === 'task.queued').map((e) => e.id)).size === all.length, 10_000)
      for (const kind of ['task', 'stage', 'task.queued']) {
        const ids = done.filter((e) => e.event === kind).map((e) => e.id)
        expect(new Set(ids).size).toBe(all.length)
        expect(ids.sort((a, b) => a - b)).toEqual(all.sort((a, b) => a - b))
      }
    } finally {
      other.close()
    }
  })

  it('keeps its journal small', async () => {
    const setStatus = db.prepare('UPDATE machines SET status = ? WHERE name = ?')
    const journal = db.prepare('SELECT count(*) FROM change_journal').pluck()
    for (let round = 0; round < 5; round++) {
      db.transaction(() => {
        for (let i = 0; i < 10_000; i++) setStatus.run(`s${i}`, 'win1')
      })()
      await turn()
    }
    // 50,000 rows were written; the bus deletes all but the last 10,000 to 20,000 it read.
    const machineEvents = heard.filter((h) => h.event === 'machine').length
    expect(machineEvents).toBeGreaterThanOrEqual(5) // each burst heard, its changes of one machine coalesced
    expect(machineEvents).toBeLessThan(100)
    expect(journal.get()).toBeGreaterThanOrEqual(10_000)
    expect(journal.get()).toBeLessThanOrEqual(20_000)
  })

  it('lets several buses read through one connection, and one close without silencing the others', async () => {
    const second = new EventBus(db, machines, { pollMs: POLL_MS })
    const heardToo: Heard[] = []
    listen(second, heardToo)
    const a = tasks.insert(task())
    await turn()
    expect(heard.filter((h) => h.event === 'task').map((h) => h.id)).toEqual([a])
    expect(heardToo.filter((h) => h.event === 'task').map((h) => h.id)).toEqual([a])
    second.close()
    const b = tasks.insert(task())
    await turn()
    expect(heard.filter((h) => h.event === 'task').map((h) => h.id)).toEqual([a, b])
    expect(heardToo.filter((h) => h.event === 'task').map((h) => h.id)).toEqual([a])
  })

  it('does not report what happened before it was made', async () => {
    tasks.insert(task())
    await take()
    const later = new EventBus(db, machines, { pollMs: POLL_MS })
    const heardLater: Heard[] = []
    listen(later, heardLater)
    await new Promise((r) => setTimeout(r, 3 * POLL_MS))
    expect(heardLater).toEqual([])
    later.close()
  })
})
