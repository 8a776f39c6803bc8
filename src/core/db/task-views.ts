// Read-side state for /tasks/view and /tasks/list, kept in memory so that any task or any page
// costs about the same whatever the size of the history:
//  - the ids of all tasks in list order (SQLite's OFFSET walks every row it skips);
//  - the serialized JSON of recently served tasks, bounded in bytes, as UTF-8 bytes ready for the
//    socket. Entries live in slabs: one /tasks/view body, {"task":...}, or a chunk of up to
//    CHUNK tasks that are neighbours in the list, stored as they appear inside a list body,
//    "a,b,c,". Each entry is followed by one separator byte, so consecutive entries of one slab
//    are one contiguous range and a page of 100 is assembled from two or three copies, instead
//    of 100 small copies from wherever each task happened to be cached (which was bound by
//    memory latency). A page first makes the aligned chunks it covers whole ("compacting"), so
//    overlapping pages never fight over their tasks; chunks stay usable when inserts or
//    deletes shift positions, since neighbours stay neighbours;
//  - the last few whole list bodies, sent again as they are while nothing changed: what a UI or a
//    dispatcher polls (the first page, mostly) costs no copy at all.
// Staleness is the database's to report, not the code's to remember: TEMP triggers call back
// into JS on every change this connection makes, and PRAGMA data_version tells when another
// connection (a maintenance script, a test) changed the file.
import type { Db } from './database'
import { OutsideWrites } from './outside-writes'

/** Where a body is written: fresh memory by default, or a buffer lent for one response. */
export type Alloc = (size: number) => Buffer
const fresh: Alloc = (size) => Buffer.allocUnsafe(size)

export const LIST_ORDER = 'ORDER BY t.completed_on, t.id'
const VIEW_OPEN = Buffer.from('{"task":')
const VIEW_CLOSE = Buffer.from('}')
const LIST_OPEN = Buffer.from('{"tasks":[')
const LIST_CLOSE = Buffer.from(']}')
const EMPTY_LIST = Buffer.from('{"tasks":[]}')
const COMMA = 0x2c
/** Tasks per chunk: a page of 100 spans two or three. */
const CHUNK = 64
/** A chunk whose tasks sit in more runs than this (or are not all cached) is rebuilt. */
const COMPACT_RUNS = 2
/** Whole page bodies kept while nothing changes. */
const RECENT_PAGES = 8
/** Pages remembered as asked for once (then forgotten all at once). */
const ASKED_KEYS = 256

interface Slab {
  /** Never written to once made: parts of it may be on their way to a socket. */
  buf: Buffer
  /** Entry k is buf[starts[k], starts[k + 1] - 1): one separator byte follows each entry. */
  starts: Uint32Array
  /** Entry k's task id. */
  ids: Int32Array
  /** A {"task":...} body of one task: a view sends it as it is. */
  wrapped: boolean
  /** Entries still served from this slab; at 0 its memory is let go. */
  live: number
  generation: number
}

/** Bytes buf[from, to) of consecutive entries of one slab, or of one task not cached. */
interface Run {
  buf: Buffer
  from: number
  /** -1 while (or, for a task deleted meanwhile, after) the task is fetched */
  to: number
  /** The task to fetch, for a task not cached */
  fetch?: number
}

export class TaskViews {
  private order: number[] | null = null
  // Task ids are dense integers, so the slab of a task and its place in it sit in arrays indexed
  // by id (no hashing). Two generations of slabs approximate LRU in O(1): a slab of the previous
  // generation moves to the current one when used; when the current generation would exceed half
  // the budget it becomes the previous one, and the slabs still in the older are dropped.
  private slabOf: (Slab | undefined)[] = []
  private indexOf: number[] = []
  private generation = 2
  private young: Slab[] = []
  private old: Slab[] = []
  private youngBytes = 0
  private recent = new Map<string, Buffer>()
  /** Pages asked for once since the last change: the next ask keeps the body. */
  private readonly asked = new Set<string>()
  private recentBytes = 0
  private readonly outside: OutsideWrites
  private readonly loadOrder
  private readonly fetch
  private readonly fetchOne

  constructor(db: Db, private readonly budgetBytes: number) {
    this.outside = new OutsideWrites(db)
    this.loadOrder = db.prepare<[], number>(`SELECT id FROM tasks t ${LIST_ORDER}`).pluck()
    this.fetch = db.prepare<[string], { id: number; json: string }>(
      'SELECT tj.id AS id, tj.json AS json FROM json_each(?) j JOIN task_json tj ON tj.id = j.value'
    )
    this.fetchOne = db.prepare<[number], string>('SELECT json FROM task_json WHERE id = ?').pluck()
    db.function('aviary_task_changed', { varargs: false }, (id) => {
      this.forget(Number(id))
      this.dropRecent()
      return null
    })
    db.function('aviary_order_changed', { varargs: false }, () => {
      this.order = null
      this.dropRecent()
      return null
    })
    db.exec(`
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_json_update AFTER UPDATE ON main.task_json
        BEGIN SELECT aviary_task_changed(OLD.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_json_delete AFTER DELETE ON main.task_json
        BEGIN SELECT aviary_task_changed(OLD.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_order_insert AFTER INSERT ON main.tasks
        BEGIN SELECT aviary_order_changed(); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_order_delete AFTER DELETE ON main.tasks
        BEGIN SELECT aviary_order_changed(); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_order_update AFTER UPDATE OF completed_on ON main.tasks
        BEGIN SELECT aviary_order_changed(); END;
    `)
  }

  /** The /tasks/view body, {"task":<json>}, or undefined for an unknown task. */
  viewBody(id: number): Buffer | undefined {
    this.checkVersion()
    const slab = this.slabOf[id]
    if (slab !== undefined) {
      this.touch(slab)
      if (slab.wrapped) return slab.buf
      const k = this.indexOf[id]!
      const from = slab.starts[k]!
      const to = slab.starts[k + 1]! - 1
      const out = Buffer.allocUnsafe(VIEW_OPEN.length + (to - from) + 1)
      const pos = VIEW_OPEN.copy(out, 0) + slab.buf.copy(out, VIEW_OPEN.length, from, to)
      out[pos] = 0x7d // }
      return out
    }
    const text = this.fetchOne.get(id)
    if (text === undefined) return undefined
    return this.keepView(id, Buffer.from(`{"task":${text}}`))
  }

  /**
   * The /tasks/list body of one page of the unfiltered list. A page asked for a second time
   * while nothing changed is kept and sent again as it is; any other is written where `alloc`
   * says (a buffer lent for one response: it is not kept).
   */
  pageBody(limit: number | undefined, offset: number, alloc: Alloc = fresh): Buffer {
    this.checkVersion()
    const key = `${limit}/${offset}`
    const kept = this.recent.get(key)
    if (kept !== undefined) return kept
    const order = (this.order ??= this.loadOrder.all())
    const end = limit === undefined ? order.length : Math.min(order.length, offset + limit)
    if (offset >= end) return EMPTY_LIST
    for (let c = offset - (offset % CHUNK); c < end; c += CHUNK) this.compact(order, c, Math.min(c + CHUNK, order.length))
    if (!this.asked.has(key)) {
      if (this.asked.size >= ASKED_KEYS) this.asked.clear()
      this.asked.add(key)
      return this.assemble(order, offset, end, false, alloc)
    }
    const body = this.assemble(order, offset, end, false, fresh)
    this.keepRecent(key, body)
    return body
  }

  /** The /tasks/list body of these tasks, in this order (a filtered list); unknown ids are left out. */
  listBody(ids: number[], alloc: Alloc = fresh): Buffer {
    this.checkVersion()
    return this.assemble(ids, 0, ids.length, true, alloc)
  }

  /** Memory held by the slabs that still serve a task and by kept pages (tests, diagnostics). */
  stats(): { bytes: number; slabs: number } {
    const seen = new Set<Slab>()
    for (const slab of this.slabOf) if (slab) seen.add(slab)
    let bytes = this.recentBytes
    for (const slab of seen) bytes += slab.buf.length
    return { bytes, slabs: seen.size }
  }

  /** Rebuilds order[from, to) as one slab unless its tasks are cached in a few runs already. */
  private compact(order: number[], from: number, to: number): void {
    let runs = 0
    let prev: Slab | undefined
    let prevIndex = -2
    let whole = true
    for (let i = from; i < to; i++) {
      const id = order[i]!
      const slab = this.slabOf[id]
      if (slab === undefined) {
        whole = false
        break
      }
      const k = this.indexOf[id]!
      if (slab !== prev || k !== prevIndex + 1) runs++
      prev = slab
      prevIndex = k
    }
    if (whole && runs <= COMPACT_RUNS) return
    const ids = order.slice(from, to)
    const fetched = this.fetchMany(ids.filter((id) => this.slabOf[id] === undefined))
    const parts: Buffer[] = []
    const kept: number[] = []
    let size = 0
    for (const id of ids) {
      const slab = this.slabOf[id]
      let part: Buffer | undefined
      if (slab !== undefined) {
        const k = this.indexOf[id]!
        part = slab.buf.subarray(slab.starts[k]!, slab.starts[k + 1]! - 1)
      } else {
        part = fetched.get(id) // a task deleted meanwhile is left out
      }
      if (part === undefined) continue
      parts.push(part)
      kept.push(id)
      size += part.length + 1
    }
    if (size > this.budgetBytes / 8) return // a budget this small is better spent on single tasks
    const buf = Buffer.allocUnsafe(size)
    const starts = new Uint32Array(parts.length + 1)
    let pos = 0
    for (let k = 0; k < parts.length; k++) {
      starts[k] = pos
      pos += parts[k]!.copy(buf, pos)
      buf[pos++] = COMMA
    }
    starts[parts.length] = pos
    this.adopt(this.newSlab(buf, starts, Int32Array.from(kept), false))
  }

  /** {"tasks":[...]} from the cached entries of ids[from, to), fetching any not cached. */
  private assemble(ids: number[], from: number, to: number, keepFetched: boolean, alloc: Alloc): Buffer {
    // Ranges are taken from the slabs before anything is touched or adopted: a rotation may then
    // drop a slab of this very page, but the bytes taken stay valid (slabs are never written).
    const runs: Run[] = []
    const used: Slab[] = []
    let last: Run | null = null
    let lastSlab: Slab | null = null
    let lastIndex = -2
    let missing: number[] | null = null
    for (let i = from; i < to; i++) {
      const id = ids[i]!
      const slab = this.slabOf[id]
      if (slab === undefined) {
        ;(missing ??= []).push(id)
        last = { buf: EMPTY_LIST, from: 0, to: -1, fetch: id }
        runs.push(last)
        lastSlab = null
        continue
      }
      const k = this.indexOf[id]!
      if (last !== null && lastSlab === slab && lastIndex + 1 === k) {
        last.to = slab.starts[k + 1]! - 1
      } else {
        last = { buf: slab.buf, from: slab.starts[k]!, to: slab.starts[k + 1]! - 1 }
        runs.push(last)
        if (slab !== lastSlab) used.push(slab)
        lastSlab = slab
      }
      lastIndex = k
    }
    if (missing !== null) {
      const fetched = this.fetchMany(missing)
      for (const run of runs) {
        const json = run.fetch === undefined ? undefined : fetched.get(run.fetch)
        if (json === undefined) continue // cached, or deleted meanwhile (then left out)
        run.buf = json
        run.to = json.length
      }
      if (keepFetched) {
        for (const [id, json] of fetched) this.keepView(id, Buffer.concat([VIEW_OPEN, json, VIEW_CLOSE]))
      }
    }
    let size = LIST_OPEN.length + LIST_CLOSE.length - 1
    let count = 0
    for (const run of runs) {
      if (run.to === -1) continue
      size += run.to - run.from + 1
      count++
    }
    if (count === 0) return EMPTY_LIST
    const out = alloc(size)
    let pos = LIST_OPEN.copy(out, 0)
    let first = true
    for (const run of runs) {
      if (run.to === -1) continue
      if (!first) out[pos++] = COMMA
      first = false
      pos += run.buf.copy(out, pos, run.from, run.to)
    }
    LIST_CLOSE.copy(out, pos)
    for (const slab of used) this.touch(slab)
    return out
  }

  private fetchMany(ids: number[]): Map<number, Buffer> {
    const found = new Map<number, Buffer>()
    if (ids.length === 0) return found
    for (const row of this.fetch.all(JSON.stringify(ids))) found.set(row.id, Buffer.from(row.json))
    return found
  }

  private newSlab(buf: Buffer, starts: Uint32Array, ids: Int32Array, wrapped: boolean): Slab {
    return { buf, starts, ids, wrapped, live: 0, generation: 0 }
  }

  /** Caches a {"task":...} body as the slab of its task; returns the body. */
  private keepView(id: number, body: Buffer): Buffer {
    this.adopt(this.newSlab(body, Uint32Array.of(VIEW_OPEN.length, body.length), Int32Array.of(id), true))
    return body
  }

  /** Makes a new slab the home of all its tasks, letting go of their previous slabs. */
  private adopt(slab: Slab): void {
    const { ids } = slab
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k]!
      while (this.slabOf.length <= id) {
        this.slabOf.push(undefined)
        this.indexOf.push(0)
      }
      this.forget(id)
      this.slabOf[id] = slab
      this.indexOf[id] = k
    }
    slab.live = ids.length
    this.touch(slab)
  }

  private touch(slab: Slab): void {
    if (slab.generation === this.generation) return
    const bytes = slab.buf.length
    slab.generation = this.generation // first, so that a rotation now cannot evict it
    if (this.youngBytes + bytes > this.budgetBytes / 2 && this.youngBytes > 0) {
      this.rotate()
      slab.generation = this.generation
    }
    this.young.push(slab)
    this.youngBytes += bytes
  }

  private rotate(): void {
    for (const slab of this.old) if (slab.generation === this.generation - 1) this.evict(slab)
    this.old = this.young
    this.young = []
    this.youngBytes = 0
    this.generation++
  }

  private evict(slab: Slab): void {
    const { ids } = slab
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k]!
      if (this.slabOf[id] === slab) this.slabOf[id] = undefined
    }
    this.release(slab)
  }

  private forget(id: number): void {
    const slab = this.slabOf[id]
    if (slab === undefined) return
    this.slabOf[id] = undefined
    if (--slab.live === 0) this.release(slab)
  }

  private release(slab: Slab): void {
    if (slab.generation === this.generation) this.youngBytes -= slab.buf.length
    slab.live = 0
    slab.buf = EMPTY_LIST.subarray(0, 0)
    slab.starts = new Uint32Array(0)
    slab.ids = new Int32Array(0)
  }

  /** Keeps a page body to send again as it is, within 1/16 of the budget. */
  private keepRecent(key: string, body: Buffer): void {
    if (body.length > this.budgetBytes / 16) return
    while (this.recent.size >= RECENT_PAGES || (this.recent.size > 0 && this.recentBytes + body.length > this.budgetBytes / 16)) {
      const [oldest, buf] = this.recent.entries().next().value as [string, Buffer]
      this.recent.delete(oldest)
      this.recentBytes -= buf.length
    }
    this.recent.set(key, body)
    this.recentBytes += body.length
  }

  private dropRecent(): void {
    this.asked.clear()
    if (this.recent.size === 0) return
    this.recent = new Map()
    this.recentBytes = 0
  }

  /** Another connection wrote: everything cached may be stale (outside-writes.ts). */
  private checkVersion(): void {
    if (!this.outside.happened()) return
    this.order = null
    this.slabOf = []
    this.indexOf = []
    this.young = []
    this.old = []
    this.youngBytes = 0
    this.dropRecent()
  }
}
