// The dispatcher's store on PostgreSQL, for several API processes and workers sharing one
// database. Claims lock the rows they take with FOR UPDATE SKIP LOCKED, so concurrent workers
// each get different tasks without waiting on each other; a lease (claimed_by, claim_until) keeps a
// task claimed after the transaction, while the worker talks to the node.
import type pg from 'pg'
import { createVersionTable, pendingSteps, postgresDialect } from './migrations'
import {
  ADOPT_WHERE,
  ALL_STATUSES,
  COPY_COLUMNS,
  TASK_COLUMNS,
  machinesByNode,
  nodePatchColumns,
  nowLocal,
  planAssignments,
  taskListWhere,
  toMachine,
  toNode,
  toCopyDecision,
  toTask,
  type RawMachine
} from './rows'
import {
  DuplicateNodeError,
  type CopyDecision,
  type DistStore,
  type DistTaskRow,
  type DistTaskStatus,
  type MachineInfo,
  type NewDistTask,
  type NodePatch,
  type NodeRow,
  type TaskListQuery
} from './types'

type Row = Record<string, unknown>
type Queryable = pg.Pool | pg.PoolClient

// JSON columns are read as text, so both stores parse them in one place (rows.ts).
const NODE_COLUMNS = 'id, name, url, token, mode, enabled, last_seen, failures, status::text AS status'
const MACHINE_COLUMNS = 'node_id, name, platform, tags::text AS tags'

/** `?` placeholders → `$1, $2, …` (the shared WHERE builders use `?`). */
function numbered(sql: string, start = 1): string {
  let n = start
  return sql.replace(/\?/g, () => `$${n++}`)
}

/** The one row a statement must return (INSERT … RETURNING, a row just locked). */
function only<T>(rows: T[]): T {
  const r = rows[0]
  if (r === undefined) throw new Error('expected a row, the database returned none')
  return r
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string }).code === '23505'
}

export class PostgresDistStore implements DistStore {
  private readonly pool: pg.Pool

  /**
   * `pg` is loaded here, not at the top of the module: the bundled `aviary` command would otherwise
   * load it for every subcommand (`aviary serve` included), though only the dispatcher uses it.
   */
  static async connect(url: string, opts: { max?: number } = {}): Promise<PostgresDistStore> {
    const { default: driver } = await import('pg')
    return new PostgresDistStore(new driver.Pool({ connectionString: url, max: opts.max ?? 10 }))
  }

  private constructor(pool: pg.Pool) {
    this.pool = pool
    // An idle connection dropped by the server (restart, failover) is replaced on next use; without
    // a listener the pool's 'error' event would crash the process.
    this.pool.on('error', () => undefined)
  }

  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect()
    try {
      await c.query('BEGIN')
      const out = await fn(c)
      await c.query('COMMIT')
      return out
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined)
      throw err
    } finally {
      c.release()
    }
  }

  async migrate(): Promise<void> {
    await this.tx(async (c) => {
      // Several processes may start at once: one migrates, the others wait and find it done.
      await c.query("SELECT pg_advisory_xact_lock(hashtext('aviary-dist-migrate'))")
      await c.query(createVersionTable)
      const { rows } = await c.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_version')
      for (const step of pendingSteps(rows[0]?.v ?? 0)) {
        for (const sql of step.sql(postgresDialect)) await c.query(sql)
        await c.query('INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)', [step.version, step.name, nowLocal()])
      }
    })
  }

  async close(): Promise<void> {
    if (!this.pool.ended) await this.pool.end()
  }

  // ---- nodes

  private async nodeWhere(q: Queryable, where: string, param: unknown): Promise<NodeRow | null> {
    const { rows } = await q.query<Row>(`SELECT ${NODE_COLUMNS} FROM nodes WHERE ${where}`, [param])
    const r = rows[0]
    if (r === undefined) return null
    const m = await q.query<RawMachine>(`SELECT ${MACHINE_COLUMNS} FROM machines WHERE node_id = $1 ORDER BY id`, [r.id])
    return toNode(r, m.rows.map(toMachine))
  }

  private async insertMachines(c: pg.PoolClient, nodeId: number, machines: MachineInfo[]): Promise<void> {
    if (machines.length === 0) return
    await c.query(
      `INSERT INTO machines (node_id, name, platform, tags)
       SELECT $1, m.name, m.platform, m.tags::jsonb FROM unnest($2::text[], $3::text[], $4::text[]) AS m(name, platform, tags)`,
      [nodeId, machines.map((m) => m.name), machines.map((m) => m.platform), machines.map((m) => JSON.stringify(m.tags))]
    )
  }

  async addNode(n: { name: string; url: string; token?: string | null; mode?: string; machines: MachineInfo[] }): Promise<NodeRow> {
    try {
      return await this.tx(async (c) => {
        const { rows } = await c.query<{ id: number }>('INSERT INTO nodes (name, url, token, mode) VALUES ($1, $2, $3, $4) RETURNING id', [n.name, n.url, n.token ?? null, n.mode ?? 'normal'])
        const { id } = only(rows)
        await this.insertMachines(c, id, n.machines)
        return (await this.nodeWhere(c, 'id = $1', id)) as NodeRow
      })
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateNodeError(`There is already a node with this name: ${n.name}`)
      throw err
    }
  }

  async getNode(name: string): Promise<NodeRow | null> {
    return this.nodeWhere(this.pool, 'name = $1', name)
  }

  async getNodeById(id: number): Promise<NodeRow | null> {
    return this.nodeWhere(this.pool, 'id = $1', id)
  }

  async listNodes(o: { enabledOnly?: boolean } = {}): Promise<NodeRow[]> {
    const nodes = await this.pool.query<Row>(`SELECT ${NODE_COLUMNS} FROM nodes ${o.enabledOnly ? 'WHERE enabled' : ''} ORDER BY id`)
    const machines = machinesByNode((await this.pool.query<RawMachine>(`SELECT ${MACHINE_COLUMNS} FROM machines ORDER BY id`)).rows)
    return nodes.rows.map((r) => toNode(r, machines.get(Number(r.id)) ?? []))
  }

  async updateNode(name: string, patch: NodePatch): Promise<NodeRow | null> {
    const cols = nodePatchColumns(patch)
    const params: unknown[] = cols.map(([, v]) => v)
    const sets = cols.map(([c], i) => `${c} = $${i + 1}`)
    if (sets.length === 0) return this.getNode(name)
    try {
      const { rows } = await this.pool.query<{ id: number }>(`UPDATE nodes SET ${sets.join(', ')} WHERE name = $${params.length + 1} RETURNING id`, [...params, name])
      const r = rows[0]
      return r === undefined ? null : this.getNodeById(r.id)
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateNodeError(`There is already a node with this name: ${patch.name}`)
      throw err
    }
  }

  async setMachines(nodeId: number, machines: MachineInfo[]): Promise<void> {
    await this.tx(async (c) => {
      await c.query('DELETE FROM machines WHERE node_id = $1', [nodeId])
      await this.insertMachines(c, nodeId, machines)
    })
  }

  async recordContact(nodeId: number, ok: boolean, status?: unknown): Promise<NodeRow> {
    if (ok) {
      await this.pool.query('UPDATE nodes SET failures = 0, last_seen = $1, status = $2::jsonb WHERE id = $3', [nowLocal(), JSON.stringify(status ?? null), nodeId])
    } else {
      await this.pool.query('UPDATE nodes SET failures = failures + 1 WHERE id = $1', [nodeId])
    }
    const node = await this.getNodeById(nodeId)
    if (!node) throw new Error(`no dispatcher node with id ${nodeId}`)
    return node
  }

  // ---- tasks

  async createTask(t: NewDistTask): Promise<number> {
    const nodeId = t.node_id ?? null
    const { rows } = await this.pool.query<{ id: number }>(
      `INSERT INTO tasks (category, path, filename, url, package, timeout, priority, options, machine, platform, tags,
         custom, owner, memory, clock, enforce_timeout, node_id, status, submitted)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) RETURNING id`,
      [
        t.category, t.path, t.filename, t.url, t.package, t.timeout, t.priority, t.options, t.machine, t.platform, t.tags,
        t.custom, t.owner, t.memory, t.clock, t.enforce_timeout, nodeId, nodeId === null ? 'pending' : 'assigned', nowLocal()
      ]
    )
    return only(rows).id
  }

  async getTask(id: number): Promise<DistTaskRow | null> {
    const { rows } = await this.pool.query<Row>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = $1`, [id])
    const r = rows[0]
    return r === undefined ? null : toTask(r)
  }

  async listTasks(q: TaskListQuery): Promise<DistTaskRow[]> {
    const { where, params } = taskListWhere(q)
    const n = params.length
    // LIMIT NULL is no limit.
    const { rows } = await this.pool.query<Row>(
      `SELECT ${TASK_COLUMNS} FROM tasks ${numbered(where)} ORDER BY id LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...params, q.limit ?? null, q.offset ?? 0]
    )
    return rows.map(toTask)
  }

  async deleteTask(id: number): Promise<DistTaskRow | null> {
    return this.tx(async (c) => {
      const { rows } = await c.query<Row>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = $1 FOR UPDATE`, [id])
      const r = rows[0]
      if (r === undefined) return null
      const before = toTask(r)
      if (before.status === 'pending') await c.query('DELETE FROM tasks WHERE id = $1', [id])
      else await c.query("UPDATE tasks SET status = 'deleted', claimed_by = NULL, claim_until = NULL WHERE id = $1", [id])
      return before
    })
  }

  async countByStatus(): Promise<Record<DistTaskStatus, number>> {
    const counts = Object.fromEntries(ALL_STATUSES.map((s) => [s, 0])) as Record<DistTaskStatus, number>
    const { rows } = await this.pool.query<{ status: DistTaskStatus; n: number }>('SELECT status, COUNT(*)::int AS n FROM tasks GROUP BY status')
    for (const r of rows) counts[r.status] = r.n
    return counts
  }

  async queueByNode(): Promise<Map<number, number>> {
    const { rows } = await this.pool.query<{ node_id: number; n: number }>(
      "SELECT node_id, COUNT(*)::int AS n FROM tasks WHERE status IN ('assigned', 'processing') AND node_id IS NOT NULL GROUP BY node_id"
    )
    return new Map(rows.map((r) => [r.node_id, r.n]))
  }

  // ---- worker claims

  async assignPending(limit: number, candidates: (t: DistTaskRow) => number[], queue: Map<number, number>): Promise<DistTaskRow[]> {
    if (limit <= 0) return []
    return this.tx(async (c) => {
      const done: DistTaskRow[] = []
      let cursor: { priority: number; id: number } | null = null
      // Pages past tasks no node can serve; rows another worker has locked are skipped, not awaited.
      while (done.length < limit) {
        const after: string = cursor ? 'AND (priority < $2 OR (priority = $2 AND id > $3))' : ''
        const { rows }: pg.QueryResult<Row> = await c.query<Row>(
          `SELECT ${TASK_COLUMNS} FROM tasks WHERE status = 'pending' ${after}
           ORDER BY priority DESC, id LIMIT $1 FOR UPDATE SKIP LOCKED`,
          cursor ? [limit, cursor.priority, cursor.id] : [limit]
        )
        const tasks: DistTaskRow[] = rows.map(toTask)
        const last = tasks.at(-1)
        if (last === undefined) break
        cursor = { priority: last.priority, id: last.id }
        const plan = planAssignments(tasks, limit - done.length, candidates, queue)
        if (plan.length === 0) continue
        await c.query(
          `UPDATE tasks SET status = 'assigned', node_id = u.node_id
           FROM unnest($1::int[], $2::int[]) AS u(id, node_id) WHERE tasks.id = u.id`,
          [plan.map((p) => p.task.id), plan.map((p) => p.nodeId)]
        )
        for (const p of plan) done.push({ ...p.task, status: 'assigned', node_id: p.nodeId })
      }
      return done
    })
  }

  async claimForSubmit(nodeId: number, limit: number, worker: string, leaseSeconds: number): Promise<DistTaskRow[]> {
    const now = Date.now()
    const { rows } = await this.pool.query<Row>(
      `UPDATE tasks SET claimed_by = $1, claim_until = $2 WHERE id IN (
         SELECT id FROM tasks WHERE node_id = $3 AND status = 'assigned' AND (claim_until IS NULL OR claim_until < $4)
         ORDER BY priority DESC, id LIMIT $5 FOR UPDATE SKIP LOCKED)
       RETURNING ${TASK_COLUMNS}`,
      [worker, now + Math.round(leaseSeconds * 1000), nodeId, now, limit]
    )
    return rows.map(toTask).sort((a, b) => b.priority - a.priority || a.id - b.id)
  }

  async markSubmitted(taskId: number, nodeTaskId: number): Promise<void> {
    await this.markSubmittedMany([{ taskId, nodeTaskId }])
  }

  async markSubmittedMany(marks: Array<{ taskId: number; nodeTaskId: number }>): Promise<number[]> {
    if (marks.length === 0) return []
    // One statement for the lot. Only an assigned task moves on: one deleted or requeued meanwhile
    // keeps its new state.
    const { rows } = await this.pool.query<{ id: number }>(
      `UPDATE tasks SET status = 'processing', node_task_id = u.node_task_id, delegated = $3, claimed_by = NULL, claim_until = NULL
       FROM unnest($1::int[], $2::int[]) AS u(id, node_task_id) WHERE tasks.id = u.id AND tasks.status = 'assigned'
       RETURNING tasks.id`,
      [marks.map((m) => m.taskId), marks.map((m) => m.nodeTaskId), nowLocal()]
    )
    return rows.map((r) => r.id)
  }

  async releaseClaim(taskId: number): Promise<void> {
    await this.pool.query('UPDATE tasks SET claimed_by = NULL, claim_until = NULL WHERE id = $1', [taskId])
  }

  async leaseHolders(): Promise<string[]> {
    const { rows } = await this.pool.query<{ claimed_by: string }>(
      'SELECT DISTINCT claimed_by FROM tasks WHERE claimed_by IS NOT NULL AND claim_until >= $1', [Date.now()]
    )
    return rows.map((r) => r.claimed_by)
  }

  async releaseLeases(worker: string): Promise<number> {
    return (await this.pool.query('UPDATE tasks SET claimed_by = NULL, claim_until = NULL WHERE claimed_by = $1', [worker])).rowCount ?? 0
  }

  async claimForFetch(nodeId: number, nodeTaskId: number, worker: string, leaseSeconds: number): Promise<DistTaskRow | null> {
    const now = Date.now()
    // The newest wins when a node reused an id (as Cuckoo's dispatcher does).
    const { rows } = await this.pool.query<Row>(
      `UPDATE tasks SET claimed_by = $1, claim_until = $2 WHERE id = (
         SELECT id FROM tasks WHERE node_id = $3 AND node_task_id = $4 AND status = 'processing'
           AND (claim_until IS NULL OR claim_until < $5)
         ORDER BY id DESC LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING ${TASK_COLUMNS}`,
      [worker, now + Math.round(leaseSeconds * 1000), nodeId, nodeTaskId, now]
    )
    const r = rows[0]
    return r === undefined ? null : toTask(r)
  }

  async knowsNodeTask(nodeId: number, nodeTaskId: number): Promise<boolean> {
    const { rowCount } = await this.pool.query('SELECT 1 FROM tasks WHERE node_id = $1 AND node_task_id = $2 LIMIT 1', [nodeId, nodeTaskId])
    return (rowCount ?? 0) > 0
  }

  async markFinished(taskId: number, started: string | null): Promise<void> {
    await this.pool.query(
      `UPDATE tasks SET status = 'finished', started = $1, completed = $2, claimed_by = NULL, claim_until = NULL
       WHERE id = $3 AND status = 'processing'`,
      [started, nowLocal(), taskId]
    )
  }

  async requeueNode(nodeId: number): Promise<number> {
    const r = await this.pool.query(
      `UPDATE tasks SET status = 'pending', node_id = NULL, node_task_id = NULL, delegated = NULL, claimed_by = NULL, claim_until = NULL
       WHERE node_id = $1 AND status IN ('assigned', 'processing')`,
      [nodeId]
    )
    return r.rowCount ?? 0
  }

  // ---- copies found on nodes

  async adoptCopy(c: { marker: string; taskId: number; nodeId: number; nodeTaskId: number; worker: string }): Promise<boolean> {
    try {
      return await this.tx(async (q) => {
        // Adoptions of one node task wait for each other, so each sees whether another one took it
        // (the NOT EXISTS of ADOPT_WHERE reads what was committed before the statement began).
        await q.query('SELECT pg_advisory_xact_lock($1::int, $2::int)', [c.nodeId, c.nodeTaskId])
        // The mark's row first: a concurrent abandonCopy of the same mark waits for this transaction.
        const ins = await q.query(
          `INSERT INTO node_copies (marker, task_id, node_id, outcome, node_task_id, decided) VALUES ($1, $2, $3, 'adopted', $4, $5)
           ON CONFLICT (marker) DO NOTHING`,
          [c.marker, c.taskId, c.nodeId, c.nodeTaskId, nowLocal()]
        )
        if (ins.rowCount !== 1) throw new NotAdopted()
        const moved = await q.query(
          numbered(`UPDATE tasks SET status = 'processing', node_task_id = ?, delegated = ?, claimed_by = NULL, claim_until = NULL WHERE ${ADOPT_WHERE}`),
          [c.nodeTaskId, nowLocal(), c.taskId, c.nodeId, c.worker, c.nodeId, c.nodeTaskId]
        )
        if (moved.rowCount !== 1) throw new NotAdopted()
        return true
      })
    } catch (err) {
      if (err instanceof NotAdopted) return false
      throw err
    }
  }

  async abandonCopy(c: { marker: string; taskId: number; nodeId: number }): Promise<CopyDecision> {
    // An insert that meets a row being written by another transaction waits for it to end.
    await this.pool.query(
      `INSERT INTO node_copies (marker, task_id, node_id, outcome, node_task_id, decided) VALUES ($1, $2, $3, 'abandoned', NULL, $4)
       ON CONFLICT (marker) DO NOTHING`,
      [c.marker, c.taskId, c.nodeId, nowLocal()]
    )
    return (await this.copyDecision(c.marker)) as CopyDecision
  }

  async copyDecision(marker: string): Promise<CopyDecision | null> {
    const { rows } = await this.pool.query<Row>(`SELECT ${COPY_COLUMNS} FROM node_copies WHERE marker = $1`, [marker])
    const r = rows[0]
    return r === undefined ? null : toCopyDecision(r)
  }
}

/** Rolls adoptCopy's transaction back: the mark was decided before, or the task cannot take the copy. */
class NotAdopted extends Error {}
