// A task's calls, from the calls store processing wrote (src/core/processing/behavior/calls-store.ts):
// the processes that have calls, and one filtered page of one process's calls. Served from the
// store's files with flat memory: a page reads its lines by offset; a filter is answered by one
// pass over the store (the 8-byte records for categories and APIs, the lines for a text search,
// which a case-insensitive scan of each 1 MiB chunk skips when nothing in it matches), and the
// positions it matched (4 bytes each) are kept for the next pages in a small LRU cache.
// Results exist only while their task does; every file is looked up inside the task's folder.
import { open, readFile, realpath, stat } from 'node:fs/promises'
import path from 'node:path'
import { ErrorCodes } from '../../shared/errors'
import type { CallItem, CallsListing, CallsPage } from '../../shared/api/schemas'
import { notFound } from '../errors'
import { StoredCallsFile } from '../processing/behavior/calls-reader'
import type { CallsIndex, StoredCall } from '../processing/behavior/calls-schema'
import { ARTIFACTS, CALLS_DIR, CALLS_INDEX, callsDataName, isInside } from '../storage/layout'

export interface CallsFilter {
  categories: string[]
  apis: string[]
  /** Searched case-insensitively in the API name, the argument values and the return value. */
  q: string
}

/** Where a task's analysis folder is (resolved, inside the data folder); throws the route's 404s. */
export type AnalysisLocator = (id: number) => Promise<string>

const INDEXES = 16
/** Filters whose matches are kept, and the bytes they may take together. */
const FILTERS = 32
const FILTER_BYTES = 64 * 1024 * 1024
const SCAN_BYTES = 64 * 1024
/** Nested values searched by q (argument lists of lists...). */
const MAX_DEPTH = 4

const noCalls = () => notFound('This task has no processed calls', ErrorCodes.REPORT_NOT_FOUND)

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

function valueHas(v: unknown, needle: string, depth = 0): boolean {
  if (typeof v === 'string') return v.toLowerCase().includes(needle)
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v).toLowerCase().includes(needle)
  if (v === null || typeof v !== 'object' || depth >= MAX_DEPTH) return false
  for (const x of Array.isArray(v) ? v : Object.values(v)) if (valueHas(x, needle, depth + 1)) return true
  return false
}

/** Whether a call matches text `q` (lower-cased): its API, argument values or return value. */
export function callHas(call: StoredCall, needle: string): boolean {
  return valueHas(call.api, needle) || valueHas(call.return_value, needle) || valueHas(call.arguments, needle, 1)
}

function item(index: number, c: StoredCall): CallItem {
  const out: CallItem = {
    index, category: c.category, api: c.api, arguments: c.arguments, return_value: c.return_value, status: c.status, time: c.time, tid: c.tid
  }
  if (typeof c.errno === 'string') out.errno = c.errno
  return out
}

/** Growable list of positions. */
class Positions {
  private a = new Uint32Array(1024)
  n = 0
  push(i: number): void {
    if (this.n === this.a.length) {
      const b = new Uint32Array(this.a.length * 2)
      b.set(this.a)
      this.a = b
    }
    this.a[this.n++] = i
  }
  done(): Uint32Array {
    return this.a.slice(0, this.n)
  }
}

export class CallsService {
  private readonly indexes = new Map<string, { stamp: string; index: CallsIndex }>()
  private readonly filters = new Map<string, Promise<Uint32Array>>()
  private filterBytes = 0

  constructor(private readonly locate: AnalysisLocator) {}

  /** The store folder of task `id` and its index; 404 when there is none. */
  private async store(id: number): Promise<{ dir: string; index: CallsIndex; stamp: string }> {
    const analysis = await this.locate(id)
    let dir: string
    try {
      dir = await realpath(path.join(analysis, CALLS_DIR))
    } catch {
      throw noCalls()
    }
    if (!isInside(analysis, dir) || dir === analysis) throw noCalls()
    const file = path.join(dir, CALLS_INDEX)
    const st = await stat(file).catch(() => null)
    if (st === null || !st.isFile()) throw noCalls()
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`
    const cached = this.indexes.get(dir)
    if (cached?.stamp === stamp) return { dir, index: cached.index, stamp }
    let index: CallsIndex
    try {
      index = JSON.parse(await readFile(file, 'utf8')) as CallsIndex
    } catch {
      throw noCalls()
    }
    if (!Array.isArray(index.processes) || index.processes.length === 0 || !Array.isArray(index.kinds)) throw noCalls()
    this.indexes.delete(dir)
    this.indexes.set(dir, { stamp, index })
    if (this.indexes.size > INDEXES) this.indexes.delete(this.indexes.keys().next().value as string)
    return { dir, index, stamp }
  }

  async listing(id: number): Promise<CallsListing> {
    const { index } = await this.store(id)
    return {
      task_id: id,
      processes: index.processes.map((p) => ({ pid: p.pid, process_name: p.process_name, calls: p.calls, dropped: p.dropped, categories: p.categories, apis: p.apis }))
    }
  }

  async page(id: number, pid: number, offset: number, limit: number, filter: CallsFilter): Promise<CallsPage> {
    const { dir, index, stamp } = await this.store(id)
    const proc = index.processes.find((p) => p.pid === pid)
    if (proc === undefined) throw notFound(`Task ${id} has no calls of pid ${pid}`, ErrorCodes.NOT_FOUND)
    const file = await StoredCallsFile.open(dir, pid).catch(() => {
      throw noCalls()
    })
    try {
      const filtered = filter.categories.length > 0 || filter.apis.length > 0 || filter.q !== ''
      if (!filtered) {
        const calls = await file.range(offset, limit)
        return { task_id: id, pid, total: file.count, offset, calls: calls.map((c, i) => item(offset + i, c)) }
      }
      const key = JSON.stringify([dir, stamp, pid, [...filter.categories].sort(), [...filter.apis].sort(), filter.q.toLowerCase()])
      const positions = await this.matches(key, dir, pid, index, file, filter)
      const wanted = positions.subarray(offset, offset + limit)
      const calls = await file.at(wanted)
      return { task_id: id, pid, total: positions.length, offset, calls: calls.map((c, i) => item(wanted[i] as number, c)) }
    } finally {
      await file.close()
    }
  }

  /** The positions of the calls a filter keeps, computed once per filter (see the header). */
  private matches(key: string, dir: string, pid: number, index: CallsIndex, file: StoredCallsFile, filter: CallsFilter): Promise<Uint32Array> {
    const known = this.filters.get(key)
    if (known !== undefined) {
      this.filters.delete(key)
      this.filters.set(key, known)
      return known
    }
    const p = this.scan(dir, pid, index, file, filter)
    this.filters.set(key, p)
    p.then((positions) => {
      this.filterBytes += positions.byteLength
      while ((this.filters.size > FILTERS || this.filterBytes > FILTER_BYTES) && this.filters.size > 1) {
        const [oldest, pending] = this.filters.entries().next().value as [string, Promise<Uint32Array>]
        this.filters.delete(oldest)
        void pending.then((old) => (this.filterBytes -= old.byteLength), () => undefined)
      }
    }, () => this.filters.delete(key))
    return p
  }

  private async scan(dir: string, pid: number, index: CallsIndex, file: StoredCallsFile, filter: CallsFilter): Promise<Uint32Array> {
    const cats = new Set(filter.categories)
    const apis = new Set(filter.apis)
    const kindOk = index.kinds.map(([c, a]) => (cats.size === 0 || cats.has(c)) && (apis.size === 0 || apis.has(a)))
    let candidates: Uint32Array | null = null
    if (cats.size > 0 || apis.size > 0) {
      if (!kindOk.includes(true)) return new Uint32Array(0)
      const out = new Positions()
      await file.positionsOfKinds((k) => kindOk[k] === true, (i) => out.push(i))
      candidates = out.done()
      if (filter.q === '') return candidates
    }
    return this.search(dir, pid, file.count, candidates, filter.q)
  }

  /**
   * Lines matching `q`, among `candidates` (ascending positions) or all. With a plain ASCII q the
   * raw lines are searched first (JSON writes such text as it is): a chunk without a match is
   * skipped whole, and only the lines around a match are cut out and parsed.
   */
  private async search(dir: string, pid: number, count: number, candidates: Uint32Array | null, q: string): Promise<Uint32Array> {
    const needle = q.toLowerCase()
    const prefilter = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(q)
    const re = prefilter ? new RegExp(escapeRe(q), 'gi') : null
    const out = new Positions()
    let c = 0
    const wanted = (line: number): boolean => {
      if (line >= count) return false
      if (candidates === null) return true
      while (c < candidates.length && (candidates[c] as number) < line) c++
      return candidates[c] === line
    }
    const check = (i: number, l: string): void => {
      if (!wanted(i)) return
      try {
        if (callHas(JSON.parse(l) as StoredCall, needle)) out.push(i)
      } catch {
        // a damaged line matches nothing
      }
    }
    const fh = await open(path.join(dir, callsDataName(pid)), 'r')
    try {
      // One reused buffer: the tail of a chunk (a line cut by the read) moves to its start, so no
      // buffer is allocated per chunk (they would pile up as external memory until a full GC).
      const buf = Buffer.allocUnsafe(SCAN_BYTES)
      let kept = 0
      let pos = 0
      let first = 0
      for (;;) {
        const { bytesRead } = await fh.read(buf, kept, buf.length - kept, pos)
        if (bytesRead === 0) break
        pos += bytesRead
        const filled = kept + bytesRead
        const last = buf.lastIndexOf(10, filled - 1)
        if (last < 0) {
          // A line longer than the buffer (the store keeps calls far shorter): skipped.
          kept = 0
          continue
        }
        const text = buf.toString('utf8', 0, last)
        kept = filled - last - 1
        buf.copy(buf, 0, last + 1, filled)
        // The chunk's lines are first .. first + newlines; `line` starts at character `start`.
        let line = first
        let start = 0
        if (re !== null) {
          re.lastIndex = 0
          for (let m = re.exec(text); m !== null; m = re.exec(text)) {
            for (let nl = text.indexOf('\n', start); nl !== -1 && nl < m.index; nl = text.indexOf('\n', start)) {
              line++
              start = nl + 1
            }
            const nl = text.indexOf('\n', m.index)
            const end = nl === -1 ? text.length : nl
            check(line, text.slice(start, end))
            re.lastIndex = end + 1
          }
        } else {
          for (let nl = text.indexOf('\n'); ; nl = text.indexOf('\n', start)) {
            check(line++, text.slice(start, nl === -1 ? text.length : nl))
            if (nl === -1) break
            start = nl + 1
          }
        }
        let lines = 1
        for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', nl + 1)) lines++
        first += lines
      }
    } finally {
      await fh.close()
    }
    return out.done()
  }
}

/**
 * Finds a task's analysis folder from what ResultsService serves: its report.json, which
 * processing writes after the calls store (reports/ inside the folder named by the task id).
 * The API context carries no storage layout; this keeps the lookup to ResultsService's checks
 * (the task exists, the file resolves inside the data folder).
 */
export function analysisFromReport(report: (id: number) => Promise<{ kind: string; path?: string }>): AnalysisLocator {
  return async (id) => {
    const r = await report(id).catch((err: unknown) => {
      if ((err as { statusCode?: number }).statusCode === 404 && (err as { code?: string }).code === ErrorCodes.REPORT_NOT_FOUND) throw noCalls()
      throw err
    })
    if (r.kind !== 'file' || r.path === undefined) throw noCalls()
    const reports = path.dirname(r.path)
    const analysis = path.dirname(reports)
    if (path.basename(reports) !== ARTIFACTS.reports || path.basename(analysis) !== String(id)) throw noCalls()
    return analysis
  }
}

