// TaskSearch keeps its in-memory columns right through changes made on its own connection (TEMP
// triggers, rolled back ones included) and by another connection (data_version), on a real file.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase, type Db } from './database'
import { TaskSearch, searchName } from './task-search'
import { TaskMoves } from './task-moves'

describe('TaskSearch', () => {
  let dir: string
  let db: Db
  let search: TaskSearch
  const insert = (target: string, status = 'pending', conn: Database.Database = db) =>
    Number(conn.prepare(`INSERT INTO tasks (category, target, clock, added_on, status) VALUES (?, ?, '2026-01-01 00:00:00', '2026-01-01 00:00:00', ?)`)
      .run(target.startsWith('http') ? 'url' : 'file', target, status).lastInsertRowid)
  const find = (q: string, statuses?: ('pending' | 'reported')[]) =>
    search.search({ q, statuses, offset: 0, limit: 100, order: 'asc' })
  const nextTurn = () => new Promise((r) => setImmediate(r))
  /** pending → … → reported, through TaskMoves: on this connection a status changes no other way. */
  const report = (id: number) => {
    const moves = TaskMoves.of(db)
    moves.move(id, 'pending', 'running')
    moves.move(id, 'running', 'completed')
    moves.move(id, 'completed', 'reported')
  }

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-search-'))
    db = openDatabase(path.join(dir, 'aviary.db'))
    search = new TaskSearch(db)
  })
  afterEach(() => {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('names a task by its URL or its file name, in lower case', () => {
    expect(searchName('url', 'http://Example.COM/a/b')).toBe('http://example.com/a/b')
    expect(searchName('file', '/data/storage/uploads/abc/Setup Ü.EXE')).toBe('setup ü.exe')
  })

  it('follows inserts, updates, deletes and rollbacks on its own connection', () => {
    const a = insert('/u/x/alpha.exe')
    expect(find('alpha')).toEqual({ ids: [a], total: 1 }) // first use: loads
    const b = insert('/u/x/beta.exe')
    expect(find('.exe').ids).toEqual([a, b])
    report(b)
    expect(find('', ['reported']).ids).toEqual([b])
    expect(() => db.transaction(() => {
      report(a)
      db.prepare(`UPDATE tasks SET target = '/u/x/gamma.exe' WHERE id = ?`).run(a)
      throw new Error('rolled back')
    })()).toThrow('rolled back')
    expect(find('', ['reported']).ids).toEqual([b])
    expect(find('gamma').total).toBe(0)
    db.prepare('DELETE FROM tasks WHERE id = ?').run(a)
    expect(find('.exe').ids).toEqual([b])
    expect(search.search({ offset: 0, limit: 10, order: 'desc' })).toEqual({ ids: [b], total: 1 })
  })

  it('reloads after another connection wrote', async () => {
    insert('/u/x/one.exe')
    expect(find('.exe').total).toBe(1)
    const other = new Database(path.join(dir, 'aviary.db'))
    const id = insert('http://two.example/', 'pending', other)
    other.close()
    await nextTurn()
    expect(find('two.example').ids).toEqual([id])
  })
})
