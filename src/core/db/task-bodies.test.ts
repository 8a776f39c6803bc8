// The API's task bodies are task_json as SQLite holds it, byte for byte, in list order, whatever
// changed and whichever connection changed it: the list order and the task JSON kept in memory
// must never be served stale, and stay within their byte budget.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { openDatabase, type Db } from './database'
import { TasksRepository, type NewTask } from './tasks.repository'
import { TaskMoves } from './task-moves'
import { TaskBodies } from './task-bodies'

const task = (target: string): NewTask => ({
  category: 'url', target, sample_id: null, package: null, timeout: 0, priority: 1, options: null, machine: null,
  platform: null, tags: [], custom: null, owner: '', memory: false, enforce_timeout: false, clock: null, submit_id: null, errors: []
})
/** pending → running → completed → reported (the only way a status changes). */
const report = (db: Db, id: number) => {
  const moves = TaskMoves.of(db)
  if (moves.status(id) !== 'pending') return
  moves.move(id, 'pending', 'running', { started: true })
  moves.move(id, 'running', 'completed', { completed: true })
  moves.move(id, 'completed', 'reported')
}
const view = (repo: TasksRepository, id: number) => (JSON.parse(repo.viewBody(id)!) as { task: Record<string, unknown> }).task
const list = (repo: TasksRepository, limit?: number, offset?: number) =>
  (JSON.parse(repo.listBody({ limit, offset }).toString()) as { tasks: { id: number; target: string }[] }).tasks
/** What SQLite holds: the whole list, or one page of it, as the API must send it. */
const oracleBody = (db: Db, limit = -1, offset = 0) => `{"tasks":[${db.prepare<[number, number], string>(
  'SELECT tj.json FROM tasks t JOIN task_json tj ON tj.id = t.id ORDER BY t.completed_on, t.id LIMIT ? OFFSET ?'
).pluck().all(limit, offset).join(',')}]}`

let dir: string
let db: Db
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-bodies-'))
  db = openDatabase(path.join(dir, 'aviary.db'))
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('task bodies', () => {
  it('follow every kind of change, from this connection and from another one', () => {
    const repo = new TasksRepository(db)
    const ids = [1, 2, 3].map((i) => repo.insert(task(`http://a.com/${i}`)))
    expect(list(repo).map((t) => t.id)).toEqual(ids)
    expect(view(repo, ids[0]!).status).toBe('pending')
    report(db, ids[0]!) // a finished task moves to the end of the list
    expect(view(repo, ids[0]!).status).toBe('reported')
    expect(list(repo).map((t) => t.id)).toEqual([ids[1], ids[2], ids[0]])
    repo.delete(ids[1]!)
    expect(repo.viewBody(ids[1]!)).toBeUndefined()
    expect(list(repo).map((t) => t.id)).toEqual([ids[2], ids[0]])
    // This connection, bypassing the repositories: the kept JSON of a listed task is not served.
    expect(repo.listBody({}).toString()).toBe(oracleBody(db))
    db.prepare(`UPDATE tasks SET errors = '["by hand"]' WHERE id = ?`).run(ids[2])
    expect(list(repo).find((t) => t.id === ids[2])).toMatchObject({ errors: ['by hand'] })
    // Another connection (a script, a second process): seen by the very next request.
    const other = new Database(path.join(dir, 'aviary.db'))
    other.prepare(`UPDATE tasks SET target = 'http://changed.com/' WHERE id = ?`).run(ids[2])
    const added = Number(other.prepare(`INSERT INTO tasks (category, target, clock, added_on)
      VALUES ('url', 'http://b.com/', '2026-01-01 00:00:00', '2026-01-01 00:00:00')`).run().lastInsertRowid)
    expect(view(repo, ids[2]!).target).toBe('http://changed.com/')
    expect(list(repo).map((t) => [t.id, t.target])).toEqual([[ids[2], 'http://changed.com/'], [added, 'http://b.com/'], [ids[0], 'http://a.com/1']])
    other.prepare('UPDATE tasks SET completed_on = ? WHERE id = ?').run('2020-01-01 00:00:00', ids[2])
    expect(list(repo).map((t) => t.id)).toEqual([added, ids[2], ids[0]])
    expect(repo.listBody({ limit: 2, offset: 1 }).toString()).toBe(oracleBody(db, 2, 1))
    other.prepare('DELETE FROM tasks WHERE id = ?').run(added)
    expect(list(repo).map((t) => t.id)).toEqual([ids[2], ids[0]])
    other.close()
  })

  it('answers byte for byte what SQLite holds through random lists, views and changes', () => {
    const repo = new TasksRepository(db)
    for (let i = 0; i < 300; i++) repo.insert(task(`http://a.com/${'y'.repeat(i % 37)}/${i}`))
    const oracle = db.prepare<[number, number], string>(
      `SELECT tj.json FROM tasks t JOIN task_json tj ON tj.id = t.id ORDER BY t.completed_on, t.id LIMIT ? OFFSET ?`
    ).pluck()
    const filtered = db.prepare<[string, number, number], string>(
      `SELECT tj.json FROM tasks t JOIN task_json tj ON tj.id = t.id WHERE t.status = ? ORDER BY t.completed_on, t.id LIMIT ? OFFSET ?`
    ).pluck()
    const oracleOne = db.prepare<[number], string>('SELECT json FROM task_json WHERE id = ?').pluck()
    const allIds = () => db.prepare<[], number>('SELECT id FROM tasks').pluck().all()
    let seed = 7
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    for (let step = 0; step < 2000; step++) {
      const op = rand(100)
      const ids = allIds()
      if (op < 55) {
        const limit = 1 + rand(30)
        const offset = rand(ids.length + 5)
        expect(repo.listBody({ limit, offset }).toString()).toBe(`{"tasks":[${oracle.all(limit, offset).join(',')}]}`)
      } else if (op < 63) {
        const status = rand(2) ? 'pending' : 'reported'
        const limit = 1 + rand(30)
        const offset = rand(50)
        expect(repo.listBody({ status, limit, offset }).toString()).toBe(`{"tasks":[${filtered.all(status, limit, offset).join(',')}]}`)
      } else if (op < 85) {
        const id = ids[rand(ids.length)]!
        expect(repo.viewBody(id)).toBe(`{"task":${oracleOne.get(id)}}`)
      } else if (op < 93) {
        const id = ids[rand(ids.length)]!
        report(db, id)
        db.prepare(`UPDATE tasks SET completed_on = ? WHERE id = ?`).run(`2026-01-01 00:00:${String(rand(60)).padStart(2, '0')}`, id)
      } else if (op < 97) {
        repo.delete(ids[rand(ids.length)]!)
      } else {
        repo.insert(task(`http://new.com/${step}`))
      }
    }
    // The whole list, unpaged.
    expect(repo.listBody({}).toString()).toBe(`{"tasks":[${oracle.all(-1, 0).join(',')}]}`)
  })

  it('keeps no more task JSON than its budget, and answers every page right while it lets tasks go', () => {
    const repo = new TasksRepository(db)
    const ids = Array.from({ length: 200 }, (_, i) => repo.insert(task(`http://a.com/${'z'.repeat(i % 40)}${i}`)))
    const size = (db.prepare('SELECT sum(length(CAST(json AS BLOB))) FROM task_json').pluck().get() as number) / ids.length
    const bodies = new TaskBodies(db, Math.floor(size * 30)) // room for ~30 of 200 tasks
    let seed = 3
    for (let step = 0; step < 300; step++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      const offset = seed % 190
      expect(bodies.page(20, offset).toString()).toBe(oracleBody(db, 20, offset))
      expect(bodies.keptBytes()).toBeLessThanOrEqual(Math.floor(size * 30))
    }
    expect(bodies.keptBytes()).toBeGreaterThan(0)
    expect(bodies.list([ids[5]!, 999_999, ids[3]!]).toString()).toBe(
      `{"tasks":[${[ids[5], ids[3]].map((id) => db.prepare('SELECT json FROM task_json WHERE id = ?').pluck().get(id)).join(',')}]}`)
  })

  it('builds valid JSON for empty and one-task pages, and keeps what is not ASCII', () => {
    const repo = new TasksRepository(db)
    expect(repo.listBody({}).toString()).toBe('{"tasks":[]}')
    expect(repo.listBody({ limit: 10, offset: 5 }).toString()).toBe('{"tasks":[]}')
    const id = repo.insert(task('http://a.com/ünicode-ö-\u202e'))
    expect(list(repo, 1, 0)).toEqual([expect.objectContaining({ id, target: 'http://a.com/ünicode-ö-\u202e' })])
    expect(list(repo, 5, 1)).toEqual([])
    expect(repo.listBody({ status: 'running' }).toString()).toBe('{"tasks":[]}')
  })
})
