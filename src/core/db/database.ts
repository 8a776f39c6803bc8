// Opens the SQLite database (WAL) and brings its schema up to date.
import Database from 'better-sqlite3'
import { migrations } from './migrations'

export type Db = Database.Database

export function openDatabase(file: string): Db {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  migrate(db)
  return db
}

export function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number
  const latest = migrations.at(-1)?.version ?? 0
  if (current > latest) {
    throw new Error(`the database was written by a newer Aviary (schema ${current}, this one knows ${latest})`)
  }
  for (const m of migrations) {
    if (m.version <= current) continue
    db.transaction(() => {
      db.exec(m.sql)
      db.pragma(`user_version = ${m.version}`)
    })()
  }
}
