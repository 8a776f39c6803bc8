// Tells a read-side cache whether another connection wrote to the database since it last looked.
// PRAGMA data_version changes only for other connections' commits; it is read at most once per
// event-loop turn, since the pragma costs more than serving a cached answer, and a request
// answered in the same turn as an outside write is one that ran alongside it.
import type { Db } from './database'

export class OutsideWrites {
  private version: number
  private checkedThisTurn = false
  private readonly newTurn = () => {
    this.checkedThisTurn = false
  }
  private readonly dataVersion

  constructor(db: Db) {
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck()
    this.version = this.dataVersion.get() as number
  }

  /** True the first time it is asked after another connection committed. */
  happened(): boolean {
    if (this.checkedThisTurn) return false
    this.checkedThisTurn = true
    setImmediate(this.newTurn)
    const version = this.dataVersion.get() as number
    if (version === this.version) return false
    this.version = version
    return true
  }
}
