// State moves are enforced in one place: TaskMoves.move refuses every move the transition table
// does not have, and no other SQL of src/core writes a task's status (checked on the sources
// below). Each real writer is then run to see it make its moves. A real database file; a second
// plain connection sets up states, as another process would.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { openDatabase, type Db } from './database'
import { TaskMoves } from './task-moves'
import { TasksRepository, type NewTask } from './tasks.repository'
import { QueueRepository } from './queue.repository'
import { MachinesRepository } from './machines.repository'
import { GuestsRepository } from './guests.repository'
import { SamplesRepository } from './samples.repository'
import { TimelineRepository } from './timeline.repository'
import { EventBus } from '../events/event-bus'
import { parseFleetConfig } from '../machinery/machines-config'
import { recoverAfterRestart } from '../scheduler/recovery'
import { IllegalTransition, TRANSITIONS, canMove } from './transitions'
import { Processor } from '../processing/processor'
import { createLayout } from '../storage/layout'
import { createFileTypeDetector } from '../hashing/magic'
import { TASK_STATUSES, type TaskStatus } from '../../shared/api/schemas'

let dir: string
let db: Db
let other: Database.Database
let tasks: TasksRepository
let queue: QueueRepository

const newTask = (target = 'http://example.com/'): NewTask => ({
  category: 'url', target, sample_id: null, package: null, timeout: 0, priority: 1, options: null, machine: null,
  platform: null, tags: [], custom: null, owner: '', memory: false, enforce_timeout: false, clock: null, submit_id: null, errors: []
})
/** A task in `status`, set up by another connection, as a test fixture. */
const taskIn = (status: TaskStatus, attempts = 1): number => {
  const id = tasks.insert(newTask())
  other.prepare('UPDATE tasks SET status = ?, attempts = ? WHERE id = ?').run(status, attempts, id)
  return id
}
const statusOf = (id: number) => tasks.get(id)?.status

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-moves-'))
  db = openDatabase(path.join(dir, 'aviary.db'))
  other = new Database(path.join(dir, 'aviary.db'))
  tasks = new TasksRepository(db)
  queue = new QueueRepository(db)
})
afterEach(() => {
  other.close()
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('TaskMoves, the one place a status changes', () => {
  it('makes exactly the moves of the transition table and refuses every other, writing nothing', () => {
    const moves = TaskMoves.of(db)
    for (const from of TASK_STATUSES) {
      for (const to of TASK_STATUSES) {
        if (from === to) continue
        const id = taskIn(from)
        if (canMove(from, to)) {
          expect(moves.move(id, from, to), `${from} → ${to}`).toBe(true)
          expect(statusOf(id)).toBe(to)
        } else {
          expect(() => moves.move(id, from, to), `${from} → ${to}`).toThrow(IllegalTransition)
          expect(() => moves.move(id, from, to)).toThrow(`a task cannot go from ${from} to ${to}`)
          expect(statusOf(id)).toBe(from)
        }
      }
    }
    expect(TRANSITIONS.recovered).toEqual([])
    expect(canMove('running', 'recovered')).toBe(false)
  })

  it('writes only while the task is in the status the caller expects', () => {
    const id = taskIn('reported')
    expect(TaskMoves.of(db).move(id, 'completed', 'reported')).toBe(false)
    expect(TaskMoves.of(db).move(999_999, 'pending', 'running')).toBe(false)
    expect(statusOf(id)).toBe('reported')
  })

  it('is the only code that writes a status: no other SQL of src/core sets tasks.status', () => {
    const root = path.resolve('src/core')
    const offenders: string[] = []
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const f = path.join(d, e.name)
        if (e.isDirectory()) walk(f)
        else if (/\.ts$/.test(e.name) && !/\.test\.ts$/.test(e.name) && f !== path.join(root, 'db', 'task-moves.ts')) {
          const text = readFileSync(f, 'utf8')
          // An UPDATE of tasks that sets status, or an INSERT into tasks with a status other than 'pending'.
          for (const m of text.matchAll(/UPDATE\s+(?:main\.)?tasks\s+SET\b((?:(?!\bWHERE\b)[^;`])*)/gi)) {
            if (/\bstatus\s*=/i.test(m[1] ?? '')) offenders.push(`${path.relative(root, f)}: ${m[0].slice(0, 60)}`)
          }
          for (const m of text.matchAll(/INSERT\s+INTO\s+(?:main\.)?tasks\b[^;`]*?\bstatus\b[^;`]*/gi)) {
            if (!/'pending'/.test(m[0])) offenders.push(`${path.relative(root, f)}: ${m[0].slice(0, 60)}`)
          }
        }
      }
    }
    walk(root)
    expect(offenders).toEqual([])
  })
})

describe('every real writer of a status goes through TaskMoves', () => {
  it('the scheduler\'s claim (pending → running) and the end of a run (QueueRepository.move)', () => {
    const machines = new MachinesRepository(db)
    machines.sync(parseFleetConfig({ machines: [{ name: 'm1', ip: '10.0.0.5' }] }).machines)
    const m = machines.findByName('m1')!
    const id = tasks.insert(newTask())
    expect(queue.claim(id, m.id, 'unschedulable: ')).toBe(true)
    expect(tasks.get(id)).toMatchObject({ status: 'running', attempts: 1 })
    expect(queue.move(id, 'running', 'completed', { completed: true })).toBe(true)
    expect(tasks.get(id)!.completed_on).not.toBeNull()
    expect(() => queue.move(id, 'completed', 'running')).toThrow(IllegalTransition)
    machines.unlock(m.id)
    // a claim of a task that left pending is lost, and the machine's lock rolled back with it
    expect(queue.claim(id, m.id, 'unschedulable: ')).toBe(false)
    expect(machines.findByName('m1')!.locked).toBe(0)
  })

  it('recovery after a crash (running → pending, or failed_analysis on the last attempt)', () => {
    const again = taskIn('running', 1)
    const last = taskIn('running', 2)
    other.prepare(`UPDATE tasks SET processing = 'aviary:1' WHERE id = ?`).run(taskIn('completed'))
    const out = recoverAfterRestart({
      queue, machines: new MachinesRepository(db), guests: new GuestsRepository(db), timeline: new TimelineRepository(db)
    })
    expect(out).toMatchObject({ requeued: [again], failed: [last], processingCleared: 1 })
    expect(statusOf(again)).toBe('pending')
    expect(statusOf(last)).toBe('failed_analysis')
  })

  it('reschedule (→ recovered, again and again) and rereport (reported → completed), refusing what the table refuses', () => {
    const done = taskIn('reported')
    expect(tasks.rereport(done)).toBe(true)
    expect(statusOf(done)).toBe('completed')
    expect(tasks.rereport(done)).toBe(false)
    const copy = tasks.reschedule(done, newTask())!
    expect(statusOf(done)).toBe('recovered')
    expect(statusOf(copy)).toBe('pending')
    // rescheduled already: one more copy, and the task stays recovered
    const again = tasks.reschedule(done, newTask())!
    expect(again).not.toBe(copy)
    expect(statusOf(again)).toBe('pending')
    expect(statusOf(done)).toBe('recovered')
    const running = taskIn('running')
    const count = tasks.counts().total
    expect(() => tasks.reschedule(running, newTask())).toThrow(IllegalTransition)
    expect(tasks.counts().total).toBe(count) // no copy either: one transaction
    expect(statusOf(running)).toBe('running')
    expect(tasks.reschedule(999_999, newTask())).toBeUndefined()
  })

  it('processing (completed → reported, or failed_processing)', async () => {
    const layout = createLayout(path.join(dir, 'data'))
    layout.ensure()
    const bus = new EventBus(db, new MachinesRepository(db))
    const processor = new Processor({
      layout, queue, tasks, samples: new SamplesRepository(db), timeline: new TimelineRepository(db), bus,
      detectType: createFileTypeDetector('wasm'), yaraRules: () => null, aviaryVersion: 'test',
      log: { info: () => undefined, error: () => undefined }
    })
    const good = taskIn('completed')
    const bad = taskIn('completed')
    mkdirSync(layout.analysis(good), { recursive: true })
    mkdirSync(layout.analysis(bad), { recursive: true })
    writeFileSync(layout.analysisFile(bad, 'reports'), 'a file where the reports folder goes')
    await processor.processOne(good)
    await processor.processOne(bad)
    expect(statusOf(good)).toBe('reported')
    expect(statusOf(bad)).toBe('failed_processing')
    expect(tasks.get(good)!.processing).toBeNull() // the claim was released
  })
})
