// The UI's task list (GET /aviary/tasks): filters by status, search by id, hash or name, paging
// and the total count, over any number of tasks in a few milliseconds.
//
// Why in memory: SQL answers id, hash and single-status queries from indexes, but a substring of a
// name (any case) and the total count of a broad match walk every row (a trigram FTS5 index
// measured 10-50 ms for ".exe" over 100,000 tasks, an OFFSET deep in a multi-status filter
// ~10 ms). So the few columns the filters read — id, status, name, sample — are kept here in id
// order (about 100 bytes a task), and one linear pass answers any query in ~1-3 ms. Hash prefixes
// are still looked up in SQL (indexed), then matched by sample id here.
//
// Staleness works as in task-views.ts: TEMP triggers mark the tasks this connection changes, and
// PRAGMA data_version (read once per event-loop turn) says when another connection wrote, which
// reloads everything. Marked tasks are read again before the next query, so a change that rolls
// back leaves nothing wrong behind.
import type { Db } from './database'
import { OutsideWrites } from './outside-writes'
import { TASK_STATUSES, type TaskStatus } from '../../shared/api/schemas'

export interface SearchQuery {
  statuses?: readonly TaskStatus[] | undefined
  q?: string | undefined
  offset: number
  limit: number
  order: 'asc' | 'desc'
}

export interface SearchPage {
  /** The page's task ids, in the order asked. */
  ids: number[]
  /** All the tasks that match. */
  total: number
}

const STATUS_CODE = new Map<string, number>(TASK_STATUSES.map((s, i) => [s, i]))
const OTHER_STATUS = TASK_STATUSES.length
/** Beyond this many changed tasks, reading them all again is cheaper than one by one. */
const RELOAD_AFTER = 5000

type Row = [id: number, status: string, category: string, target: string, sample: number]

/** What a task is found by: the URL, or the file name (the target's last path element), in lower case. */
export function searchName(category: string, target: string): string {
  const name = category === 'url' ? target : target.slice(target.lastIndexOf('/') + 1)
  return name.toLowerCase()
}

export class TaskSearch {
  private loaded = false
  private ids: number[] = []
  private statuses: number[] = []
  private names: string[] = []
  private samples: number[] = []
  private readonly dirty = new Set<number>()
  private readonly outside: OutsideWrites
  private readonly loadAll
  private readonly loadOne
  private readonly samplesByPrefix
  private readonly fetchJson

  constructor(db: Db) {
    const columns = 'id, status, category, target, coalesce(sample_id, 0)'
    this.outside = new OutsideWrites(db)
    this.loadAll = db.prepare<[], Row>(`SELECT ${columns} FROM tasks ORDER BY id`).raw()
    this.loadOne = db.prepare<[number], Row>(`SELECT ${columns} FROM tasks WHERE id = ?`).raw()
    // A prefix p of lower-case hex: every hash that starts with p sorts in [p, p || 'g').
    this.samplesByPrefix = db.prepare<{ lo: string; hi: string }, number>(
      ['md5', 'sha1', 'sha256', 'sha512'].map((c) => `SELECT id FROM samples WHERE ${c} >= @lo AND ${c} < @hi`).join(' UNION ')
    ).pluck()
    this.fetchJson = db.prepare<[string], [string, number | null]>(
      `SELECT tj.json, t.score FROM json_each(?) j JOIN task_json tj ON tj.id = j.value JOIN tasks t ON t.id = j.value
       ORDER BY j.key`
    ).raw()
    db.function('aviary_search_changed', { varargs: false }, (id) => {
      if (this.loaded) this.dirty.add(Number(id))
      return null
    })
    db.exec(`
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_search_insert AFTER INSERT ON main.tasks
        BEGIN SELECT aviary_search_changed(NEW.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_search_delete AFTER DELETE ON main.tasks
        BEGIN SELECT aviary_search_changed(OLD.id); END;
      CREATE TEMP TRIGGER IF NOT EXISTS aviary_search_update AFTER UPDATE OF status, category, target, sample_id ON main.tasks
        BEGIN SELECT aviary_search_changed(NEW.id); END;
    `)
  }

  /** One page of the tasks that match, and how many match in all. */
  search(query: SearchQuery): SearchPage {
    this.refresh()
    const n = this.ids.length
    const text = query.q?.trim() ?? ''
    const wanted = query.statuses?.length ? new Set(query.statuses.map((s) => STATUS_CODE.get(s) ?? OTHER_STATUS)) : null
    if (wanted === null && text === '') {
      // Unfiltered: positions are list positions.
      const from = query.offset
      const to = Math.min(n, from + query.limit)
      const ids = query.order === 'asc' ? this.ids.slice(from, to) : []
      if (query.order === 'desc') for (let k = from; k < to; k++) ids.push(this.ids[n - 1 - k]!)
      return { ids, total: n }
    }
    const needle = text.toLowerCase()
    const id = /^\d{1,15}$/.test(text) ? Number(text) : -1
    const samples = /^[0-9a-fA-F]{6,128}$/.test(text) ? new Set(this.samplesByPrefix.all({ lo: needle, hi: `${needle}g` })) : null
    const status = wanted === null ? null : Uint8Array.from({ length: OTHER_STATUS + 1 }, (_, code) => (wanted.has(code) ? 1 : 0))
    const { ids, statuses, names } = this
    const sampleOf = this.samples
    const matches = (i: number): boolean =>
      (status === null || status[statuses[i]!] === 1) &&
      (text === '' || ids[i] === id || names[i]!.includes(needle) || (samples !== null && samples.has(sampleOf[i]!)))
    const page: number[] = []
    const end = query.offset + query.limit
    let total = 0
    const step = query.order === 'asc' ? 1 : -1
    for (let i = step === 1 ? 0 : n - 1; i >= 0 && i < n; i += step) {
      if (!matches(i)) continue
      if (total >= query.offset && total < end) page.push(ids[i]!)
      total++
    }
    return { ids: page, total }
  }

  /** {"tasks":[...],"total":N}: each task as /tasks/view shows it, plus its score. */
  body(query: SearchQuery): string {
    const { ids, total } = this.search(query)
    const parts: string[] = []
    if (ids.length > 0) {
      for (const [json, score] of this.fetchJson.all(JSON.stringify(ids))) {
        // The stored JSON is an object: the score goes in before its closing brace.
        parts.push(`${json.slice(0, -1)},"score":${score === null ? 'null' : JSON.stringify(score)}}`)
      }
    }
    return `{"tasks":[${parts.join(',')}],"total":${total}}`
  }

  private refresh(): void {
    this.checkVersion()
    if (!this.loaded || this.dirty.size > RELOAD_AFTER) {
      this.dirty.clear()
      this.ids = []
      this.statuses = []
      this.names = []
      this.samples = []
      for (const row of this.loadAll.iterate()) this.append(row)
      this.loaded = true
      return
    }
    for (const id of this.dirty) this.reread(id)
    this.dirty.clear()
  }

  private append([id, status, category, target, sample]: Row): void {
    this.ids.push(id)
    this.statuses.push(STATUS_CODE.get(status) ?? OTHER_STATUS)
    this.names.push(searchName(category, target))
    this.samples.push(sample)
  }

  private reread(id: number): void {
    const row = this.loadOne.get(id)
    const at = this.position(id)
    const present = at < this.ids.length && this.ids[at] === id
    if (row === undefined) {
      if (!present) return
      for (const list of [this.ids, this.statuses, this.names, this.samples] as unknown[][]) list.splice(at, 1)
      return
    }
    if (!present) {
      if (at === this.ids.length) return this.append(row) // the usual case: ids only grow
      this.ids.splice(at, 0, id)
      this.statuses.splice(at, 0, 0)
      this.names.splice(at, 0, '')
      this.samples.splice(at, 0, 0)
    }
    this.statuses[at] = STATUS_CODE.get(row[1]) ?? OTHER_STATUS
    this.names[at] = searchName(row[2], row[3])
    this.samples[at] = row[4]
  }

  /** Where id is, or would be inserted, in the sorted ids. */
  private position(id: number): number {
    let lo = 0
    let hi = this.ids.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.ids[mid]! < id) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Another connection wrote since the last look (once per event-loop turn, as in task-views.ts). */
  private checkVersion(): void {
    if (!this.outside.happened()) return
    this.loaded = false
  }
}

/** Scores of reported tasks (report.json's info.score), written by processing. */
export class TaskScores {
  private readonly setStmt

  constructor(db: Db) {
    this.setStmt = db.prepare<[number | null, number]>('UPDATE tasks SET score = ? WHERE id = ?')
  }

  set(id: number, score: number | null): void {
    this.setStmt.run(score !== null && Number.isFinite(score) ? score : null, id)
  }
}
