// Changes of tasks, machines and timelines as events, for the scheduler (a task was queued) and for
// clients (GET /events). They come from the database itself: TEMP triggers call back into JS on
// every change this connection makes, whichever code path made it (a submission, the API's
// reschedule or delete, the engine), so nothing can change without an event.
//
// Triggers fire inside the writing statement, possibly inside a transaction that may still roll
// back; so they only note what changed, and a microtask after the write reads the current state
// and emits it. Several changes of one task in one turn become one event.
import { EventEmitter } from 'node:events'
import type { Db } from '../db/database'
import type { Machine, TimelineEntry, TimelineStage } from '../../shared/api/schemas'
import type { MachinesRepository } from '../db/machines.repository'
import { toApiMachine } from '../db/machine-view'
import { formatDatetime } from '../../shared/time'

export interface AviaryEvents {
  /** A task's API JSON changed (or the task was created); `json` is the Task object serialized. */
  task: [{ id: number; json: string }]
  'task.deleted': [{ id: number }]
  /** Tasks became pending (submitted, reschedule copies, re-queued): the scheduler listens. */
  'task.queued': [ids: number[]]
  stage: [TimelineEntry & { task_id: number }]
  machine: [Machine]
}

export class EventBus extends EventEmitter<AviaryEvents> {
  private readonly dirtyTasks = new Set<number>()
  private readonly deletedTasks = new Set<number>()
  private readonly dirtyMachines = new Set<number>()
  private readonly stageIds: number[] = []
  private readonly queued: number[] = []
  private scheduled = false
  private readonly taskJson
  private readonly stageRow

  constructor(db: Db, private readonly machines: MachinesRepository) {
    super()
    this.setMaxListeners(0) // one per open event stream
    this.taskJson = db.prepare<[number], string>('SELECT json FROM task_json WHERE id = ?').pluck()
    this.stageRow = db.prepare<[number], { task_id: number; at: number; stage: TimelineStage; message: string | null }>(
      'SELECT task_id, at, stage, message FROM task_events WHERE id = ?'
    )
    const note = (set: Set<number>) => (id: unknown) => {
      set.add(Number(id))
      this.schedule()
      return null
    }
    db.function('aviary_ev_task', { varargs: false }, note(this.dirtyTasks))
    db.function('aviary_ev_task_deleted', { varargs: false }, note(this.deletedTasks))
    db.function('aviary_ev_machine', { varargs: false }, note(this.dirtyMachines))
    db.function('aviary_ev_stage', { varargs: false }, (id) => {
      this.stageIds.push(Number(id))
      this.schedule()
      return null
    })
    db.function('aviary_ev_queued', { varargs: false }, (id) => {
      this.queued.push(Number(id))
      this.schedule()
      return null
    })
    db.exec(`
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_ev_task_insert AFTER INSERT ON main.task_json
        BEGIN SELECT aviary_ev_task(NEW.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_ev_task_update AFTER UPDATE ON main.task_json
        BEGIN SELECT aviary_ev_task(NEW.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_ev_task_delete AFTER DELETE ON main.tasks
        BEGIN SELECT aviary_ev_task_deleted(OLD.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_ev_machine_update AFTER UPDATE ON main.machines
        BEGIN SELECT aviary_ev_machine(NEW.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_ev_stage_insert AFTER INSERT ON main.task_events
        BEGIN SELECT aviary_ev_stage(NEW.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_ev_queued_insert AFTER INSERT ON main.tasks
        WHEN NEW.status = 'pending' BEGIN SELECT aviary_ev_queued(NEW.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_ev_queued_update AFTER UPDATE OF status ON main.tasks
        WHEN NEW.status = 'pending' AND OLD.status IS NOT 'pending' BEGIN SELECT aviary_ev_queued(NEW.id); END;
    `)
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    queueMicrotask(() => this.flush())
  }

  private flush(): void {
    this.scheduled = false
    for (const id of this.stageIds.splice(0)) {
      const row = this.stageRow.get(id)
      if (row) this.emit('stage', { ...row, time: row.at, at: formatDatetime(new Date(row.at)) })
    }
    for (const id of this.dirtyTasks) {
      const json = this.taskJson.get(id)
      if (json !== undefined) this.emit('task', { id, json })
    }
    this.dirtyTasks.clear()
    for (const id of this.deletedTasks) this.emit('task.deleted', { id })
    this.deletedTasks.clear()
    for (const id of this.dirtyMachines) {
      const row = this.machines.findById(id)
      if (row?.configured) this.emit('machine', toApiMachine(row))
    }
    this.dirtyMachines.clear()
    if (this.queued.length > 0) this.emit('task.queued', this.queued.splice(0))
  }
}
