// Changes of tasks, machines and timelines as events, for the scheduler (a task was queued), the
// processor, clients (GET /events) and the desktop shell. They come from one place, the change
// journal (migration 6): SQL triggers add a row inside whatever transaction changes a task, its
// JSON, a machine or a timeline, on any connection (this service's, `aviary retention`, a script,
// a test's sql()), so nothing changes without a row, and a change rolled back leaves none.
//
// The bus reads the rows it has not seen yet:
//  - after this connection wrote: a TEMP trigger on the journal calls aviary_journal_wake(),
//    which only asks for a read in a microtask, once the writing statement or transaction is
//    over. It is the only JS that SQL calls, and it carries nothing: what changed is read from
//    the journal, committed;
//  - after another connection committed: PRAGMA data_version, looked at every `pollMs`.
// Rows are read a page at a time until none are left, so a burst is never cut short; within a
// page, several changes of one task become one event carrying the task as it is now.
import { EventEmitter } from 'node:events'
import type { Db } from '../db/database'
import type { Machine, TimelineEntry, TimelineStage } from '../../shared/api/schemas'
import type { MachinesRepository } from '../db/machines.repository'
import { toApiMachine } from '../db/machine-view'
import { formatDatetime } from '../../shared/time'

export interface AviaryEvents {
  /** A task's API JSON changed (or the task was created); `json` is the Task object serialized. */
  task: [{ id: number; json: string }]
  'task.deleted': [{ id: number }]
  /** Tasks became pending (submitted, reschedule copies, re-queued): the scheduler listens. */
  'task.queued': [ids: number[]]
  stage: [TimelineEntry & { task_id: number }]
  machine: [Machine]
}

export interface EventBusOptions {
  /** How often another connection's commits are looked for (ms; default 100). */
  pollMs?: number
}

type JournalRow = [seq: number, kind: 'task' | 'deleted' | 'queued' | 'stage' | 'machine', ref: number]

/** Journal rows read at once. */
const PAGE = 2000
/** Rows kept behind the last one read (a second bus on the same file may lag); older ones go. */
const KEEP = 10_000

/** The buses reading through each connection: SQL functions are per connection, not per bus. */
const wakers = new WeakMap<Db, Set<() => void>>()

export class EventBus extends EventEmitter<AviaryEvents> {
  private last: number
  private prunedTo: number
  private version: number
  private scheduled = false
  private closed = false
  private readonly wake = () => this.schedule()
  private readonly timer: NodeJS.Timeout
  private readonly readPage
  private readonly prune
  private readonly dataVersion
  private readonly taskJson
  private readonly stageRow

  constructor(private readonly db: Db, private readonly machines: MachinesRepository, opts: EventBusOptions = {}) {
    super()
    this.setMaxListeners(0) // one per open event stream
    this.readPage = db.prepare<[number, number], JournalRow>(
      'SELECT seq, kind, ref FROM change_journal WHERE seq > ? ORDER BY seq LIMIT ?'
    ).raw()
    this.prune = db.prepare<[number]>('DELETE FROM change_journal WHERE seq <= ?')
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck()
    this.taskJson = db.prepare<[number], string>('SELECT json FROM task_json WHERE id = ?').pluck()
    this.stageRow = db.prepare<[number], { task_id: number; at: number; stage: TimelineStage; message: string | null }>(
      'SELECT task_id, at, stage, message FROM task_events WHERE id = ?'
    )
    // What happened before the bus existed is not news: the scheduler and clients read the state.
    this.last = db.prepare<[], number>('SELECT coalesce(max(seq), 0) FROM change_journal').pluck().get()!
    this.version = this.dataVersion.get()!
    this.prunedTo = this.last - KEEP
    this.prune.run(this.prunedTo)
    let buses = wakers.get(db)
    if (!buses) {
      const all = (buses = new Set())
      wakers.set(db, all)
      db.function('aviary_journal_wake', { varargs: false }, () => {
        for (const wake of all) wake()
        return null
      })
      db.exec(`CREATE TEMP TRIGGER IF NOT EXISTS aviary_journal_wake AFTER INSERT ON main.change_journal
        BEGIN SELECT aviary_journal_wake(); END`)
    }
    buses.add(this.wake)
    this.timer = setInterval(() => this.poll(), opts.pollMs ?? 100).unref()
  }

  /** Stops reading (the service's stop, before the database closes). */
  close(): void {
    if (this.closed) return
    this.closed = true
    clearInterval(this.timer)
    wakers.get(this.db)?.delete(this.wake)
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return
    this.scheduled = true
    queueMicrotask(() => this.read())
  }

  private poll(): void {
    if (!this.db.open) return this.close()
    const version = this.dataVersion.get()!
    if (version === this.version) return
    this.version = version
    this.read()
  }

  /** Emits what the journal holds past the last row read. */
  private read(): void {
    this.scheduled = false
    if (this.closed || !this.db.open) return
    if (this.db.inTransaction) {
      // Opened by hand and held across a turn: its rows may still roll back, so wait for its end.
      this.scheduled = true
      setTimeout(() => this.read(), 1)
      return
    }
    for (;;) {
      const rows = this.readPage.all(this.last, PAGE)
      if (rows.length === 0) break
      this.last = rows[rows.length - 1]![0]
      this.emitPage(rows)
      if (rows.length < PAGE) break
    }
    if (this.last - this.prunedTo >= 2 * KEEP) {
      this.prunedTo = this.last - KEEP
      this.prune.run(this.prunedTo)
    }
  }

  private emitPage(rows: JournalRow[]): void {
    const stages: number[] = []
    const tasks = new Set<number>()
    const deleted = new Set<number>()
    const machines = new Set<number>()
    const queued = new Set<number>()
    for (const [, kind, ref] of rows) {
      if (kind === 'task') tasks.add(ref)
      else if (kind === 'stage') stages.push(ref)
      else if (kind === 'deleted') deleted.add(ref)
      else if (kind === 'queued') queued.add(ref)
      else if (kind === 'machine') machines.add(ref)
    }
    for (const id of stages) {
      const row = this.stageRow.get(id)
      if (row) this.emit('stage', { ...row, time: row.at, at: formatDatetime(new Date(row.at)) })
    }
    for (const id of tasks) {
      const json = this.taskJson.get(id) // undefined once deleted: the deletion is the event
      if (json !== undefined) this.emit('task', { id, json })
    }
    for (const id of deleted) this.emit('task.deleted', { id })
    for (const id of machines) {
      const row = this.machines.findById(id)
      if (row?.configured) this.emit('machine', toApiMachine(row))
    }
    if (queued.size > 0) this.emit('task.queued', [...queued])
  }
}
