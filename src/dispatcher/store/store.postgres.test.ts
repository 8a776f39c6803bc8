// The store contract on a real PostgreSQL (a throwaway cluster of test/postgres.ts), one database
// per test.
import { describe, expect, it } from 'vitest'
import pg from 'pg'
import { usePostgres } from '../../../test/postgres'
import { openStore } from './index'
import { storeContract, task } from './store.contract'
import { migrationSteps } from './migrations'

const cluster = usePostgres()

storeContract('postgres', () => ({ newDb: () => cluster.newDatabase() }))

describe('PostgreSQL specifics', () => {
  it('several processes migrating at once create the schema once', async () => {
    const url = await cluster.newDatabase()
    const stores = await Promise.all([0, 1, 2, 3].map(() => openStore(url, '/unused')))
    await Promise.all(stores.map((s) => s.close()))
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    try {
      const { rows } = await c.query<{ version: number }>('SELECT version FROM schema_version ORDER BY version')
      expect(rows.map((r) => r.version)).toEqual(migrationSteps.map((s) => s.version))
      await c.query("INSERT INTO schema_version (version, name, applied_at) VALUES (99, 'future', '')")
    } finally {
      await c.end()
    }
    await expect(openStore(url, '/unused')).rejects.toThrow(/newer Aviary/)
  })

  it('opens postgres:// and SQLAlchemy postgresql+driver:// URLs too', async () => {
    const url = await cluster.newDatabase()
    for (const alias of [url.replace(/^postgresql:/, 'postgres:'), url.replace(/^postgresql:/, 'postgresql+psycopg2:')]) {
      const s = await openStore(alias, '/unused')
      try {
        expect(await s.createTask({ ...task(), owner: alias })).toBeGreaterThan(0)
      } finally {
        await s.close()
      }
    }
    const s = await openStore(url, '/unused')
    expect((await s.listTasks({})).length).toBe(2)
    await s.close()
  })
})
