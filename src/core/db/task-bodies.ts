// The bodies of /tasks/view and /tasks/list, as strings, from task_json: each task as the API
// shows it, built and kept current by SQLite triggers (migrations.ts), so a view is one indexed
// SELECT and a page is the JSON of its tasks joined by commas. Nothing here knows of HTTP.
//
// One thing is kept in memory: the ids of all tasks in list order, because SQLite's OFFSET steps
// over every row it skips (~0.6 ms for a random page at 100,000 tasks, docs/benchmarks.md), while
// a slice of this array costs nothing. It is read again (9 ms at 100,000 tasks) whenever the
// database changed since it was read: PRAGMA data_version tells of other connections' commits,
// total_changes() of this connection's writes. Any write counts, not only those that move a task
// in the list: a little more reading, in exchange for nothing to keep in step.
import type { Db } from './database'

export const LIST_ORDER = 'ORDER BY t.completed_on, t.id'
export const EMPTY_LIST = '{"tasks":[]}'

export class TaskBodies {
  private order: Int32Array | null = null
  private orderStamp = ''
  private readonly stamp
  private readonly loadOrder
  private readonly one
  private readonly many

  constructor(db: Db) {
    this.stamp = db.prepare<[], { c: number; v: number }>('SELECT total_changes() AS c, data_version AS v FROM pragma_data_version()')
    this.loadOrder = db.prepare<[], number>(`SELECT id FROM tasks t ${LIST_ORDER}`).pluck()
    this.one = db.prepare<[number], string>('SELECT json FROM task_json WHERE id = ?').pluck()
    // The ids come as a JSON array; j.key is an id's place in it.
    this.many = db.prepare<[string], string>(
      'SELECT tj.json FROM json_each(?) j JOIN task_json tj ON tj.id = j.value ORDER BY j.key'
    ).pluck()
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
  page(limit: number | undefined, offset: number): string {
    const order = this.listOrder()
    const end = limit === undefined ? order.length : Math.min(order.length, offset + limit)
    if (offset >= end) return EMPTY_LIST
    return this.list(order.subarray(offset, end))
  }

  /** {"tasks":[...]} of these tasks in this order; ids of tasks that are gone are left out. */
  list(ids: ArrayLike<number> & { join(sep: string): string }): string {
    if (ids.length === 0) return EMPTY_LIST
    return `{"tasks":[${this.many.all(`[${ids.join(',')}]`).join(',')}]}`
  }

  private listOrder(): Int32Array {
    const { c, v } = this.stamp.get()!
    const stamp = `${v}/${c}`
    if (this.order === null || stamp !== this.orderStamp) {
      this.order = Int32Array.from(this.loadOrder.all())
      this.orderStamp = stamp
    }
    return this.order
  }
}
