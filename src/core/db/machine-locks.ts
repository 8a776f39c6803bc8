// Locks a machine for something other than an analysis (a start, stop or revert asked for in the
// UI, the doctor's deep check), with the same lock a task takes: the scheduler skips it meanwhile,
// and a machine running a task cannot be taken. MachinesRepository.unlock() releases it.
import type { Db } from './database'
import { now } from '../../shared/time'

export class MachineLocks {
  private readonly lockStmt

  constructor(db: Db) {
    this.lockStmt = db.prepare(
      'UPDATE machines SET locked = 1, locked_changed_on = @now WHERE id = @id AND locked = 0 AND configured = 1'
    )
  }

  /** False when the machine is locked already (by a task, or by another action). */
  tryLock(id: number): boolean {
    return this.lockStmt.run({ id, now: now() }).changes === 1
  }
}
