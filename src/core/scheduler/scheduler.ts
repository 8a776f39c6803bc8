// Pairs pending tasks with free machines, event-driven: a pass runs when a task is queued (the
// event bus sees every insert), when a run ends and frees its machine, and when machines.json
// changes; never on a timer, so a submitted task with a free machine starts at once. Several
// events in one turn of the event loop make one pass.
//
// A pass walks the pending tasks in order (priority, then age) and gives each the first free
// machine that can serve it; a task whose machines are all busy does not hold up later tasks that
// can run elsewhere. A task that no configured machine could ever serve gets the reason in its
// errors and timeline (once) and stays pending until one is configured.
import type { QueueRepository, QueuedTask } from '../db/queue.repository'
import type { MachineRow, MachinesRepository } from '../db/machines.repository'
import type { TimelineRepository } from '../db/timeline.repository'
import type { EventBus } from '../events/event-bus'
import { matchMachines, UNSCHEDULABLE, type MatchableMachine } from './matching'

export interface SchedulerDeps {
  queue: QueueRepository
  machines: MachinesRepository
  timeline: TimelineRepository
  bus: EventBus
  /** Machines that may run at once (0 = no limit). */
  maxMachines(): number
  /** Analyses running now (including machines no longer configured). */
  running(): number
  launch(taskId: number, machine: MachineRow): void
  log: { error(msg: string): void }
}

type Candidate = MatchableMachine & { row: MachineRow }

export class Scheduler {
  private started = false
  private passQueued = false
  /** Tasks queued since the last pass: checked at once for a machine that could ever serve them. */
  private fresh: number[] = []
  private recheckAll = false
  private readonly onQueued = (ids: number[]) => {
    this.fresh.push(...ids)
    this.kick()
  }

  constructor(private readonly d: SchedulerDeps) {}

  start(): void {
    if (this.started) return
    this.started = true
    this.d.bus.on('task.queued', this.onQueued)
    this.kick()
  }

  stop(): void {
    if (!this.started) return
    this.started = false
    this.d.bus.off('task.queued', this.onQueued)
  }

  /** The fleet changed: every pending task's reason to wait is looked at again. */
  fleetChanged(): void {
    this.recheckAll = true
    this.kick()
  }

  /** Asks for a pass; passes asked for in the same turn run once. */
  kick(): void {
    if (!this.started || this.passQueued) return
    this.passQueued = true
    setImmediate(() => {
      this.passQueued = false
      if (!this.started) return
      try {
        this.pass()
      } catch (err) {
        this.d.log.error(`scheduler: ${(err as Error).message}`)
      }
    })
  }

  private pass(): void {
    const machines: Candidate[] = this.d.machines.configured().map((row) => ({
      id: row.id, name: row.name, label: row.label, platform: row.platform, tags: JSON.parse(row.tags) as string[], row
    }))
    this.noteUnschedulable(machines)
    const cap = this.d.maxMachines()
    let room = cap > 0 ? cap - this.d.running() : Infinity
    if (room <= 0) return
    const free = new Set(machines.filter((m) => m.row.locked === 0).map((m) => m.id))
    if (free.size === 0) return
    // Decide while reading, write afterwards: SQLite cannot write on a connection that is still
    // stepping through a query.
    const picks: { task: QueuedTask; machine: Candidate }[] = []
    const waiting: { task: QueuedTask; reason: string }[] = []
    for (const task of this.d.queue.pending()) {
      const match = matchMachines({ machine: task.machine, platform: task.platform, tags: JSON.parse(task.tags) as string[] }, machines)
      if (!match.ok) {
        waiting.push({ task, reason: match.reason })
        continue
      }
      const machine = match.machines.find((m) => free.has(m.id))
      if (!machine) continue
      free.delete(machine.id)
      picks.push({ task, machine })
      if (free.size === 0 || --room <= 0) break
    }
    for (const { task, reason } of waiting) this.wait(task, reason)
    for (const { task, machine } of picks) {
      if (this.d.queue.claim(task.id, machine.id, UNSCHEDULABLE)) this.d.launch(task.id, machine.row)
    }
  }

  /** New tasks (or, after a fleet change, all pending ones) that nothing could serve say why. */
  private noteUnschedulable(machines: Candidate[]): void {
    const tasks = this.recheckAll ? [...this.d.queue.pending()] : this.fresh.map((id) => this.d.queue.queued(id))
    this.fresh = []
    this.recheckAll = false
    for (const task of tasks) {
      if (!task) continue
      const match = matchMachines({ machine: task.machine, platform: task.platform, tags: JSON.parse(task.tags) as string[] }, machines)
      if (!match.ok) this.wait(task, match.reason)
    }
  }

  private wait(task: QueuedTask, reason: string): void {
    if ((JSON.parse(task.errors) as string[]).includes(reason)) return
    if (this.d.queue.addError(task.id, reason)) this.d.timeline.add(task.id, 'unschedulable', reason.slice(UNSCHEDULABLE.length))
  }
}
