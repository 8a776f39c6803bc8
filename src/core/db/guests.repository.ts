// Guests: one row per run of a task on a machine (Cuckoo's `guests` table). The latest row of a
// task is its `guest` object in the API (task_api_json joins it; triggers refresh task_json).
import type { Db } from './database'
import { now } from '../../shared/time'

/** Cuckoo's guest statuses, in the order a run goes through them; `failed` when the agent could not be used. */
export type GuestStatus = 'init' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed'

export class GuestsRepository {
  private readonly insertStmt
  private readonly statusStmt
  private readonly stopStmt

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO guests (task_id, machine_id, name, label, manager, status, started_on)
       VALUES (@taskId, @machineId, @name, @label, @manager, 'init', @now)`
    )
    this.statusStmt = db.prepare('UPDATE guests SET status = ? WHERE id = ?')
    this.stopStmt = db.prepare(`UPDATE guests SET status = 'stopped', shutdown_on = ? WHERE id = ? AND shutdown_on IS NULL`)
  }

  start(taskId: number, machine: { id: number; name: string; label: string; driver: string }): number {
    const info = this.insertStmt.run({
      taskId, machineId: machine.id, name: machine.name, label: machine.label, manager: machine.driver, now: now()
    })
    return Number(info.lastInsertRowid)
  }

  setStatus(id: number, status: GuestStatus): void {
    this.statusStmt.run(status, id)
  }

  stop(id: number): void {
    this.stopStmt.run(now(), id)
  }

  /** The machine of a task's latest run (the live console says why a machine has none). */
  latestOf(taskId: number): { name: string; manager: string } | undefined {
    return this.db.prepare<[number], { name: string; manager: string }>('SELECT name, manager FROM guests WHERE task_id = ? ORDER BY id DESC LIMIT 1').get(taskId)
  }

  /** Closes the rows of runs a crashed process left open. */
  stopAllOpen(): void {
    this.db.prepare(`UPDATE guests SET status = 'stopped', shutdown_on = ? WHERE shutdown_on IS NULL`).run(now())
  }
}
