// Which tasks this process is turning into reports right now. The processor claims a task before
// it reads or writes anything of it and releases it after its last write; a delete waits for the
// release (TasksRepository.deleteUnlessBusy, TasksService.delete), and a claim needs the task's
// row, so no report is ever written into the folder of a deleted task. Without this, a delete
// right after a rereport removed the folder while processing wrote reports/ into it (ENOTEMPTY),
// or processing made reports/ again after the delete.
//
// A claim is also written to tasks.processing, Cuckoo 2's column naming the instance that
// processes the task (null otherwise), which /tasks/view shows. What is held in memory is the
// truth: one service per data directory, and the processor runs in it. A claim left in the column
// by a process that died is cleared when the engine recovers (scheduler/recovery.ts), and a
// delete never waits for a claim nobody here holds.
import type { Db } from './database'

interface Held {
  done: Promise<void>
  resolve: () => void
}

const claimsOf = new WeakMap<Db, ProcessingClaims>()

export class ProcessingClaims {
  private readonly held = new Map<number, Held>()
  private readonly claimStmt
  private readonly releaseStmt
  private readonly staleStmt

  /** The claims of a connection: the processor and the API share the service's one connection. */
  static of(db: Db): ProcessingClaims {
    let claims = claimsOf.get(db)
    if (!claims) {
      claims = new ProcessingClaims(db)
      claimsOf.set(db, claims)
    }
    return claims
  }

  private constructor(db: Db) {
    this.claimStmt = db.prepare(
      `UPDATE tasks SET processing = @instance WHERE id = @id AND status = 'completed' AND processing IS NULL`
    )
    this.releaseStmt = db.prepare('UPDATE tasks SET processing = NULL WHERE id = ?')
    this.staleStmt = db.prepare(
      `UPDATE tasks SET processing = NULL WHERE processing IS NOT NULL AND id NOT IN (SELECT value FROM json_each(?))`
    )
  }

  /** Takes a task that is completed and not claimed; false if it is not (or no longer exists). */
  claim(id: number, instance: string): boolean {
    if (this.held.has(id)) return false
    if (this.claimStmt.run({ id, instance }).changes !== 1) return false
    let resolve!: () => void
    const done = new Promise<void>((r) => { resolve = r })
    this.held.set(id, { done, resolve })
    return true
  }

  /** Ends the claim: the task's row shows no processing, and a delete waiting for it goes on. */
  release(id: number): void {
    const held = this.held.get(id)
    if (!held) return
    this.held.delete(id)
    this.releaseStmt.run(id)
    held.resolve()
  }

  isHeld(id: number): boolean {
    return this.held.has(id)
  }

  /** Resolves when this process no longer processes the task (at once if it does not). */
  released(id: number): Promise<void> {
    return this.held.get(id)?.done ?? Promise.resolve()
  }

  /** Clears claims that name a process that is gone; returns how many. */
  clearStale(): number {
    return this.staleStmt.run(JSON.stringify([...this.held.keys()])).changes
  }
}
