// The read-side cache of tasks must never serve a stale task: changes through this connection
// reach it through TEMP triggers, changes through another connection through data_version.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { openDatabase, type Db } from './database'
import { TasksRepository, type NewTask } from './tasks.repository'
import { TaskMoves } from './task-moves'

const task = (target: string): NewTask => ({
  category: 'url', target, sample_id: null, package: null, timeout: 0, priority: 1, options: null, machine: null,
  platform: null, tags: [], custom: null, owner: '', memory: false, enforce_timeout: false, clock: null, submit_id: null, errors: []
})
const turn = () => new Promise((r) => setImmediate(r))
/** pending → running → completed → reported through this connection (the only way a status changes). */
const report = (db: Db, id: number) => {
  const moves = TaskMoves.of(db)
  if (moves.status(id) !== 'pending') return
  moves.move(id, 'pending', 'running', { started: true })
  moves.move(id, 'running', 'completed', { completed: true })
  moves.move(id, 'completed', 'reported')
}
const view = (repo: TasksRepository, id: number) => JSON.parse(repo.viewBody(id)!.toString()).task as Record<string, unknown>
const statsOf = (repo: TasksRepository) =>
  (repo as unknown as { views: { stats(): { bytes: number; slabs: number } } }).views.stats()
const list = (repo: TasksRepository, limit?: number, offset?: number) =>
  (JSON.parse(repo.listBody({ limit, offset }).toString()).tasks as { id: number; target: string }[])

let dir: string
let db: Db
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-views-'))
  db = openDatabase(path.join(dir, 'aviary.db'))
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('task views', () => {
  it('serves what the database holds after every kind of change', async () => {
    const repo = new TasksRepository(db, 1 << 20)
    const ids = [1, 2, 3].map((i) => repo.insert(task(`http://a.com/${i}`)))
    expect(list(repo).map((t) => t.id)).toEqual(ids)
    expect(view(repo, ids[0]!).status).toBe('pending')
    // through this connection: the update trigger refreshes task_json and drops the cached copy
    report(db, ids[0]!)
    expect(view(repo, ids[0]!).status).toBe('reported')
    expect(list(repo).map((t) => t.id)).toEqual([ids[1], ids[2], ids[0]])
    repo.delete(ids[1]!)
    expect(repo.viewBody(ids[1]!)).toBeUndefined()
    expect(list(repo).map((t) => t.id)).toEqual([ids[2], ids[0]])
    // through another connection: noticed on the next event-loop turn
    const other = new Database(path.join(dir, 'aviary.db'))
    other.prepare(`UPDATE tasks SET target = 'http://changed.com/' WHERE id = ?`).run(ids[2])
    other.prepare(`INSERT INTO tasks (category, target, clock, added_on) VALUES ('url', 'http://b.com/', '2026-01-01 00:00:00', '2026-01-01 00:00:00')`).run()
    other.close()
    await turn()
    expect(view(repo, ids[2]!).target).toBe('http://changed.com/')
    expect(list(repo)).toHaveLength(3)
  })

  it('does not send a kept page again once one of its tasks changed', () => {
    const repo = new TasksRepository(db, 1 << 20)
    const ids = [1, 2, 3].map((i) => repo.insert(task(`http://a.com/${i}`)))
    expect(list(repo, 2, 0).map((t) => t.target)).toEqual(['http://a.com/1', 'http://a.com/2'])
    db.prepare(`UPDATE tasks SET target = 'http://changed.com/' WHERE id = ?`).run(ids[1])
    expect(list(repo, 2, 0).map((t) => t.target)).toEqual(['http://a.com/1', 'http://changed.com/'])
  })

  it('never keeps a body written into lent memory, and keeps a page asked for again', () => {
    const repo = new TasksRepository(db, 1 << 20)
    for (let i = 0; i < 10; i++) repo.insert(task(`http://a.com/${i}`))
    const lent = new Set<ArrayBufferLike>()
    const alloc = (size: number) => {
      const b = Buffer.allocUnsafeSlow(size)
      lent.add(b.buffer)
      return b
    }
    const first = repo.listBody({ limit: 5, offset: 2 }, alloc)
    const second = repo.listBody({ limit: 5, offset: 2 }, alloc)
    const third = repo.listBody({ limit: 5, offset: 2 }, alloc)
    expect(lent.has(first.buffer)).toBe(true)
    expect(lent.has(second.buffer)).toBe(false)
    expect(third).toBe(second) // the same bytes, sent again without a copy
    expect(first.toString()).toBe(third.toString())
    const filtered = repo.listBody({ limit: 5, status: 'pending' }, alloc)
    expect(lent.has(filtered.buffer)).toBe(true)
  })

  it('stays within its byte budget and still answers every task', async () => {
    const repo = new TasksRepository(db, 8 * 1024) // room for a handful of tasks only
    const ids = Array.from({ length: 300 }, (_, i) => repo.insert(task(`http://a.com/${'x'.repeat(i % 50)}${i}`)))
    for (let round = 0; round < 3; round++) {
      for (const id of ids) expect(view(repo, id).id).toBe(id)
      const page = list(repo, 100, 150)
      expect(page.map((t) => t.id)).toEqual(ids.slice(150, 250))
    }
    expect(statsOf(repo).bytes).toBeLessThanOrEqual(8 * 1024)
  })

  it('answers byte for byte what SQLite holds through random lists, views and changes', () => {
    // Small budget and small pages, so that pages get repacked into kept bodies, kept bodies get
    // split by changes and evicted, and views are cut out of list bodies: every path is taken.
    const budget = 256 * 1024
    const repo = new TasksRepository(db, budget)
    for (let i = 0; i < 400; i++) repo.insert(task(`http://a.com/${'y'.repeat(i % 37)}/${i}`))
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
    const sentAsKept = new Set<Buffer>()
    let reused = 0
    for (let step = 0; step < 3000; step++) {
      const op = rand(100)
      const ids = allIds()
      if (op < 55) {
        const limit = 1 + rand(30)
        const offset = rand(ids.length + 5)
        const body = repo.listBody({ limit, offset })
        expect(body.toString()).toBe(`{"tasks":[${oracle.all(limit, offset).join(',')}]}`)
        if (sentAsKept.has(body)) reused++
        sentAsKept.add(body)
      } else if (op < 63) {
        const status = rand(2) ? 'pending' : 'reported'
        const limit = 1 + rand(30)
        const offset = rand(50)
        expect(repo.listBody({ status, limit, offset }).toString()).toBe(`{"tasks":[${filtered.all(status, limit, offset).join(',')}]}`)
      } else if (op < 85) {
        const id = ids[rand(ids.length)]!
        expect(repo.viewBody(id)!.toString()).toBe(`{"task":${oracleOne.get(id)}}`)
      } else if (op < 93) {
        const id = ids[rand(ids.length)]!
        report(db, id)
        db.prepare(`UPDATE tasks SET completed_on = ? WHERE id = ?`).run(`2026-01-01 00:00:${String(rand(60)).padStart(2, '0')}`, id)
      } else if (op < 97) {
        repo.delete(ids[rand(ids.length)]!)
      } else {
        repo.insert(task(`http://new.com/${step}`))
      }
      expect(statsOf(repo).bytes).toBeLessThanOrEqual(budget)
    }
    expect(reused).toBeGreaterThan(0) // some pages were sent again as they were, not rebuilt
    // Paging through the whole list leaves its tasks in chunks of neighbours, not one by one.
    const total = allIds().length
    for (let offset = 0; offset < total; offset += 25) list(repo, 25, offset)
    expect(statsOf(repo).slabs).toBeLessThanOrEqual(Math.ceil(total / 64) + 2)
    // Also when every task was first cached alone by a view.
    const fresh = new TasksRepository(db, budget)
    for (const id of allIds()) fresh.viewBody(id)
    expect(statsOf(fresh).slabs).toBe(total)
    for (let offset = 0; offset < total; offset += 25) list(fresh, 25, offset)
    expect(statsOf(fresh).slabs).toBeLessThanOrEqual(Math.ceil(total / 64) + 2)
  })

  it('builds list bodies that are valid JSON for empty and one-task pages', () => {
    const repo = new TasksRepository(db, 1 << 20)
    expect(repo.listBody({}).toString()).toBe('{"tasks":[]}')
    const id = repo.insert(task('http://a.com/ünicode-ö'))
    expect(list(repo, 1, 0)).toEqual([expect.objectContaining({ id, target: 'http://a.com/ünicode-ö' })])
    expect(list(repo, 5, 1)).toEqual([])
  })
})
