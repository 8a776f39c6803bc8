// Picks the dispatcher's store from `--db`: nothing, `sqlite://…` or a file path → SQLite;
// `postgresql://…` / `postgres://…` → PostgreSQL. SQLAlchemy-style URLs (what Cuckoo's `--db`
// takes) are accepted: `sqlite:///rel.db`, `sqlite:////abs/dist.db`, `postgresql+psycopg2://…`.
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { PostgresDistStore } from './postgres'
import { SqliteDistStore } from './sqlite'
import type { DistStore } from './types'

export type { DistStore } from './types'
export { DuplicateNodeError } from './types'
export { SqliteDistStore } from './sqlite'
export { PostgresDistStore } from './postgres'

export type StoreTarget = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string }

/** Where `--db` points, without opening anything. Throws on a URL scheme it does not know. */
export function resolveStoreTarget(db: string | undefined, dataDir: string): StoreTarget {
  const value = db?.trim() ?? ''
  if (value === '') return { kind: 'sqlite', file: path.join(dataDir, 'dist.db') }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase()
  if (scheme === undefined) return { kind: 'sqlite', file: path.resolve(value) }
  const base = scheme.split('+')[0]
  if (base === 'postgresql' || base === 'postgres') {
    // pg understands both schemes, not SQLAlchemy's "+driver" suffix.
    return { kind: 'postgres', url: `postgresql://${value.slice(scheme.length + 3)}` }
  }
  if (base === 'sqlite') {
    // SQLAlchemy: sqlite:///relative.db, sqlite:////absolute.db; sqlite:// alone is the default file.
    const rest = value.slice(scheme.length + 3)
    if (rest === '' || rest === '/') return { kind: 'sqlite', file: path.join(dataDir, 'dist.db') }
    return { kind: 'sqlite', file: path.resolve(rest.startsWith('/') ? rest.slice(1) : rest) }
  }
  throw new Error(`unsupported database URL scheme "${scheme}": use a file path, sqlite:///… or postgresql://…`)
}

/** Opens the store `--db` names and brings its schema up to date. */
export async function openStore(db: string | undefined, dataDir: string): Promise<DistStore> {
  const target = resolveStoreTarget(db, dataDir)
  let store: DistStore
  if (target.kind === 'sqlite') {
    mkdirSync(path.dirname(target.file), { recursive: true })
    store = new SqliteDistStore(target.file)
  } else {
    store = await PostgresDistStore.connect(target.url)
  }
  try {
    await store.migrate()
  } catch (err) {
    await store.close().catch(() => undefined)
    throw err
  }
  return store
}
