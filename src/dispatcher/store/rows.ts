// What both stores share besides the schema: turning raw rows into the interface's types, the
// timestamp format, and the balancing rule of assignPending.
import type { CopyDecision, DistTaskRow, DistTaskStatus, MachineInfo, NodePatch, NodeRow, TaskListQuery } from './types'

export const TASK_COLUMNS =
  'id, category, path, filename, url, package, timeout, priority, options, machine, platform, tags, custom, ' +
  'owner, memory, clock, enforce_timeout, node_id, node_task_id, status, submitted, delegated, started, completed'

export const ALL_STATUSES: DistTaskStatus[] = ['pending', 'assigned', 'processing', 'finished', 'deleted']

/** Local time as `YYYY-MM-DD HH:MM:SS`, the format Cuckoo's dispatcher and nodes use. */
export function nowLocal(d = new Date()): string {
  const p = (n: number): string => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

/** A JSON column: SQLite gives text, PostgreSQL (jsonb) the parsed value. */
function fromJson(v: unknown): unknown {
  if (typeof v !== 'string') return v ?? null
  try {
    return JSON.parse(v) as unknown
  } catch {
    return null
  }
}

export interface RawMachine {
  node_id: number
  name: string
  platform: string
  tags: unknown
}

export function toMachine(r: RawMachine): MachineInfo {
  const tags = fromJson(r.tags)
  return { name: r.name, platform: r.platform, tags: Array.isArray(tags) ? tags.map(String) : [] }
}

export function toNode(r: Record<string, unknown>, machines: MachineInfo[]): NodeRow {
  return {
    id: Number(r.id),
    name: String(r.name),
    url: String(r.url),
    token: typeof r.token === 'string' && r.token !== '' ? r.token : null,
    mode: String(r.mode),
    enabled: r.enabled === true || r.enabled === 1,
    machines,
    last_seen: (r.last_seen as string | null) ?? null,
    failures: Number(r.failures),
    status: fromJson(r.status)
  }
}

/** Groups machine rows by node id (machines in id order). */
export function machinesByNode(rows: RawMachine[]): Map<number, MachineInfo[]> {
  const m = new Map<number, MachineInfo[]>()
  for (const r of rows) {
    const list = m.get(Number(r.node_id)) ?? []
    list.push(toMachine(r))
    m.set(Number(r.node_id), list)
  }
  return m
}

export function toTask(r: Record<string, unknown>): DistTaskRow {
  const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))
  const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v))
  return {
    id: Number(r.id),
    category: r.category as DistTaskRow['category'],
    path: str(r.path),
    filename: str(r.filename),
    url: str(r.url),
    package: str(r.package),
    timeout: num(r.timeout),
    priority: Number(r.priority),
    options: str(r.options),
    machine: str(r.machine),
    platform: str(r.platform),
    tags: str(r.tags),
    custom: str(r.custom),
    owner: str(r.owner),
    memory: str(r.memory),
    clock: str(r.clock),
    enforce_timeout: str(r.enforce_timeout),
    node_id: num(r.node_id),
    node_task_id: num(r.node_task_id),
    status: r.status as DistTaskStatus,
    submitted: String(r.submitted),
    delegated: str(r.delegated),
    started: str(r.started),
    completed: str(r.completed)
  }
}


/** The columns an updateNode patch sets, with their values (booleans as given). */
export const COPY_COLUMNS = 'outcome, task_id, node_id, node_task_id'

// Processing tasks claim the copies they know when their node lists them finished; a copy is
// adopted only by a task that is assigned to that node, and only when no processing task of that
// node knows it (the same node task fetched for two tasks would be a report given twice).
export const ADOPT_WHERE = `id = ? AND status = 'assigned' AND node_id = ? AND claimed_by = ?
  AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.node_id = ? AND o.node_task_id = ? AND o.status = 'processing')`

export function toCopyDecision(r: Record<string, unknown>): CopyDecision {
  return {
    outcome: r.outcome === 'adopted' ? 'adopted' : 'abandoned',
    task_id: Number(r.task_id),
    node_id: Number(r.node_id),
    node_task_id: r.node_task_id === null || r.node_task_id === undefined ? null : Number(r.node_task_id)
  }
}

export function nodePatchColumns(patch: NodePatch): Array<[column: string, value: string | boolean | null]> {
  const out: Array<[string, string | boolean | null]> = []
  for (const key of ['name', 'url', 'token', 'enabled', 'mode'] as const) {
    const v = patch[key]
    if (v !== undefined) out.push([key, v])
  }
  return out
}

/**
 * The WHERE clause and parameters of listTasks, with `?` placeholders (PostgreSQL numbers them).
 * A status and `finished` together: the status wins (the API rejects that combination first).
 */
export function taskListWhere(q: TaskListQuery): { where: string; params: unknown[] } {
  const conds: string[] = []
  const params: unknown[] = []
  if (q.status !== undefined) {
    conds.push('status = ?')
    params.push(q.status)
  } else if (q.finished === true) {
    conds.push("status = 'finished'")
  } else if (q.finished === false) {
    conds.push("status IN ('pending', 'assigned', 'processing')")
  }
  if (q.owner !== undefined && q.owner !== '') {
    conds.push('owner = ?')
    params.push(q.owner)
  }
  return { where: conds.length ? `WHERE ${conds.join(' AND ')}` : '', params }
}

/**
 * Chooses the node for each task: among its candidates, the one with the smallest queue (ties: the
 * lowest id, so runs are reproducible). Updates `queue` as it goes, so one batch spreads over the
 * nodes. Tasks without a candidate are left out.
 */
export function planAssignments(
  tasks: DistTaskRow[],
  limit: number,
  candidates: (t: DistTaskRow) => number[],
  queue: Map<number, number>
): Array<{ task: DistTaskRow; nodeId: number }> {
  const plan: Array<{ task: DistTaskRow; nodeId: number }> = []
  for (const task of tasks) {
    if (plan.length >= limit) break
    let best: number | null = null
    for (const id of candidates(task)) {
      const q = queue.get(id) ?? 0
      if (best === null || q < (queue.get(best) ?? 0) || (q === (queue.get(best) ?? 0) && id < best)) best = id
    }
    if (best === null) continue
    queue.set(best, (queue.get(best) ?? 0) + 1)
    plan.push({ task, nodeId: best })
  }
  return plan
}
