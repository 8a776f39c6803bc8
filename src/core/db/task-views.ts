// Read-side state for /tasks/view and /tasks/list, kept in memory so that any task or any page
// costs about the same whatever the size of the history:
//  - the ids of all tasks in list order (SQLite's OFFSET walks every row it skips);
//  - the serialized JSON of recently served tasks, bounded in bytes, as UTF-8 Buffers ready for
//    the socket (a page is then one memcpy, not a 100 KB string encode). Each entry is the whole
//    /tasks/view body, {"task":...}, so a view is sent as it is and a list takes the inner part.
//    Buffer.from(string) places small buffers in Node's shared pool: entries cost the GC little.
// Staleness is the database's to report, not the code's to remember: TEMP triggers call back
// into JS on every change this connection makes, and PRAGMA data_version tells when another
// connection (a maintenance script, a test) changed the file.
import type { Db } from './database'

export const LIST_ORDER = 'ORDER BY t.completed_on, t.id'
const VIEW_PREFIX = Buffer.byteLength('{"task":')
const LIST_OPEN = Buffer.from('{"tasks":[')
const LIST_CLOSE = Buffer.from(']}')

export class TaskViews {
  private order: number[] | null = null
  // Task ids are dense integers, so entries sit in arrays indexed by id (no hashing, better
  // locality than a Map). Two generations approximate LRU in O(1): an entry stamped with the
  // previous generation moves to the current one when used; when the current generation holds
  // half the budget it becomes the previous one, and entries still in the older are dropped.
  private slots: (Buffer | undefined)[] = []
  private stamps: number[] = []
  private generation = 2
  private youngIds: number[] = []
  private oldIds: number[] = []
  private youngBytes = 0
  private checkedThisTurn = false
  private readonly newTurn = () => {
    this.checkedThisTurn = false
  }
  private version: number
  private readonly dataVersion
  private readonly loadOrder
  private readonly fetch
  private readonly fetchOne

  constructor(db: Db, private readonly budgetBytes: number) {
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck()
    this.loadOrder = db.prepare<[], number>(`SELECT id FROM tasks t ${LIST_ORDER}`).pluck()
    this.fetch = db.prepare<[string], { id: number; json: string }>(
      'SELECT tj.id AS id, tj.json AS json FROM json_each(?) j JOIN task_json tj ON tj.id = j.value'
    )
    this.fetchOne = db.prepare<[number], string>('SELECT json FROM task_json WHERE id = ?').pluck()
    this.version = this.dataVersion.get() as number
    db.function('aviary_task_changed', { varargs: false }, (id) => {
      this.forget(Number(id))
      return null
    })
    db.function('aviary_order_changed', { varargs: false }, () => {
      this.order = null
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

  /** Ids of one page of the unfiltered list. */
  page(limit: number | undefined, offset: number): number[] {
    this.checkVersion()
    this.order ??= this.loadOrder.all()
    return this.order.slice(offset, limit === undefined ? undefined : offset + limit)
  }

  /** `{"task":<json>}` bodies of these tasks, in the same order; unknown ids are left out. */
  views(ids: number[]): Buffer[] {
    this.checkVersion()
    if (ids.length === 1) {
      const one = this.lookup(ids[0]!) ?? this.load(ids[0]!)
      return one ? [one] : []
    }
    const out: (Buffer | undefined)[] = new Array(ids.length)
    let missing: number[] | null = null
    for (let i = 0; i < ids.length; i++) {
      const hit = this.lookup(ids[i]!)
      if (hit) {
        out[i] = hit
      } else {
        ;(missing ??= []).push(ids[i]!)
      }
    }
    if (missing) {
      const found = new Map<number, Buffer>()
      for (const row of this.fetch.all(JSON.stringify(missing))) {
        const json = Buffer.from(`{"task":${row.json}}`)
        found.set(row.id, json)
        this.remember(row.id, json)
      }
      for (let i = 0; i < ids.length; i++) out[i] ??= found.get(ids[i]!)
    }
    return out.filter((b): b is Buffer => b !== undefined)
  }

  private load(id: number): Buffer | undefined {
    const text = this.fetchOne.get(id)
    if (text === undefined) return undefined
    const json = Buffer.from(`{"task":${text}}`)
    this.remember(id, json)
    return json
  }

  /**
   * Asks SQLite whether another connection wrote, once per event-loop turn: the pragma costs
   * more than serving a cached task, and a request answered in the same turn as an outside
   * write is one that ran alongside it.
   */
  /**
   * The /tasks/list body, {"tasks":[...]}, from view bodies: one allocation, and each task's
   * JSON copied out of its {"task":...} wrapper natively (no per-task Buffer objects).
   */
  static listBody(views: Buffer[]): Buffer {
    let size = LIST_OPEN.length + LIST_CLOSE.length + Math.max(0, views.length - 1)
    for (const v of views) size += v.length - VIEW_PREFIX - 1
    const out = Buffer.allocUnsafe(size)
    let pos = LIST_OPEN.copy(out, 0)
    for (let i = 0; i < views.length; i++) {
      if (i) out[pos++] = 0x2c // ,
      const v = views[i]!
      pos += v.copy(out, pos, VIEW_PREFIX, v.length - 1)
    }
    LIST_CLOSE.copy(out, pos)
    return out
  }

  private checkVersion(): void {
    if (this.checkedThisTurn) return
    this.checkedThisTurn = true
    setImmediate(this.newTurn)
    const version = this.dataVersion.get() as number
    if (version === this.version) return
    this.version = version
    this.order = null
    this.slots = []
    this.stamps = []
    this.youngIds = []
    this.oldIds = []
    this.youngBytes = 0
  }

  private lookup(id: number): Buffer | undefined {
    const hit = this.slots[id]
    if (hit === undefined) return undefined
    if (this.stamps[id] !== this.generation) this.stamp(id, hit) // from the previous generation
    return hit
  }

  private remember(id: number, json: Buffer): void {
    while (this.slots.length <= id) {
      this.slots.push(undefined)
      this.stamps.push(0)
    }
    if (this.slots[id] !== undefined) this.forget(id)
    this.slots[id] = json
    this.stamp(id, json)
  }

  private stamp(id: number, json: Buffer): void {
    this.stamps[id] = this.generation
    this.youngIds.push(id)
    this.youngBytes += json.length
    if (this.youngBytes <= this.budgetBytes / 2) return
    for (const old of this.oldIds) {
      if (this.stamps[old] === this.generation - 1) this.slots[old] = undefined
    }
    this.oldIds = this.youngIds
    this.youngIds = []
    this.youngBytes = 0
    this.generation++
  }

  private forget(id: number): void {
    const entry = this.slots[id]
    if (entry === undefined) return
    if (this.stamps[id] === this.generation) this.youngBytes -= entry.length
    this.slots[id] = undefined
  }
}
