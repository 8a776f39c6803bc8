// The UI's task list (GET /aviary/tasks): tasks filtered by status and category, searched with the
// query language of shared/search-query.ts, sorted by id, time added or score, paged, with the
// total count. Answered by SQL alone, from indexes kept at write time:
//   - task_terms (term, kind, task_id): a report's domains (with their parents), IPs, URLs,
//     signature names (with their starts), dropped files' hashes, files (path and name), command
//     lines (and their programs), mutexes and registry keys, written by processing, and
//     the task's tags, written by SQL triggers at insert; every kind is one exact lookup, so a term
//     costs at most one row per task however the run repeated it;
//   - task_names: the file name or URL of each task (and a member's archive name) in an FTS5 trigram index (substring, any case),
//     kept by SQL triggers on tasks; names of one or two characters are matched by GLOB over it;
//   - the tasks' own indexes: tasks_search (a narrow copy of what searches filter and sort on),
//     tasks_score, tasks_added, tasks_machine, the guests' names, the samples' hashes.
// A query whose terms are index sets (the usual case) is counted and paged from them; the rest
// goes through one general plan over tasks_search. Nothing is cached in JS and nothing calls back
// from SQL into JS: a task written by any connection is found by the next query. Measured at
// 100,000 tasks with ~50 terms each: bench/search.bench.mjs, docs/benchmarks.md.
import type { Statement } from 'better-sqlite3'
import type { Db } from './database'
import type { TaskStatus } from '../../shared/api/schemas'
import {
  hashPrefix, hostIfUrl, normalizeAlert, normalizeDomain, normalizeIp, normalizeSig, normalizeText, normalizeUrl, parseSearch, SearchSyntaxError, termProblem,
  type IndexedKind, type SearchTerm
} from '../../shared/search-query'

export type SearchSort = 'id' | 'added' | 'score'

export interface SearchQuery {
  statuses?: readonly TaskStatus[] | undefined
  categories?: readonly string[] | undefined
  q?: string | undefined
  /** Default id. Score: tasks without one (not reported) sort lowest; ties by id. */
  sort?: SearchSort | undefined
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

export { SearchSyntaxError }

interface Clause {
  sql: string
  args: unknown[]
  /**
   * The clause is a set of task ids read from an index (one term of task_terms, a trigram match of
   * task_names, a machine's tasks): several such terms intersect as one set, and a query of sets
   * is counted and paged from them, joined to the tasks only for filters and sorting.
   */
  only?: {
    /** `SELECT … AS id FROM …`: the set (ids of existing tasks only, except a machine's: see withMachine). */
    set: string
    args: unknown[]
    /** Alone and unfiltered, its count and pages in id order from its own index. */
    count?: string
    page?: Record<'asc' | 'desc', string>
    /** Sorted otherwise: a walk of the sort's index that looks each task up in the set (for a dense set). */
    walk?: Record<'score' | 'added', Record<'asc' | 'desc', string>>
  }
  /** A cheap look (an index, LIMIT 1) at whether any task matches: plain text drops what does not. */
  probe?: { sql: string; args: unknown[] }
}

const ORDER: Record<SearchSort, Record<'asc' | 'desc', string>> = {
  id: { asc: 't.id ASC', desc: 't.id DESC' },
  added: { asc: 't.added_on ASC, t.id ASC', desc: 't.added_on DESC, t.id DESC' },
  score: { asc: 't.score ASC, t.id ASC', desc: 't.score DESC, t.id DESC' }
}
/** Prepared statements kept by their SQL (a query's shape: its kinds and filters, not its values). */
const MAX_STATEMENTS = 256
const HASH_COLUMNS = [['md5', 32], ['sha1', 40], ['sha256', 64], ['sha512', 128]] as const

const placeholders = (n: number): string => Array.from({ length: n }, () => '?').join(', ')

const ONE_TERM = 'FROM task_terms WHERE term = ? AND kind = ?'
const IN_TERM = 'EXISTS (SELECT 1 FROM task_terms x WHERE x.term = ? AND x.kind = ? AND x.task_id = t.id)'
const walk = (index: string, sort: 'score' | 'added', order: 'asc' | 'desc'): string =>
  `SELECT t.id FROM tasks t INDEXED BY ${index} WHERE ${IN_TERM} ORDER BY ${ORDER[sort][order]} LIMIT ? OFFSET ?`
const TERM_SET = {
  set: `SELECT task_id AS id ${ONE_TERM}`,
  count: `SELECT count(*) ${ONE_TERM}`,
  page: { asc: `SELECT task_id ${ONE_TERM} ORDER BY task_id ASC LIMIT ? OFFSET ?`, desc: `SELECT task_id ${ONE_TERM} ORDER BY task_id DESC LIMIT ? OFFSET ?` },
  walk: {
    score: { asc: walk('tasks_score', 'score', 'asc'), desc: walk('tasks_score', 'score', 'desc') },
    added: { asc: walk('tasks_added', 'added', 'asc'), desc: walk('tasks_added', 'added', 'desc') }
  }
}
/** A walk looks up at most about this many tasks; a sparser set is sorted from its own rows instead. */
const WALK_LIMIT = 5000
const NAME_MATCH = 'FROM task_names WHERE task_names MATCH ?'
const NAME_SET = {
  set: `SELECT rowid AS id ${NAME_MATCH}`,
  count: `SELECT count(*) ${NAME_MATCH}`,
  page: { asc: `SELECT rowid ${NAME_MATCH} ORDER BY rowid ASC LIMIT ? OFFSET ?`, desc: `SELECT rowid ${NAME_MATCH} ORDER BY rowid DESC LIMIT ? OFFSET ?` }
}

/** Tasks with this term (exact), as a condition on `t`. */
function withTerm(kind: IndexedKind | 'tag', term: string): Clause {
  const args = [term, kind]
  return { sql: `t.id IN (SELECT task_id ${ONE_TERM})`, args, only: { ...TERM_SET, args }, probe: { sql: `SELECT 1 ${ONE_TERM} LIMIT 1`, args } }
}

/** The sample's hashes start with `prefix` (hex only, so [p, p||'g') is the range). */
function withSampleHash(prefix: string): Clause {
  const columns = HASH_COLUMNS.filter(([, len]) => prefix.length <= len)
  const samples = columns.map(([c]) => `SELECT id FROM samples WHERE ${c} >= ? AND ${c} < ?`).join(' UNION ALL ')
  const args = columns.flatMap(() => [prefix, `${prefix}g`])
  return { sql: `t.sample_id IN (${samples})`, args, probe: { sql: `SELECT 1 FROM tasks WHERE sample_id IN (${samples}) LIMIT 1`, args } }
}

/** A dropped file's md5, sha1 or sha256 starts with `prefix`. */
function withDroppedHash(prefix: string): Clause {
  const range = "FROM task_terms WHERE term >= ? AND term < ? AND kind = 'hash'"
  const args = [prefix, `${prefix}g`]
  return { sql: `t.id IN (SELECT task_id ${range})`, args, probe: { sql: `SELECT 1 ${range} LIMIT 1`, args } }
}

function withHash(prefix: string): Clause[] {
  return prefix.length <= 64 ? [withSampleHash(prefix), withDroppedHash(prefix)] : [withSampleHash(prefix)]
}

/** Part of the name, any case: the trigram index from 3 characters, a GLOB of both cases below. */
function withName(text: string): Clause {
  // No stored name holds a NUL that SQL text functions would see past (FTS5 stops reading there).
  if (text.includes('\u0000')) return { sql: '0', args: [], probe: { sql: 'SELECT 1 WHERE 0', args: [] } }
  const chars = [...text]
  if (chars.length >= 3) {
    const args = [`"${text.replace(/"/g, '""')}"`]
    return { sql: `t.id IN (SELECT rowid ${NAME_MATCH})`, args, only: { ...NAME_SET, args }, probe: { sql: `SELECT 1 ${NAME_MATCH} LIMIT 1`, args } }
  }
  const glob = chars.map((c) => {
    const lo = c.toLowerCase()
    const up = c.toUpperCase()
    if (lo !== up && [...lo].length === 1 && [...up].length === 1) return `[${lo}${up}]`
    return c === '*' || c === '?' || c === '[' ? `[${c}]` : c
  }).join('')
  const args = [`*${glob}*`]
  return { sql: 't.id IN (SELECT rowid FROM task_names WHERE name GLOB ?)', args, probe: { sql: 'SELECT 1 FROM task_names WHERE name GLOB ? LIMIT 1', args } }
}

/** One of the task's tags is `tag` (ASCII letters in any case, as SQL's lower() folds them in the index). */
const withTag = (tag: string): Clause => withTerm('tag', tag.replace(/[A-Z]+/g, (c) => c.toLowerCase()))

/** Asked for that machine, or ran on it (its name or label), in any case (ASCII). */
function withMachine(name: string): Clause {
  // A guest row can outlive its task on a connection without foreign keys: no count from the set alone.
  const set = 'SELECT id FROM tasks WHERE machine = ? COLLATE NOCASE UNION SELECT task_id FROM guests WHERE name = ? COLLATE NOCASE ' +
    'UNION SELECT task_id FROM guests WHERE label = ? COLLATE NOCASE'
  const args = [name, name, name]
  return { sql: `t.id IN (${set})`, args, only: { set, args }, probe: { sql: `${set} LIMIT 1`, args } }
}

const withId = (id: number): Clause => ({ sql: 't.id = ?', args: [id], probe: { sql: 'SELECT 1 FROM tasks WHERE id = ?', args: [id] } })

/**
 * What one term of a query can match: one condition, or (plain text, a hash) several, any of which
 * will do. Throws SearchSyntaxError for a value its kind cannot have (shared/search-query.ts says why).
 */
export function termClauses(term: SearchTerm): Clause[] {
  const problem = termProblem(term)
  if (problem !== null) throw new SearchSyntaxError(problem)
  const v = term.value
  switch (term.kind) {
    case 'id':
      return [withId(Number(v))]
    case 'hash':
      return withHash(hashPrefix(v)!)
    case 'name':
      return [withName(v)]
    case 'url':
      return [withTerm('url', normalizeUrl(v)[0]!)]
    case 'domain':
      return [withTerm('domain', normalizeDomain(hostIfUrl(v))!)]
    case 'ip':
      return [withTerm('ip', normalizeIp(v)!)]
    case 'sig':
      return [withTerm('sig', normalizeSig(v)!)]
    case 'alert':
      return [withTerm('sig', normalizeAlert(v)!)]
    case 'file':
    case 'command':
    case 'mutex':
    case 'key':
      return [withTerm(term.kind, normalizeText(v)!)]
    case 'tag':
      return [withTag(v)]
    case 'machine':
      return [withMachine(v)]
    case 'any': {
      const clauses: Clause[] = []
      if (/^\d{1,15}$/.test(v)) clauses.push(withId(Number(v)))
      const hash = hashPrefix(v)
      if (hash !== null) clauses.push(...withHash(hash))
      clauses.push(withName(v))
      const domain = normalizeDomain(v)
      if (domain !== null) clauses.push(withTerm('domain', domain))
      const ip = normalizeIp(v)
      if (ip !== null) clauses.push(withTerm('ip', ip))
      const url = normalizeUrl(v)[0]
      if (url !== undefined && (v.includes('/') || v.includes('?'))) clauses.push(withTerm('url', url))
      const sig = normalizeSig(v)
      if (sig !== null) clauses.push(withTerm('sig', sig))
      const text = normalizeText(v)
      if (text !== null) for (const kind of ['file', 'command', 'mutex', 'key'] as const) clauses.push(withTerm(kind, text))
      clauses.push(withTag(v), withMachine(v))
      return clauses
    }
  }
}

export class TaskSearch {
  private readonly statements = new Map<string, Statement>()
  private readonly fetchJson

  constructor(private readonly db: Db) {
    this.fetchJson = db.prepare<[string], [string, number | null]>(
      `SELECT tj.json, t.score FROM json_each(?) j JOIN task_json tj ON tj.id = j.value JOIN tasks t ON t.id = j.value
       ORDER BY j.key`
    ).raw()
  }

  /** One page of the tasks that match, and how many match in all. Throws SearchSyntaxError for a bad `q`. */
  search(query: SearchQuery): SearchPage {
    const terms: Clause[] = []
    for (const term of query.q ? parseSearch(query.q) : []) {
      const alternatives = termClauses(term)
      // Several things a term can be (plain text): those no task has are left out first, so the
      // usual case (a domain that is only a domain) becomes one index's set.
      const live = alternatives.length === 1 ? alternatives
        : alternatives.filter((c) => c.probe === undefined || this.statement(c.probe.sql).pluck().get(...c.probe.args) !== undefined)
      if (live.length === 0) return { ids: [], total: 0 }
      terms.push(live.length === 1 ? live[0]! : { sql: `(${live.map((c) => c.sql).join(' OR ')})`, args: live.flatMap((c) => c.args) })
    }
    const sort = query.sort ?? 'id'
    const filters: Clause[] = []
    if (query.statuses?.length) filters.push({ sql: `t.status IN (${placeholders(query.statuses.length)})`, args: [...query.statuses] })
    if (query.categories?.length) filters.push({ sql: `t.category IN (${placeholders(query.categories.length)})`, args: [...query.categories] })
    // One set, or several intersected (every term a set: domain:x sig:y).
    const only = terms.length === 1 ? terms[0]!.only
      : terms.length > 1 && terms.every((c) => c.only)
        // Each set in its own subquery: compound operators bind left to right, and a set may be a UNION.
        ? { set: terms.map((c) => `SELECT id FROM (${c.only!.set})`).join(' INTERSECT '), args: terms.flatMap((c) => c.only!.args) }
        : undefined
    if (only) {
      const page = this.onlyPage(only, filters, sort, query)
      if (page) return page
    }
    const where = [...terms, ...filters]
    const cond = where.length === 0 ? '' : `WHERE ${where.map((c) => c.sql).join(' AND ')}`
    const args = where.flatMap((c) => c.args)
    const order = ORDER[sort][query.order]
    if (terms.length === 0) {
      // Filters only: the page walks an index and stops (by score, the covering score order); the
      // count is one pass over an index.
      const total = this.statement(`SELECT count(*) FROM tasks t ${cond}`).pluck().get(...args) as number
      const from = sort === 'score' ? 'tasks t INDEXED BY tasks_score' : 'tasks t'
      const ids = query.limit === 0 ? [] : this.statement(`SELECT t.id FROM ${from} ${cond} ORDER BY ${order} LIMIT ? OFFSET ?`).pluck()
        .all(...args, query.limit, query.offset) as number[]
      return { ids, total }
    }
    // A search: the matches are found once, over the narrow index of what they are filtered and
    // sorted by (each term's set of tasks is built once), then counted and the page taken from them.
    const rows = this.statement(
      `WITH m AS MATERIALIZED (SELECT t.id AS id, t.score AS score, t.added_on AS added_on FROM tasks t INDEXED BY tasks_search ${cond})
       SELECT NULL, count(*) FROM m
       UNION ALL
       SELECT * FROM (SELECT t.id, NULL FROM m t ORDER BY ${order} LIMIT ? OFFSET ?)`
    ).raw().all(...args, query.limit, query.offset) as [number | null, number | null][]
    // The count's row is the one without an id.
    return { ids: rows.filter((r) => r[0] !== null).map((r) => r[0]!), total: rows.find((r) => r[0] === null)![1]! }
  }

  /**
   * A query of one index's set (and filters): counted from that index (filtered: joined to the
   * tasks' narrow index), paged in its own order, or by walking the sort's index when the set is
   * dense. Undefined when the general plan does better (a sparse set sorted otherwise than by id).
   */
  private onlyPage(only: NonNullable<Clause['only']>, filters: Clause[], sort: SearchSort, query: SearchQuery): SearchPage | undefined {
    if (sort !== 'id' && !only.walk) return undefined
    const fsql = filters.map((c) => ` AND ${c.sql}`).join('')
    const fargs = filters.flatMap((c) => c.args)
    const joined = `FROM (${only.set}) m JOIN tasks t INDEXED BY tasks_search ON t.id = m.id WHERE 1${fsql}`
    const alone = filters.length === 0 && only.count !== undefined
    const total = (alone ? this.statement(only.count!).pluck().get(...only.args)
      : this.statement(`SELECT count(*) ${joined}`).pluck().get(...only.args, ...fargs)) as number
    if (query.limit === 0 || total <= query.offset) return { ids: [], total }
    const page = (sql: string, args: unknown[]): SearchPage =>
      ({ ids: this.statement(sql).pluck().all(...args, query.limit, query.offset) as number[], total })
    if (sort === 'id') {
      return alone && only.page ? page(only.page[query.order], only.args)
        : page(`SELECT m.id ${joined} ORDER BY m.id ${query.order.toUpperCase()} LIMIT ? OFFSET ?`, [...only.args, ...fargs])
    }
    // Sorted by score or time: when the matches are dense, walking the sort's index finds the page
    // after looking up (offset + limit) / density tasks.
    const all = this.statement('SELECT count(*) FROM tasks').pluck().get() as number
    if ((query.offset + query.limit) * all > WALK_LIMIT * total) return undefined
    const walk = only.walk![sort][query.order]
    return page(filters.length === 0 ? walk : walk.replace(' ORDER BY ', `${fsql} ORDER BY `), [...only.args, ...fargs])
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

  private statement(sql: string): Statement {
    let stmt = this.statements.get(sql)
    if (!stmt) {
      if (this.statements.size >= MAX_STATEMENTS) this.statements.clear()
      stmt = this.db.prepare(sql)
      this.statements.set(sql, stmt)
    }
    return stmt
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
