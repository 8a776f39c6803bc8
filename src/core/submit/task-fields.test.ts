// The service's side of the task fields (src/shared/api/task-fields.ts): each one has its column in
// a real database, and each one is in the task's JSON that the API serves.
import { afterAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { openDatabase } from '../db/database'
import { TASK_FIELDS } from '../../shared/api/task-fields'

const dir = mkdtempSync(path.join(tmpdir(), 'aviary-task-fields-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('the task fields in the database', () => {
  it('have a column each, and are all in the JSON the API serves', () => {
    const db = openDatabase(path.join(dir, 'aviary.db'))
    try {
      const columns = db.prepare<[], { name: string }>('PRAGMA table_info(tasks)').all().map((c) => c.name)
      for (const field of TASK_FIELDS) expect(columns, field).toContain(field)
      db.prepare("INSERT INTO tasks (category, target, clock, added_on) VALUES ('url', 'http://example.com/', '2026-01-01 00:00:00', '2026-01-01 00:00:00')").run()
      const json = JSON.parse(db.prepare<[], string>('SELECT json FROM task_api_json').pluck().get()!) as Record<string, unknown>
      for (const field of TASK_FIELDS) expect(Object.keys(json), field).toContain(field)
    } finally {
      db.close()
    }
  })
})
