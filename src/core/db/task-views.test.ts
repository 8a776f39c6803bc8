// The read-side cache of tasks must never serve a stale task: changes through this connection
// reach it through TEMP triggers, changes through another connection through data_version.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { openDatabase, type Db } from './database'
import { TasksRepository, type NewTask } from './tasks.repository'

const task = (target: string): NewTask => ({
  category: 'url', target, sample_id: null, package: null, timeout: 0, priority: 1, options: null, machine: null,
  platform: null, tags: [], custom: null, owner: '', memory: false, enforce_timeout: false, clock: null, submit_id: null, errors: []
})
const turn = () => new Promise((r) => setImmediate(r))
const view = (repo: TasksRepository, id: number) => JSON.parse(repo.viewBody(id)!.toString()).task as Record<string, unknown>
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
    db.prepare(`UPDATE tasks SET status = 'reported', completed_on = '2026-01-01 00:00:00' WHERE id = ?`).run(ids[0])
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

  it('stays within its byte budget and still answers every task', async () => {
    const repo = new TasksRepository(db, 8 * 1024) // room for a handful of tasks only
    const ids = Array.from({ length: 300 }, (_, i) => repo.insert(task(`http://a.com/${'x'.repeat(i % 50)}${i}`)))
    for (let round = 0; round < 3; round++) {
      for (const id of ids) expect(view(repo, id).id).toBe(id)
      const page = list(repo, 100, 150)
      expect(page.map((t) => t.id)).toEqual(ids.slice(150, 250))
    }
    const views = (repo as unknown as { views: { slots: (Buffer | undefined)[] } }).views
    const held = views.slots.reduce((n, b) => n + (b?.length ?? 0), 0)
    expect(held).toBeLessThanOrEqual(8 * 1024 + 2048)
  })

  it('builds list bodies that are valid JSON for empty and one-task pages', () => {
    const repo = new TasksRepository(db, 1 << 20)
    expect(repo.listBody({}).toString()).toBe('{"tasks":[]}')
    const id = repo.insert(task('http://a.com/ünicode-ö'))
    expect(list(repo, 1, 0)).toEqual([expect.objectContaining({ id, target: 'http://a.com/ünicode-ö' })])
    expect(list(repo, 5, 1)).toEqual([])
  })
})
