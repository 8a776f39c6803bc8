// The dispatcher's store on SQLite (the default): one file in WAL mode. better-sqlite3 is
// synchronous, so every method does its work in one go; claims run in BEGIN IMMEDIATE transactions,
// which take the single write lock up front, so two connections (or processes) on one file never
// read the same free task and both take it.
import Database from 'better-sqlite3'
import { createVersionTable, pendingSteps, sqliteDialect } from './migrations'
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

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE'
}

// Only an assigned task moves on: one deleted or requeued meanwhile keeps its new state.
const MARK_SUBMITTED = `UPDATE tasks SET status = 'processing', node_task_id = ?, delegated = ?, claimed_by = NULL, claim_until = NULL
  WHERE id = ? AND status = 'assigned'`

export class SqliteDistStore implements DistStore {
  private readonly db: Database.Database
  /** Compiled statements by SQL text (a handful of shapes): compiling costs more than running them. */
  private readonly statements = new Map<string, Database.Statement>()

  /** Opens (creating) the file; call migrate() before use. */
  constructor(file: string) {
    this.db = new Database(file)
    this.db.pragma('journal_mode = WAL')
    this.db.pragma('synchronous = NORMAL')
    this.db.pragma('foreign_keys = ON')
    // Other connections (API processes, a dist-worker) wait for the write lock instead of failing.
    this.db.pragma('busy_timeout = 10000')
  }

  private prepare(sql: string): Database.Statement {
    let st = this.statements.get(sql)
    if (!st) {
      st = this.db.prepare(sql)
      this.statements.set(sql, st)
    }
    return st
  }

  async migrate(): Promise<void> {
    this.db.exec(createVersionTable)
    this.db
      .transaction(() => {
        const row = this.prepare('SELECT MAX(version) AS v FROM schema_version').get() as { v: number | null }
        for (const step of pendingSteps(row.v ?? 0)) {
          for (const sql of step.sql(sqliteDialect)) this.db.exec(sql)
          this.prepare('INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)').run(step.version, step.name, nowLocal())
        }
      })
      .immediate()
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close()
  }

  // ---- nodes

  private machinesOf(nodeId: number): MachineInfo[] {
    return (this.prepare('SELECT node_id, name, platform, tags FROM machines WHERE node_id = ? ORDER BY id').all(nodeId) as RawMachine[]).map(toMachine)
  }

  private nodeWhere(where: string, param: unknown): NodeRow | null {
    const r = this.prepare(`SELECT * FROM nodes WHERE ${where}`).get(param) as Row | undefined
    return r ? toNode(r, this.machinesOf(Number(r.id))) : null
  }

  private insertMachines(nodeId: number, machines: MachineInfo[]): void {
    const ins = this.prepare('INSERT INTO machines (node_id, name, platform, tags) VALUES (?, ?, ?, ?)')
    for (const m of machines) ins.run(nodeId, m.name, m.platform, JSON.stringify(m.tags))
  }

  async addNode(n: { name: string; url: string; token?: string | null; mode?: string; machines: MachineInfo[] }): Promise<NodeRow> {
    try {
      const id = this.db
        .transaction(() => {
          const r = this.prepare('INSERT INTO nodes (name, url, token, mode) VALUES (?, ?, ?, ?)').run(n.name, n.url, n.token ?? null, n.mode ?? 'normal')
          this.insertMachines(Number(r.lastInsertRowid), n.machines)
          return Number(r.lastInsertRowid)
        })
        .immediate()
      return this.nodeWhere('id = ?', id) as NodeRow
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateNodeError(`There is already a node with this name: ${n.name}`)
      throw err
    }
  }

  async getNode(name: string): Promise<NodeRow | null> {
    return this.nodeWhere('name = ?', name)
  }

  async getNodeById(id: number): Promise<NodeRow | null> {
    return this.nodeWhere('id = ?', id)
  }

  async listNodes(o: { enabledOnly?: boolean } = {}): Promise<NodeRow[]> {
    const nodes = this.prepare(`SELECT * FROM nodes ${o.enabledOnly ? 'WHERE enabled = 1' : ''} ORDER BY id`).all() as Row[]
    const machines = machinesByNode(this.prepare('SELECT node_id, name, platform, tags FROM machines ORDER BY id').all() as RawMachine[])
    return nodes.map((r) => toNode(r, machines.get(Number(r.id)) ?? []))
  }

  async updateNode(name: string, patch: NodePatch): Promise<NodeRow | null> {
    const cols = nodePatchColumns(patch)
    const node = this.nodeWhere('name = ?', name)
    if (!node || cols.length === 0) return node
    try {
      this.prepare(`UPDATE nodes SET ${cols.map(([c]) => `${c} = ?`).join(', ')} WHERE id = ?`)
        .run(...cols.map(([, v]) => (typeof v === 'boolean' ? Number(v) : v)), node.id)
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateNodeError(`There is already a node with this name: ${patch.name}`)
      throw err
    }
    return this.nodeWhere('id = ?', node.id)
  }

  async setMachines(nodeId: number, machines: MachineInfo[]): Promise<void> {
    this.db
      .transaction(() => {
        this.prepare('DELETE FROM machines WHERE node_id = ?').run(nodeId)
        this.insertMachines(nodeId, machines)
      })
      .immediate()
  }

  async recordContact(nodeId: number, ok: boolean, status?: unknown): Promise<NodeRow> {
    if (ok) {
      this.prepare('UPDATE nodes SET failures = 0, last_seen = ?, status = ? WHERE id = ?').run(nowLocal(), JSON.stringify(status ?? null), nodeId)
    } else {
      this.prepare('UPDATE nodes SET failures = failures + 1 WHERE id = ?').run(nodeId)
    }
    const node = this.nodeWhere('id = ?', nodeId)
    if (!node) throw new Error(`no dispatcher node with id ${nodeId}`)
    return node
  }

  // ---- tasks

  async createTask(t: NewDistTask): Promise<number> {
    const nodeId = t.node_id ?? null
    const r = this.prepare(
        `INSERT INTO tasks (category, path, filename, url, package, timeout, priority, options, machine, platform, tags,
           custom, owner, memory, clock, enforce_timeout, node_id, status, submitted)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
      )
      .run(
        t.category, t.path, t.filename, t.url, t.package, t.timeout, t.priority, t.options, t.machine, t.platform, t.tags,
        t.custom, t.owner, t.memory, t.clock, t.enforce_timeout, nodeId, nodeId === null ? 'pending' : 'assigned', nowLocal()
      )
    return Number(r.lastInsertRowid)
  }

  private task(id: number): DistTaskRow | null {
    const r = this.prepare(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ?`).get(id) as Row | undefined
    return r ? toTask(r) : null
  }

  async getTask(id: number): Promise<DistTaskRow | null> {
    return this.task(id)
  }

  async listTasks(q: TaskListQuery): Promise<DistTaskRow[]> {
    const { where, params } = taskListWhere(q)
    // SQLite needs a LIMIT for an OFFSET; -1 means none.
    const rows = this.prepare(`SELECT ${TASK_COLUMNS} FROM tasks ${where} ORDER BY id LIMIT ? OFFSET ?`)
      .all(...params, q.limit ?? -1, q.offset ?? 0) as Row[]
    return rows.map(toTask)
  }

  async deleteTask(id: number): Promise<DistTaskRow | null> {
    return this.db
      .transaction(() => {
        const before = this.task(id)
        if (!before) return null
        if (before.status === 'pending') this.prepare('DELETE FROM tasks WHERE id = ?').run(id)
        else this.prepare("UPDATE tasks SET status = 'deleted', claimed_by = NULL, claim_until = NULL WHERE id = ?").run(id)
        return before
      })
      .immediate()
  }

  async countByStatus(): Promise<Record<DistTaskStatus, number>> {
    const counts = Object.fromEntries(ALL_STATUSES.map((s) => [s, 0])) as Record<DistTaskStatus, number>
    for (const r of this.prepare('SELECT status, COUNT(*) AS n FROM tasks GROUP BY status').all() as Array<{ status: DistTaskStatus; n: number }>) {
      counts[r.status] = r.n
    }
    return counts
  }

  async queueByNode(): Promise<Map<number, number>> {
    const rows = this.prepare("SELECT node_id, COUNT(*) AS n FROM tasks WHERE status IN ('assigned', 'processing') AND node_id IS NOT NULL GROUP BY node_id")
      .all() as Array<{ node_id: number; n: number }>
    return new Map(rows.map((r) => [r.node_id, r.n]))
  }

  // ---- worker claims

  async assignPending(limit: number, candidates: (t: DistTaskRow) => number[], queue: Map<number, number>): Promise<DistTaskRow[]> {
    if (limit <= 0) return []
    const page = this.prepare(
      `SELECT ${TASK_COLUMNS} FROM tasks WHERE status = 'pending' AND (priority < ? OR (priority = ? AND id > ?))
       ORDER BY priority DESC, id LIMIT ?`
    )
    const assign = this.prepare("UPDATE tasks SET status = 'assigned', node_id = ? WHERE id = ? AND status = 'pending'")
    return this.db
      .transaction(() => {
        const done: DistTaskRow[] = []
        // Pages past tasks no node can serve, so they do not block the ones behind them.
        let cursor = { priority: Number.MAX_SAFE_INTEGER, id: 0 }
        while (done.length < limit) {
          const rows = (page.all(cursor.priority, cursor.priority, cursor.id, limit) as Row[]).map(toTask)
          const last = rows.at(-1)
          if (last === undefined) break
          cursor = { priority: last.priority, id: last.id }
          for (const { task, nodeId } of planAssignments(rows, limit - done.length, candidates, queue)) {
            assign.run(nodeId, task.id)
            done.push({ ...task, status: 'assigned', node_id: nodeId })
          }
        }
        return done
      })
      .immediate()
  }

  async claimForSubmit(nodeId: number, limit: number, worker: string, leaseSeconds: number): Promise<DistTaskRow[]> {
    const now = Date.now()
    const rows = this.db
      .transaction(
        () =>
          this.prepare(
              `UPDATE tasks SET claimed_by = ?, claim_until = ? WHERE id IN (
                 SELECT id FROM tasks WHERE node_id = ? AND status = 'assigned' AND (claim_until IS NULL OR claim_until < ?)
                 ORDER BY priority DESC, id LIMIT ?)
               RETURNING ${TASK_COLUMNS}`
            )
            .all(worker, now + Math.round(leaseSeconds * 1000), nodeId, now, limit) as Row[]
      )
      .immediate()
    return rows.map(toTask).sort((a, b) => b.priority - a.priority || a.id - b.id)
  }

  async markSubmitted(taskId: number, nodeTaskId: number): Promise<void> {
    await this.markSubmittedMany([{ taskId, nodeTaskId }])
  }

  async markSubmittedMany(marks: Array<{ taskId: number; nodeTaskId: number }>): Promise<number[]> {
    if (marks.length === 0) return []
    const mark = this.prepare(MARK_SUBMITTED)
    const at = nowLocal()
    return this.db.transaction(() => marks.filter((m) => mark.run(m.nodeTaskId, at, m.taskId).changes === 1).map((m) => m.taskId)).immediate()
  }

  async releaseClaim(taskId: number): Promise<void> {
    this.prepare('UPDATE tasks SET claimed_by = NULL, claim_until = NULL WHERE id = ?').run(taskId)
  }

  async leaseHolders(): Promise<string[]> {
    const rows = this.prepare('SELECT DISTINCT claimed_by FROM tasks WHERE claimed_by IS NOT NULL AND claim_until >= ?').all(Date.now()) as Array<{ claimed_by: string }>
    return rows.map((r) => r.claimed_by)
  }

  async releaseLeases(worker: string): Promise<number> {
    return this.prepare('UPDATE tasks SET claimed_by = NULL, claim_until = NULL WHERE claimed_by = ?').run(worker).changes
  }

  async claimForFetch(nodeId: number, nodeTaskId: number, worker: string, leaseSeconds: number): Promise<DistTaskRow | null> {
    const now = Date.now()
    const r = this.db
      .transaction(
        () =>
          // The newest wins when a node reused an id (as Cuckoo's dispatcher does).
          this.prepare(
              `UPDATE tasks SET claimed_by = ?, claim_until = ? WHERE id = (
                 SELECT id FROM tasks WHERE node_id = ? AND node_task_id = ? AND status = 'processing'
                   AND (claim_until IS NULL OR claim_until < ?)
                 ORDER BY id DESC LIMIT 1)
               RETURNING ${TASK_COLUMNS}`
            )
            .get(worker, now + Math.round(leaseSeconds * 1000), nodeId, nodeTaskId, now) as Row | undefined
      )
      .immediate()
    return r ? toTask(r) : null
  }

  async knowsNodeTask(nodeId: number, nodeTaskId: number): Promise<boolean> {
    return this.prepare('SELECT 1 FROM tasks WHERE node_id = ? AND node_task_id = ? LIMIT 1').get(nodeId, nodeTaskId) !== undefined
  }

  async markFinished(taskId: number, started: string | null): Promise<void> {
    this.prepare(
        `UPDATE tasks SET status = 'finished', started = ?, completed = ?, claimed_by = NULL, claim_until = NULL
         WHERE id = ? AND status = 'processing'`
      )
      .run(started, nowLocal(), taskId)
  }

  async requeueNode(nodeId: number): Promise<number> {
    const r = this.prepare(
        `UPDATE tasks SET status = 'pending', node_id = NULL, node_task_id = NULL, delegated = NULL, claimed_by = NULL, claim_until = NULL
         WHERE node_id = ? AND status IN ('assigned', 'processing')`
      )
      .run(nodeId)
    return r.changes
  }

  // ---- copies found on nodes

  async adoptCopy(c: { marker: string; taskId: number; nodeId: number; nodeTaskId: number; worker: string }): Promise<boolean> {
    return this.db
      .transaction(() => {
        if (this.prepare('SELECT 1 FROM node_copies WHERE marker = ?').get(c.marker) !== undefined) return false
        const moved = this.prepare(
            `UPDATE tasks SET status = 'processing', node_task_id = ?, delegated = ?, claimed_by = NULL, claim_until = NULL WHERE ${ADOPT_WHERE}`
          )
          .run(c.nodeTaskId, nowLocal(), c.taskId, c.nodeId, c.worker, c.nodeId, c.nodeTaskId)
        if (moved.changes !== 1) return false
        this.prepare("INSERT INTO node_copies (marker, task_id, node_id, outcome, node_task_id, decided) VALUES (?, ?, ?, 'adopted', ?, ?)")
          .run(c.marker, c.taskId, c.nodeId, c.nodeTaskId, nowLocal())
        return true
      })
      .immediate()
  }

  async abandonCopy(c: { marker: string; taskId: number; nodeId: number }): Promise<CopyDecision> {
    return this.db
      .transaction(() => {
        this.prepare("INSERT OR IGNORE INTO node_copies (marker, task_id, node_id, outcome, node_task_id, decided) VALUES (?, ?, ?, 'abandoned', NULL, ?)")
          .run(c.marker, c.taskId, c.nodeId, nowLocal())
        return toCopyDecision(this.prepare(`SELECT ${COPY_COLUMNS} FROM node_copies WHERE marker = ?`).get(c.marker) as Row)
      })
      .immediate()
  }

  async copyDecision(marker: string): Promise<CopyDecision | null> {
    const r = this.prepare(`SELECT ${COPY_COLUMNS} FROM node_copies WHERE marker = ?`).get(marker) as Row | undefined
    return r ? toCopyDecision(r) : null
  }
}
