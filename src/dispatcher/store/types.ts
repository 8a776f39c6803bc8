// The dispatcher's storage, as one interface with two implementations: SQLite (default, one
// process) and PostgreSQL (several API processes and workers sharing one database). Everything is
// async because PostgreSQL is. The worker's claims are atomic: two workers never assign, submit or
// fetch the same task twice (PostgreSQL: row locks with FOR UPDATE SKIP LOCKED; SQLite: one
// writer, BEGIN IMMEDIATE).
//
// Task states (Cuckoo 2's distributed/ dispatcher, its db.py): pending → assigned
// (to a node) → processing (submitted; node_task_id set) → finished (reports fetched, node
// cleaned) ; deleted. A task whose node stops answering goes back to pending (node cleared).

import type { TaskFieldsAsSent } from '../../shared/api/task-fields'

export type DistTaskStatus = 'pending' | 'assigned' | 'processing' | 'finished' | 'deleted'

export interface MachineInfo {
  name: string
  platform: string
  tags: string[]
}

export interface NodeRow {
  id: number
  name: string
  url: string
  /** The node API's Bearer token, null when it asks for none. Never shown by the dispatcher's API. */
  token: string | null
  mode: string
  enabled: boolean
  machines: MachineInfo[]
  /** Last time the worker reached it (local `YYYY-MM-DD HH:MM:SS`), null before the first time. */
  last_seen: string | null
  /** Consecutive failed contacts; the worker marks the node unreachable past a threshold. */
  failures: number
  /** The node's last /cuckoo/status (parsed), null before the first contact. */
  status: unknown
}

/** What updateNode may change; a token of null removes it. */
export type NodePatch = { name?: string; url?: string; token?: string | null; enabled?: boolean; mode?: string }

/** The submission fields (src/shared/api/task-fields.ts), stored as given: as Cuckoo's dispatcher forwards them. */
export type TaskFields = TaskFieldsAsSent

export interface NewDistTask extends TaskFields {
  category: 'file' | 'url'
  /** Stored sample path (file tasks), inside the samples directory. */
  path: string | null
  /** Original file name (file tasks). */
  filename: string | null
  /** URL tasks: the URL. */
  url: string | null
  /** Assign straight to this enabled node (POST /api/task node=). */
  node_id?: number | null
}

export interface DistTaskRow extends NewDistTask {
  id: number
  node_id: number | null
  /** The node's own task id once submitted. */
  node_task_id: number | null
  status: DistTaskStatus
  submitted: string
  delegated: string | null
  started: string | null
  completed: string | null
}

export interface TaskListQuery {
  offset?: number
  limit?: number
  /** true: finished only; false: pending, assigned or processing. */
  finished?: boolean
  status?: DistTaskStatus
  owner?: string
}

export interface DistStore {
  /** Creates or upgrades the schema (same migrations on both databases). */
  migrate(): Promise<void>
  close(): Promise<void>

  // ---- nodes
  /** Throws DuplicateNodeError when the name exists. */
  addNode(n: { name: string; url: string; token?: string | null; mode?: string; machines: MachineInfo[] }): Promise<NodeRow>
  getNode(name: string): Promise<NodeRow | null>
  getNodeById(id: number): Promise<NodeRow | null>
  /** All nodes (disabled too) unless enabledOnly. Ordered by id. */
  listNodes(o?: { enabledOnly?: boolean }): Promise<NodeRow[]>
  /** null when no such node. Throws DuplicateNodeError on a rename to an existing name. */
  updateNode(name: string, patch: NodePatch): Promise<NodeRow | null>
  setMachines(nodeId: number, machines: MachineInfo[]): Promise<void>
  /** Records a contact: ok resets failures and stores the status; a failure increments failures. */
  recordContact(nodeId: number, ok: boolean, status?: unknown): Promise<NodeRow>

  // ---- tasks
  createTask(t: NewDistTask): Promise<number>
  getTask(id: number): Promise<DistTaskRow | null>
  /** Ordered by id ascending. */
  listTasks(q: TaskListQuery): Promise<DistTaskRow[]>
  /**
   * Deletes a task: a pending one is removed outright, any other becomes `deleted`. Returns the row
   * as it was (so the caller removes its files), or null when there is no such task.
   */
  deleteTask(id: number): Promise<DistTaskRow | null>
  /** Counts per status (for /status and the scheduler). */
  countByStatus(): Promise<Record<DistTaskStatus, number>>
  /** Counts of assigned + processing tasks per node id (its queue, for balancing). */
  queueByNode(): Promise<Map<number, number>>

  // ---- worker: atomic claims (safe with several workers)
  /**
   * Assigns up to `limit` pending tasks, oldest first (priority desc, then id), choosing for each
   * a node from `candidates(task)` (node ids that can serve it) with the smallest queue; tasks no
   * candidate can serve stay pending. Returns the assigned tasks. Atomic: a task is assigned once.
   */
  assignPending(limit: number, candidates: (t: DistTaskRow) => number[], queue: Map<number, number>): Promise<DistTaskRow[]>
  /**
   * Claims up to `limit` assigned tasks of a node for submission (priority desc, id), leased for
   * `leaseSeconds` to `worker` so another worker skips them; the lease ends on markSubmitted or
   * releaseClaim, or when it expires (a crashed worker).
   */
  claimForSubmit(nodeId: number, limit: number, worker: string, leaseSeconds: number): Promise<DistTaskRow[]>
  markSubmitted(taskId: number, nodeTaskId: number): Promise<void>
  /**
   * markSubmitted for several tasks in one transaction (one commit for many submissions). Same
   * rule per task: only an assigned task becomes processing. Task ids must be distinct. Returns
   * the ids of the tasks marked (the others were deleted or requeued meanwhile).
   */
  markSubmittedMany(marks: Array<{ taskId: number; nodeTaskId: number }>): Promise<number[]>
  releaseClaim(taskId: number): Promise<void>
  /** The workers holding a lease that has not run out (distinct `worker` values of the claims). */
  leaseHolders(): Promise<string[]>
  /** Ends every lease `worker` holds (a worker known to be dead). Returns how many tasks it held. */
  releaseLeases(worker: string): Promise<number>
  /**
   * Claims the processing task of `nodeId` whose node task id is `nodeTaskId` for fetching (same
   * lease rules); null when none or already claimed.
   */
  claimForFetch(nodeId: number, nodeTaskId: number, worker: string, leaseSeconds: number): Promise<DistTaskRow | null>
  /** Whether any task of ours (in any status) was given this node task id by this node. */
  knowsNodeTask(nodeId: number, nodeTaskId: number): Promise<boolean>
  /** Reports stored and node cleaned: finished. */
  markFinished(taskId: number, started: string | null): Promise<void>
  /** Unfinished tasks of a node go back to pending (the node stopped answering). Returns how many. */
  requeueNode(nodeId: number): Promise<number>

  // ---- copies a submission cut short left on a node, found by their mark (worker/marker.ts)
  /**
   * Task `taskId` takes over the node task `nodeTaskId` that carries `marker`, instead of being
   * submitted again: in one transaction the mark is recorded adopted and the task becomes
   * processing with that node task id. Only when no decision was made on the mark before, the task
   * is assigned to `nodeId` and its submit claim is held by `worker`, and no other processing task
   * of that node has that node task id. False, with nothing changed, otherwise.
   */
  adoptCopy(c: { marker: string; taskId: number; nodeId: number; nodeTaskId: number; worker: string }): Promise<boolean>
  /** Records that the copy carrying `marker` belongs to no task, unless a decision was made before; returns the one that stands. */
  abandonCopy(c: { marker: string; taskId: number; nodeId: number }): Promise<CopyDecision>
  /** The decision made on a mark, or null. */
  copyDecision(marker: string): Promise<CopyDecision | null>
}

/** What became of a node-side copy that a submission cut short may have left (worker/marker.ts). */
export interface CopyDecision {
  outcome: 'adopted' | 'abandoned'
  task_id: number
  node_id: number
  /** The node task taken over (adopted), null when abandoned. */
  node_task_id: number | null
}

export class DuplicateNodeError extends Error {}
