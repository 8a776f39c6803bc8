// The UI's task list (GET /aviary/tasks): tasks filtered by status and category, searched with the
// query language of shared/search-query.ts, sorted by id, time added or score, paged, with the
// total count. Answered by SQL alone, from indexes kept at write time:
//   - task_terms (term, kind, task_id): a report's domains (with their parents), IPs, URLs,
//     signature names (with their starts) and dropped files' hashes, written by processing; every
//     kind is one exact lookup, so a term costs at most one row per task however the run repeated it;
//   - task_names: the file name or URL of each task in an FTS5 trigram index (substring, any case),
//     kept by SQL triggers on tasks; names of one or two characters are matched by GLOB over it;
//   - the tasks table's own indexes: id, status, added_on, score, sample_id, and the samples' hashes.
// Nothing is cached in JS and nothing calls back from SQL into JS: a task written by any connection
// is found by the next query. Measured at 100,000 tasks with ~50 terms each: bench/search.bench.mjs.
import type { Statement } from 'better-sqlite3'
import type { Db } from './database'
import type { TaskStatus } from '../../shared/api/schemas'
import {
  hashPrefix, normalizeDomain, normalizeIp, normalizeSig, normalizeUrl, parseSearch, SearchSyntaxError,
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

/** Tasks with one of these terms (exact), as a condition on `t`. */
function withTerms(pairs: readonly [IndexedKind, string][]): Clause {
  return {
    sql: `t.id IN (${pairs.map(() => 'SELECT task_id FROM task_terms WHERE term = ? AND kind = ?').join(' UNION ALL ')})`,
    args: pairs.flatMap(([kind, term]) => [term, kind])
  }
}

/** The sample's hashes start with `prefix`, or a dropped file's do: hex only, so [p, p||'g') is the range. */
function withHash(prefix: string): Clause {
  const columns = HASH_COLUMNS.filter(([, len]) => prefix.length <= len)
  return {
    sql: `(t.sample_id IN (${columns.map(([c]) => `SELECT id FROM samples WHERE ${c} >= ? AND ${c} < ?`).join(' UNION ALL ')})` +
      (prefix.length <= 64 ? " OR t.id IN (SELECT task_id FROM task_terms WHERE term >= ? AND term < ? AND kind = 'hash'))" : ')'),
    args: [...columns.flatMap(() => [prefix, `${prefix}g`]), ...(prefix.length <= 64 ? [prefix, `${prefix}g`] : [])]
  }
}

/** Part of the name, any case: the trigram index from 3 characters, a GLOB of both cases below. */
function withName(text: string): Clause {
  const chars = [...text]
  if (chars.length >= 3) {
    return { sql: 't.id IN (SELECT rowid FROM task_names WHERE task_names MATCH ?)', args: [`"${text.replace(/"/g, '""')}"`] }
  }
  const glob = chars.map((c) => {
    const lo = c.toLowerCase()
    const up = c.toUpperCase()
    if (lo !== up && [...lo].length === 1 && [...up].length === 1) return `[${lo}${up}]`
    return c === '*' || c === '?' || c === '[' ? `[${c}]` : c
  }).join('')
  return { sql: 't.id IN (SELECT rowid FROM task_names WHERE name GLOB ?)', args: [`*${glob}*`] }
}

/** The LIKE pattern of a literal (its %, _ and \ escaped with \). */
const likeLiteral = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** One of the task's tags is `tag` (ASCII letters in any case); tags are a JSON array of strings. */
const withTag = (tag: string): Clause => ({ sql: "t.tags LIKE ? ESCAPE '\\'", args: [`%${likeLiteral(JSON.stringify(tag))}%`] })

/** Asked for that machine, or ran on it (its name or label), in any case. */
const withMachine = (name: string): Clause => ({
  sql: '(t.machine = ? COLLATE NOCASE OR t.id IN (SELECT task_id FROM guests WHERE name = ? COLLATE NOCASE UNION ALL SELECT task_id FROM guests WHERE label = ? COLLATE NOCASE))',
  args: [name, name, name]
})

const anyOf = (clauses: Clause[]): Clause => ({ sql: `(${clauses.map((c) => c.sql).join(' OR ')})`, args: clauses.flatMap((c) => c.args) })

/** A host written as a URL (domain:https://evil.com/x) is its host. */
function hostIfUrl(v: string): string {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(v)) return v
  try {
    return new URL(v).hostname
  } catch {
    return v
  }
}

/** The condition of one term of a query. Throws SearchSyntaxError for a value its kind cannot have. */
export function termClause(term: SearchTerm): Clause {
  const v = term.value
  switch (term.kind) {
    case 'id':
      if (!/^\d{1,15}$/.test(v)) throw new SearchSyntaxError(`id: wants a task id, a whole number (got '${v.slice(0, 40)}')`)
      return { sql: 't.id = ?', args: [Number(v)] }
    case 'hash': {
      const p = hashPrefix(v)
      if (p === null) throw new SearchSyntaxError(`hash: wants an md5, sha1, sha256 or sha512, or its first 6 or more hex digits (got '${v.slice(0, 40)}')`)
      return withHash(p)
    }
    case 'name':
      return withName(v)
    case 'url': {
      const forms = normalizeUrl(v)
      if (forms.length === 0) throw new SearchSyntaxError(`url: wants a URL (got '${v.slice(0, 40)}')`)
      return withTerms([['url', forms[0]!]])
    }
    case 'domain': {
      const d = normalizeDomain(hostIfUrl(v))
      if (d === null) {
        const ip = normalizeIp(v)
        throw new SearchSyntaxError(ip !== null ? `domain: '${ip}' is an address: ip:${ip} finds it` : `domain: wants a domain name (got '${v.slice(0, 40)}')`)
      }
      return withTerms([['domain', d]])
    }
    case 'ip': {
      const ip = normalizeIp(v)
      if (ip === null) throw new SearchSyntaxError(`ip: wants an IPv4 or IPv6 address (got '${v.slice(0, 40)}')`)
      return withTerms([['ip', ip]])
    }
    case 'sig': {
      const s = normalizeSig(v)
      if (s === null) throw new SearchSyntaxError(`sig: wants a signature name of at most 200 characters (got '${v.slice(0, 40)}')`)
      return withTerms([['sig', s]])
    }
    case 'tag':
      return withTag(v)
    case 'machine':
      return withMachine(v)
    case 'any': {
      const clauses: Clause[] = []
      if (/^\d{1,15}$/.test(v)) clauses.push({ sql: 't.id = ?', args: [Number(v)] })
      const hash = hashPrefix(v)
      if (hash !== null) clauses.push(withHash(hash))
      clauses.push(withName(v))
      const pairs: [IndexedKind, string][] = []
      const domain = normalizeDomain(v)
      if (domain !== null) pairs.push(['domain', domain])
      const ip = normalizeIp(v)
      if (ip !== null) pairs.push(['ip', ip])
      const url = normalizeUrl(v)[0]
      if (url !== undefined && (v.includes('/') || v.includes('?'))) pairs.push(['url', url])
      const sig = normalizeSig(v)
      if (sig !== null) pairs.push(['sig', sig])
      if (pairs.length > 0) clauses.push(withTerms(pairs))
      clauses.push(withTag(v), withMachine(v))
      return anyOf(clauses)
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
    const where: Clause[] = (query.q ? parseSearch(query.q) : []).map(termClause)
    const searched = where.length > 0
    if (query.statuses?.length) where.push({ sql: `t.status IN (${placeholders(query.statuses.length)})`, args: [...query.statuses] })
    if (query.categories?.length) where.push({ sql: `t.category IN (${placeholders(query.categories.length)})`, args: [...query.categories] })
    const cond = where.length === 0 ? '' : `WHERE ${where.map((c) => c.sql).join(' AND ')}`
    const args = where.flatMap((c) => c.args)
    const order = ORDER[query.sort ?? 'id'][query.order]
    const count = () => this.statement(`SELECT count(*) FROM tasks t ${cond}`).pluck().get(...args) as number
    if (query.limit === 0) return { ids: [], total: count() }
    if (!searched) {
      // Filters only: the page walks an index and stops; the count is one pass over an index.
      const ids = this.statement(`SELECT t.id FROM tasks t ${cond} ORDER BY ${order} LIMIT ? OFFSET ?`).pluck()
        .all(...args, query.limit, query.offset) as number[]
      return { ids, total: count() }
    }
    // A search: one pass finds the matches (each term's task set is read once), counts and sorts them.
    const rows = this.statement(`SELECT t.id, count(*) OVER () FROM tasks t ${cond} ORDER BY ${order} LIMIT ? OFFSET ?`).raw()
      .all(...args, query.limit, query.offset) as [number, number][]
    if (rows.length === 0) return { ids: [], total: query.offset === 0 ? 0 : count() }
    return { ids: rows.map((r) => r[0]), total: rows[0]![1] }
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
