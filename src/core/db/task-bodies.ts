// The bodies of /tasks/view and /tasks/list, from task_json: each task as the API shows it, built
// and kept current by SQLite triggers (migrations.ts). Nothing here knows of HTTP.
//
// A view is one indexed SELECT. A list page needs two things that SQLite alone makes slow
// (measured in docs/benchmarks.md, "Task view and list"):
//  - where a page starts: OFFSET steps over every row it skips (~0.6 ms for a random page at
//    100,000 tasks), so the ids of all tasks in list order are kept, as an Int32Array;
//  - the JSON of its 100 tasks: reading it from SQLite for every page held random pages to
//    0.04-0.07 of a bare node:http hello world. So the tasks pages were made of are kept as
//    UTF-8 bytes, up to a byte budget, the first kept going first, and a page is one Buffer
//    copied together from them.
// Both are the database as it was at the last write, and both are dropped whole at the next one:
// PRAGMA data_version moves with other connections' commits, total_changes() with this
// connection's writes. Any write counts, even one no page shows: a little more reading, in
// exchange for no code that has to know which writes matter.
import type { Db } from './database'

export const LIST_ORDER = 'ORDER BY t.completed_on, t.id'
const LIST_OPEN = Buffer.from('{"tasks":[')
const LIST_CLOSE = Buffer.from(']}')
const EMPTY_LIST = Buffer.from('{"tasks":[]}')
/** Bytes of task JSON kept for list pages by default: 100,000 tasks of ~1 KB fit. */
export const DEFAULT_LIST_CACHE_BYTES = 128 * 1024 * 1024

export class TaskBodies {
  private stampSeen = -1
  private changesSeen = -1
  private order: Int32Array | null = null
  /**
   * A task's JSON as UTF-8, indexed by task id (ids are dense: an array, grown by push so that it
   * stays a plain array; a Map of 100,000 ids cost a fifth of the list's throughput).
   */
  private cache: (Buffer | undefined)[] = []
  /** Ids in the order they were kept, from `kept[keptHead]`: the next to go. */
  private kept: number[] = []
  private keptHead = 0
  private cacheBytes = 0
  private readonly dataVersion
  private readonly totalChanges
  private readonly loadOrder
  private readonly one
  private readonly many

  constructor(db: Db, private readonly cacheBudget = DEFAULT_LIST_CACHE_BYTES) {
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck()
    this.totalChanges = db.prepare<[], number>('SELECT total_changes()').pluck()
    this.loadOrder = db.prepare<[], number>(`SELECT id FROM tasks t ${LIST_ORDER}`).pluck()
    this.one = db.prepare<[number], string>('SELECT json FROM task_json WHERE id = ?').pluck()
    // The ids come as a JSON array; tasks gone meanwhile are simply not found.
    this.many = db.prepare<[string], [number, string]>(
      'SELECT tj.id, tj.json FROM json_each(?) j JOIN task_json tj ON tj.id = j.value'
    ).raw()
  }

  /** The task as the API shows it, serialized; undefined for an unknown task. */
  json(id: number): string | undefined {
    return this.one.get(id)
  }

  /** {"task":<json>}, or undefined for an unknown task. */
  view(id: number): string | undefined {
    const json = this.one.get(id)
    return json === undefined ? undefined : `{"task":${json}}`
  }

  /** {"tasks":[...]}: one page of the whole list (all of it from `offset` when limit is undefined). */
  page(limit: number | undefined, offset: number): Buffer {
    this.dropIfChanged()
    const order = (this.order ??= Int32Array.from(this.loadOrder.all()))
    const end = limit === undefined ? order.length : Math.min(order.length, offset + limit)
    return this.assemble(offset >= end ? [] : order.subarray(offset, end))
  }

  /** {"tasks":[...]} of these tasks in this order; tasks that are gone are left out. */
  list(ids: ArrayLike<number>): Buffer {
    this.dropIfChanged()
    return this.assemble(ids)
  }

  private assemble(ids: ArrayLike<number>): Buffer {
    if (ids.length === 0) return EMPTY_LIST
    const parts: Buffer[] = []
    let missing: number[] | null = null
    for (let i = 0; i < ids.length; i++) {
      const part = this.cache[ids[i]!]
      if (part === undefined) (missing ??= []).push(ids[i]!)
      parts.push(part ?? EMPTY_LIST)
    }
    if (missing !== null) {
      const found = new Map<number, Buffer>()
      for (const [id, json] of this.many.all(JSON.stringify(missing))) found.set(id, Buffer.from(json))
      for (let i = 0; i < ids.length; i++) {
        if (parts[i] !== EMPTY_LIST) continue
        const part = found.get(ids[i]!)
        if (part !== undefined) this.keep(ids[i]!, part)
        parts[i] = part ?? EMPTY_LIST // EMPTY_LIST: a task deleted meanwhile, left out below
      }
    }
    let size = LIST_OPEN.length + LIST_CLOSE.length
    for (const part of parts) if (part !== EMPTY_LIST) size += part.length + 1
    const body = Buffer.allocUnsafe(Math.max(size - 1, EMPTY_LIST.length))
    let pos = LIST_OPEN.copy(body, 0)
    for (const part of parts) {
      if (part === EMPTY_LIST) continue
      if (pos > LIST_OPEN.length) body[pos++] = 0x2c // ,
      pos += part.copy(body, pos)
    }
    LIST_CLOSE.copy(body, pos)
    return body
  }

  private keep(id: number, json: Buffer): void {
    if (json.length > this.cacheBudget || this.cache[id] !== undefined) return
    while (this.cache.length <= id) this.cache.push(undefined)
    this.cache[id] = json
    this.kept.push(id)
    this.cacheBytes += json.length
    while (this.cacheBytes > this.cacheBudget) {
      const first = this.kept[this.keptHead++]!
      this.cacheBytes -= this.cache[first]!.length
      this.cache[first] = undefined
    }
    if (this.keptHead > 65_536) {
      this.kept = this.kept.slice(this.keptHead)
      this.keptHead = 0
    }
  }

  /** Bytes of task JSON kept now (tests). */
  keptBytes(): number {
    return this.cacheBytes
  }

  /** Drops the list order and the kept tasks if anything was written since they were read. */
  private dropIfChanged(): void {
    const version = this.dataVersion.get()!
    const changes = this.totalChanges.get()!
    if (version === this.stampSeen && changes === this.changesSeen) return
    this.stampSeen = version
    this.changesSeen = changes
    this.order = null
    if (this.kept.length > 0) {
      this.cache = []
      this.kept = []
      this.keptHead = 0
    }
    this.cacheBytes = 0
  }
}
