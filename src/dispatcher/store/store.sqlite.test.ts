// The store contract on SQLite files, plus how `--db` picks the store.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openStore, resolveStoreTarget } from './index'
import { storeContract, task } from './store.contract'
import { createVersionTable, migrationSteps, sqliteDialect } from './migrations'

const dir = mkdtempSync(path.join(os.tmpdir(), 'aviary-dist-sqlite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0

storeContract('sqlite', () => ({ newDb: async () => path.join(dir, `dist-${++n}.db`) }))

describe('openStore', () => {
  it('resolves --db to SQLite or PostgreSQL', () => {
    expect(resolveStoreTarget(undefined, '/data')).toEqual({ kind: 'sqlite', file: '/data/dist.db' })
    expect(resolveStoreTarget('', '/data')).toEqual({ kind: 'sqlite', file: '/data/dist.db' })
    expect(resolveStoreTarget('/x/d.db', '/data')).toEqual({ kind: 'sqlite', file: '/x/d.db' })
    expect(resolveStoreTarget('d.db', '/data')).toEqual({ kind: 'sqlite', file: path.resolve('d.db') })
    expect(resolveStoreTarget('sqlite:////x/d.db', '/data')).toEqual({ kind: 'sqlite', file: '/x/d.db' })
    expect(resolveStoreTarget('sqlite:///d.db', '/data')).toEqual({ kind: 'sqlite', file: path.resolve('d.db') })
    expect(resolveStoreTarget('sqlite://', '/data')).toEqual({ kind: 'sqlite', file: '/data/dist.db' })
    expect(resolveStoreTarget('postgresql://u:p@h:5433/db', '/data')).toEqual({ kind: 'postgres', url: 'postgresql://u:p@h:5433/db' })
    expect(resolveStoreTarget('postgres://u@h/db', '/data')).toEqual({ kind: 'postgres', url: 'postgresql://u@h/db' })
    expect(resolveStoreTarget('postgresql+psycopg2://u@h/db', '/data')).toEqual({ kind: 'postgres', url: 'postgresql://u@h/db' })
    expect(() => resolveStoreTarget('mysql://u@h/db', '/data')).toThrow(/mysql/)
  })

  it('creates the default file inside the data dir, and a newer schema is refused', async () => {
    const data = path.join(dir, 'nested', 'data')
    const s = await openStore(undefined, data)
    const id = await s.createTask(task())
    await s.close()
    const again = await openStore(`sqlite:///${path.join(data, 'dist.db')}`, '/unused')
    expect((await again.getTask(id))?.id).toBe(id)
    await again.close()

    const Database = (await import('better-sqlite3')).default
    const raw = new Database(path.join(data, 'dist.db'))
    raw.prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (99, 'future', '')").run()
    raw.close()
    await expect(openStore(path.join(data, 'dist.db'), '/unused')).rejects.toThrow(/newer Aviary/)
  })

  it('upgrades a database of the first schema in place, keeping its nodes and tasks', async () => {
    const file = path.join(dir, 'v1.db')
    const Database = (await import('better-sqlite3')).default
    const raw = new Database(file)
    raw.exec(createVersionTable)
    for (const stmt of migrationSteps[0]!.sql(sqliteDialect)) raw.exec(stmt)
    raw.prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (1, 'v1', '')").run()
    raw.prepare("INSERT INTO nodes (name, url) VALUES ('old', 'http://old:8090/')").run()
    raw.prepare("INSERT INTO tasks (category, url, status, submitted) VALUES ('url', 'http://x/', 'pending', '2026-01-01 00:00:00')").run()
    raw.close()
    const s = await openStore(file, '/unused')
    expect(await s.getNode('old')).toMatchObject({ url: 'http://old:8090/', token: null, enabled: true })
    expect(await s.getTask(1)).toMatchObject({ url: 'http://x/', status: 'pending' })
    expect((await s.updateNode('old', { token: 't' }))?.token).toBe('t')
    await s.close()
  })
})
