// The scheduler on a real database file with the real event bus: what it picks, in which order,
// on which machine, how it explains tasks that cannot run, and that it reacts to submissions at
// once. The runs themselves are recorded instead of started (the engine's end-to-end tests run
// real guests); a test "finishes" a run the way AnalysisRun does, by moving the task and unlocking.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { openDatabase, type Db } from '../db/database'
import { TasksRepository, type NewTask } from '../db/tasks.repository'
import { MachinesRepository, type MachineRow } from '../db/machines.repository'
import { QueueRepository } from '../db/queue.repository'
import { TimelineRepository } from '../db/timeline.repository'
import { EventBus } from '../events/event-bus'
import { parseFleetConfig } from '../machinery/machines-config'
import { Scheduler } from './scheduler'
import { matchMachines } from './matching'
import { canMove } from '../db/transitions'

let dir: string
let db: Db
let tasks: TasksRepository
let machines: MachinesRepository
let queue: QueueRepository
let timeline: TimelineRepository
let launched: { taskId: number; machine: string }[]
let scheduler: Scheduler
let maxMachines = 0

const settle = () => new Promise((r) => setTimeout(r, 20))

function task(over: Partial<NewTask> = {}): number {
  return tasks.insert({
    category: 'url', target: 'http://example.com/', sample_id: null, package: null, timeout: 0, priority: 1, options: null,
    machine: null, platform: null, tags: [], custom: null, owner: '', memory: false, enforce_timeout: false, clock: null,
    submit_id: null, errors: [], ...over
  })
}

function fleet(list: { name: string; platform?: string; tags?: string[]; label?: string }[]): void {
  const cfg = parseFleetConfig({ machines: list.map((m, i) => ({ ...m, ip: `10.0.0.${i + 10}` })) })
  machines.sync(cfg.machines)
}

/** What AnalysisRun does at the end of a run. */
function finish(taskId: number): void {
  const machine = machines.findByName(launched.find((l) => l.taskId === taskId)!.machine)!
  queue.move(taskId, 'running', 'completed', { completed: true })
  machines.unlock(machine.id)
  scheduler.kick()
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-sched-'))
  db = openDatabase(path.join(dir, 'aviary.db'))
  tasks = new TasksRepository(db)
  machines = new MachinesRepository(db)
  queue = new QueueRepository(db)
  timeline = new TimelineRepository(db)
  const bus = new EventBus(db, machines)
  launched = []
  maxMachines = 0
  scheduler = new Scheduler({
    queue, machines, timeline, bus,
    maxMachines: () => maxMachines,
    running: () => machines.configured().filter((m) => m.locked).length,
    launch: (taskId: number, m: MachineRow) => launched.push({ taskId, machine: m.name }),
    log: { error: (msg) => { throw new Error(msg) } }
  })
})

afterEach(() => {
  scheduler.stop()
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('scheduler', () => {
  it('starts a submitted task at once on a free machine, and locks the machine', async () => {
    fleet([{ name: 'win1' }])
    scheduler.start()
    const id = task()
    await settle()
    expect(launched).toEqual([{ taskId: id, machine: 'win1' }])
    expect(tasks.get(id)!.status).toBe('running')
    expect(tasks.get(id)!.started_on).not.toBeNull()
    expect(machines.findByName('win1')!.locked).toBe(1)
    expect(timeline.list(id).map((e) => e.stage)).toEqual(['queued'])
  })

  it('orders by priority, then age, and waits for a machine to be free', async () => {
    fleet([{ name: 'win1' }])
    const low = task({ priority: 1 })
    const high = task({ priority: 3 })
    const mid = task({ priority: 2 })
    const low2 = task({ priority: 1 })
    scheduler.start()
    await settle()
    expect(launched.map((l) => l.taskId)).toEqual([high])
    for (const next of [mid, low, low2]) {
      finish(launched.at(-1)!.taskId)
      await settle()
      expect(launched.at(-1)!.taskId).toBe(next)
    }
    expect(launched).toHaveLength(4)
  })

  it('picks machines by name or label, else by platform with all tags; tags alone do not restrict', async () => {
    fleet([
      { name: 'win7', label: 'cuckoo-win7', platform: 'windows', tags: ['x86'] },
      { name: 'win10', platform: 'windows', tags: ['x64', 'office'] },
      { name: 'deb', platform: 'linux' }
    ])
    scheduler.start()
    const byLabel = task({ machine: 'cuckoo-win7' })
    const tagged = task({ platform: 'windows', tags: ['office', 'x64'] })
    const linux = task({ platform: 'linux' })
    await settle()
    expect(Object.fromEntries(launched.map((l) => [l.taskId, l.machine]))).toEqual({ [byLabel]: 'win7', [tagged]: 'win10', [linux]: 'deb' })
    expect(matchMachines({ machine: null, platform: null, tags: ['nope'] }, [{ id: 1, name: 'a', label: 'a', platform: 'linux', tags: [] }]))
      .toEqual({ ok: true, machines: [{ id: 1, name: 'a', label: 'a', platform: 'linux', tags: [] }] })
  })

  it('does not let a task waiting for a busy machine hold up tasks that can run elsewhere', async () => {
    fleet([{ name: 'a', platform: 'windows' }, { name: 'b', platform: 'linux' }])
    scheduler.start()
    const first = task({ machine: 'a' })
    await settle()
    const second = task({ machine: 'a', priority: 3 })
    const third = task({ platform: 'linux' })
    await settle()
    expect(launched.map((l) => l.taskId)).toEqual([first, third])
    finish(first)
    await settle()
    expect(launched.map((l) => l.taskId)).toEqual([first, third, second])
  })

  it('caps the machines running at once', async () => {
    fleet([{ name: 'a' }, { name: 'b' }, { name: 'c' }])
    maxMachines = 2
    for (let i = 0; i < 5; i++) task()
    scheduler.start()
    await settle()
    expect(launched).toHaveLength(2)
    finish(launched[0]!.taskId)
    await settle()
    expect(launched).toHaveLength(3)
  })

  it('says why a task cannot run, once, and starts it when a matching machine is configured', async () => {
    fleet([{ name: 'win1', platform: 'windows' }])
    scheduler.start()
    const mac = task({ platform: 'darwin' })
    const named = task({ machine: 'ghost' })
    await settle()
    scheduler.kick()
    await settle()
    expect(launched).toEqual([])
    expect(JSON.parse(tasks.get(mac)!.errors)).toEqual(["unschedulable: no machine has platform 'darwin' (configured: windows)"])
    expect(JSON.parse(tasks.get(named)!.errors)).toEqual(["unschedulable: no configured machine is named or labelled 'ghost'"])
    expect(timeline.list(mac).map((e) => [e.stage, e.message])).toEqual([
      ['queued', null], ['unschedulable', "no machine has platform 'darwin' (configured: windows)"]
    ])
    fleet([{ name: 'win1', platform: 'windows' }, { name: 'mac1', platform: 'darwin' }])
    scheduler.fleetChanged()
    await settle()
    expect(launched).toEqual([{ taskId: mac, machine: 'mac1' }])
    expect(JSON.parse(tasks.get(mac)!.errors)).toEqual([]) // the reason to wait is gone once it runs
    expect(tasks.get(named)!.status).toBe('pending')
  })

  it('says so when no machines are configured at all', async () => {
    fleet([])
    scheduler.start()
    const id = task()
    await settle()
    expect(JSON.parse(tasks.get(id)!.errors)[0]).toMatch(/no analysis machines are configured/)
  })

  it('never hands one machine to two tasks, nor a task that left pending meanwhile', () => {
    fleet([{ name: 'a' }])
    const t1 = task()
    const t2 = task()
    const m = machines.findByName('a')!
    expect(queue.claim(t1, m.id, 'unschedulable: ')).toBe(true)
    expect(queue.claim(t2, m.id, 'unschedulable: ')).toBe(false)
    machines.unlock(m.id)
    expect(queue.move(t2, 'pending', 'recovered')).toBe(true) // rescheduled meanwhile
    expect(queue.claim(t2, m.id, 'unschedulable: ')).toBe(false)
    expect(machines.findByName('a')!.locked).toBe(0) // the lock was rolled back with the claim
  })

  it('has a transition table that allows the engine moves and refuses the rest', () => {
    expect(canMove('pending', 'running')).toBe(true)
    expect(canMove('running', 'completed')).toBe(true)
    expect(canMove('running', 'failed_analysis')).toBe(true)
    expect(canMove('completed', 'running')).toBe(false)
    expect(canMove('recovered', 'pending')).toBe(false)
  })
})
