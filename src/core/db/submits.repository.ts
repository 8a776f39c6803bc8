import type { Db } from './database'
import { now } from '../../shared/time'

export class SubmitsRepository {
  private readonly insertStmt
  constructor(db: Db) {
    this.insertStmt = db.prepare('INSERT INTO submits (added_on) VALUES (?)')
  }

  create(): number {
    return Number(this.insertStmt.run(now()).lastInsertRowid)
  }
}
