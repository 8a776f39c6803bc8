// The dispatcher's schema: one list of versioned steps for SQLite and PostgreSQL. The few places
// where the two dialects differ (key generation, booleans, JSON) are the fields of `Dialect`, so a
// step is written once. A `schema_version` table records each applied step. Never edit a released
// step: add the next version.

export interface Dialect {
  name: 'sqlite' | 'postgres'
  /** An auto-generated integer primary key that never reuses a deleted id. */
  serialKey: string
  bool: string
  true: string
  false: string
  json: string
}

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  // AUTOINCREMENT: a deleted task's id is never handed out again, so its old report folder can
  // never be mistaken for a new task's.
  serialKey: 'INTEGER PRIMARY KEY AUTOINCREMENT',
  bool: 'INTEGER',
  true: '1',
  false: '0',
  json: 'TEXT'
}

export const postgresDialect: Dialect = {
  name: 'postgres',
  // int4 (not bigserial) so pg hands ids back as numbers, not strings.
  serialKey: 'SERIAL PRIMARY KEY',
  bool: 'BOOLEAN',
  true: 'TRUE',
  false: 'FALSE',
  json: 'JSONB'
}

export interface MigrationStep {
  version: number
  name: string
  /** Statements, run in order inside one transaction. */
  sql: (d: Dialect) => string[]
}

export const migrationSteps: MigrationStep[] = [
  {
    version: 1,
    name: 'nodes, machines, tasks',
    sql: (d) => [
      `CREATE TABLE nodes (
        id         ${d.serialKey},
        name       TEXT NOT NULL UNIQUE,
        url        TEXT NOT NULL,
        mode       TEXT NOT NULL DEFAULT 'normal',
        enabled    ${d.bool} NOT NULL DEFAULT ${d.true},
        last_seen  TEXT,
        failures   INTEGER NOT NULL DEFAULT 0,
        status     ${d.json}
      )`,
      `CREATE TABLE machines (
        id       ${d.serialKey},
        node_id  INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
        name     TEXT NOT NULL,
        platform TEXT NOT NULL,
        tags     ${d.json} NOT NULL
      )`,
      'CREATE INDEX machines_node ON machines(node_id)',
      `CREATE TABLE tasks (
        id              ${d.serialKey},
        category        TEXT NOT NULL,
        path            TEXT,
        filename        TEXT,
        url             TEXT,
        package         TEXT,
        timeout         INTEGER,
        priority        INTEGER NOT NULL DEFAULT 1,
        options         TEXT,
        machine         TEXT,
        platform        TEXT,
        tags            TEXT,
        custom          TEXT,
        owner           TEXT,
        memory          TEXT,
        clock           TEXT,
        enforce_timeout TEXT,
        node_id         INTEGER REFERENCES nodes(id),
        node_task_id    INTEGER,
        status          TEXT NOT NULL,
        submitted       TEXT NOT NULL,
        delegated       TEXT,
        started         TEXT,
        completed       TEXT,
        -- A worker's lease on the task while it submits or fetches it (epoch milliseconds).
        claimed_by      TEXT,
        claim_until     BIGINT
      )`,
      // The scheduler's scan (pending, best first) and the per-node loops.
      'CREATE INDEX tasks_status_priority ON tasks(status, priority DESC, id)',
      'CREATE INDEX tasks_node_status ON tasks(node_id, status)',
      'CREATE INDEX tasks_node_task ON tasks(node_id, node_task_id)',
      'CREATE INDEX tasks_owner ON tasks(owner)'
    ]
  },
  {
    version: 2,
    name: 'node API tokens',
    // A node whose API asks for `Authorization: Bearer` (Cuckoo 2.0.7 generates a token on install).
    sql: () => ['ALTER TABLE nodes ADD COLUMN token TEXT']
  },
  {
    version: 3,
    name: 'copies found on nodes',
    // One row per mark (worker/marker.ts) of a submission cut short whose node-side copy was taken
    // over by its task (adopted, with the node task id) or given up (abandoned: deleted on the node
    // when seen). The primary key makes the decision once, whoever asks first.
    sql: () => [
      `CREATE TABLE node_copies (
        marker       TEXT PRIMARY KEY,
        task_id      INTEGER NOT NULL,
        node_id      INTEGER NOT NULL,
        outcome      TEXT NOT NULL,
        node_task_id INTEGER,
        decided      TEXT NOT NULL
      )`
    ]
  }
]

export const latestVersion = migrationSteps.at(-1)?.version ?? 0

export const createVersionTable = `CREATE TABLE IF NOT EXISTS schema_version (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`

/** The steps still to apply after `current`; refuses a database written by a newer Aviary. */
export function pendingSteps(current: number): MigrationStep[] {
  if (current > latestVersion) {
    throw new Error(`the dispatcher database was written by a newer Aviary (schema ${current}, this one knows ${latestVersion})`)
  }
  return migrationSteps.filter((s) => s.version > current)
}
