// Saved connections (migration 4). Kept next to the connections service rather than in db/
// because nothing else reads this table; it is still the only place with its SQL.
import type { Db } from '../db/database'
import { now } from '../../shared/time'

export type ConnectionKind = 'analysis' | 'dispatcher'

export interface ConnectionRow {
  id: number
  name: string
  url: string
  kind: ConnectionKind
  token: string | null
  created_on: string
}

export interface ConnectionFields {
  name: string
  url: string
  kind: ConnectionKind
  token: string | null
}

export class ConnectionsRepository {
  private readonly listStmt
  private readonly getStmt
  private readonly insertStmt
  private readonly updateStmt
  private readonly deleteStmt

  constructor(db: Db) {
    this.listStmt = db.prepare<[], ConnectionRow>('SELECT * FROM connections ORDER BY id')
    this.getStmt = db.prepare<[number], ConnectionRow>('SELECT * FROM connections WHERE id = ?')
    this.insertStmt = db.prepare<[string, string, string, string | null, string]>(
      'INSERT INTO connections (name, url, kind, token, created_on) VALUES (?, ?, ?, ?, ?)'
    )
    this.updateStmt = db.prepare<[string, string, string, string | null, number]>(
      'UPDATE connections SET name = ?, url = ?, kind = ?, token = ? WHERE id = ?'
    )
    this.deleteStmt = db.prepare<[number]>('DELETE FROM connections WHERE id = ?')
  }

  list(): ConnectionRow[] {
    return this.listStmt.all()
  }

  get(id: number): ConnectionRow | null {
    return this.getStmt.get(id) ?? null
  }

  create(f: ConnectionFields): ConnectionRow {
    const id = Number(this.insertStmt.run(f.name, f.url, f.kind, f.token, now()).lastInsertRowid)
    return this.get(id)!
  }

  update(id: number, f: ConnectionFields): ConnectionRow | null {
    return this.updateStmt.run(f.name, f.url, f.kind, f.token, id).changes ? this.get(id) : null
  }

  delete(id: number): boolean {
    return this.deleteStmt.run(id).changes > 0
  }
}
