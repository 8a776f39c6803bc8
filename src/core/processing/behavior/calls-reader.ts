// Reading the calls store (calls-store.ts) back: ranges of one process's calls by position, for the
// API (async) and for the report (a read-only array view). The view is what behavior.processes[]
// .calls holds after processing: an Array (Array.isArray is true, `length`, indexes and iteration
// work, so signatures read calls as they read Cuckoo's lists) whose items are read from disk a page
// at a time and forgotten after a few pages. The report writer asks it for its pages instead
// (STREAM_PAGES), so writing report.json reads each call once, asynchronously.
import { closeSync, openSync, readSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { STREAM_PAGES } from '../../reporting/json-writer'
import { callsDataName, callsOffsetsName } from '../../storage/layout'
import type { StoredCall } from './calls-schema'
import { RECORD } from './calls-store'

/** Calls per page of the view's cache, and pages it keeps. */
const PAGE = 512
const PAGES = 4
/** Calls per page streamed to the report writer. */
const STREAM_PAGE = 1024
/** Positions within this many calls of each other are read together. */
const SPAN = 4096
const SPAN_BYTES = 4 * 1024 * 1024

const BROKEN: StoredCall = { category: '', api: '', arguments: {}, return_value: null, status: 0, time: 0, tid: 0 }

function parseLines(text: string, count: number): StoredCall[] {
  const out: StoredCall[] = []
  let at = 0
  for (let i = 0; i < count; i++) {
    const nl = text.indexOf('\n', at)
    const line = text.slice(at, nl < 0 ? text.length : nl)
    at = nl < 0 ? text.length : nl + 1
    try {
      out.push(JSON.parse(line) as StoredCall)
    } catch {
      out.push({ ...BROKEN, arguments: {} })
    }
  }
  return out
}

/** Offsets and kinds of records [start, start + count] (count + 1 records: each call's end too). */
export interface Records {
  offsets: number[]
  kinds: number[]
}

function decodeRecords(buf: Buffer, n: number): Records {
  const offsets: number[] = []
  const kinds: number[] = []
  for (let i = 0; i + RECORD <= n; i += RECORD) {
    offsets.push(buf.readUIntLE(i, 6))
    kinds.push(buf.readUInt16LE(i + 6))
  }
  return { offsets, kinds }
}

/** Calls [start, start + count) of `pid` in the store folder `dir`, read synchronously. */
export function readCallsSync(dir: string, pid: number, start: number, count: number): StoredCall[] {
  if (count <= 0) return []
  const idx = openSync(path.join(dir, callsOffsetsName(pid)), 'r')
  let recs: Records
  try {
    const buf = Buffer.allocUnsafe((count + 1) * RECORD)
    recs = decodeRecords(buf, readSync(idx, buf, 0, buf.length, start * RECORD))
  } finally {
    closeSync(idx)
  }
  const n = recs.offsets.length - 1
  if (n <= 0) return []
  const from = recs.offsets[0] as number
  const data = openSync(path.join(dir, callsDataName(pid)), 'r')
  try {
    const buf = Buffer.allocUnsafe((recs.offsets[n] as number) - from)
    const got = readSync(data, buf, 0, buf.length, from)
    return parseLines(buf.toString('utf8', 0, got), n)
  } finally {
    closeSync(data)
  }
}

/** One process's files of a store, open for reading (the API and the report writer). */
export class StoredCallsFile {
  private constructor(readonly idx: FileHandle, readonly data: FileHandle, readonly count: number) {}

  static async open(dir: string, pid: number): Promise<StoredCallsFile> {
    const idx = await open(path.join(dir, callsOffsetsName(pid)), 'r')
    try {
      const data = await open(path.join(dir, callsDataName(pid)), 'r')
      const size = (await idx.stat()).size
      return new StoredCallsFile(idx, data, Math.max(0, Math.floor(size / RECORD) - 1))
    } catch (err) {
      await idx.close()
      throw err
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.idx.close().catch(() => undefined), this.data.close().catch(() => undefined)])
  }

  async records(start: number, count: number): Promise<Records> {
    const buf = Buffer.allocUnsafe((count + 1) * RECORD)
    const { bytesRead } = await this.idx.read(buf, 0, buf.length, start * RECORD)
    return decodeRecords(buf, bytesRead)
  }

  /**
   * The positions whose kind `ok` accepts, in order: the records are read a block at a time into
   * one reused buffer (a filter over a million calls allocates nothing per call).
   */
  async positionsOfKinds(ok: (kind: number) => boolean, push: (position: number) => void): Promise<void> {
    const block = 64 * 1024
    const buf = Buffer.allocUnsafe(block * RECORD)
    for (let at = 0; at < this.count; at += block) {
      const n = Math.min(block, this.count - at)
      const { bytesRead } = await this.idx.read(buf, 0, n * RECORD, at * RECORD)
      for (let i = 0; i + 1 <= bytesRead / RECORD; i++) if (ok(buf.readUInt16LE(i * RECORD + 6))) push(at + i)
    }
  }

  /** Calls [start, start + count), in one read of the data file. */
  async range(start: number, count: number): Promise<StoredCall[]> {
    const n = Math.max(0, Math.min(count, this.count - start))
    if (n === 0) return []
    const recs = await this.records(start, n)
    const from = recs.offsets[0] as number
    const to = recs.offsets[recs.offsets.length - 1] as number
    const buf = Buffer.allocUnsafe(to - from)
    const { bytesRead } = await this.data.read(buf, 0, buf.length, from)
    return parseLines(buf.toString('utf8', 0, bytesRead), recs.offsets.length - 1)
  }

  /**
   * The calls at the (ascending) positions given. Positions close to each other (a filter's
   * matches) are read with one read of their records and one of their lines; only the lines
   * asked for are parsed.
   */
  async at(positions: ArrayLike<number>): Promise<StoredCall[]> {
    const out: StoredCall[] = []
    let i = 0
    while (i < positions.length) {
      const first = positions[i] as number
      let j = i + 1
      while (j < positions.length && (positions[j] as number) - first < SPAN) j++
      const last = positions[j - 1] as number
      const recs = await this.records(first, last - first + 1)
      const base = recs.offsets[0] as number
      const end = recs.offsets[recs.offsets.length - 1] as number
      if (end - base > SPAN_BYTES) {
        // Large calls between them: one read per call instead of one big read.
        for (let k = i; k < j; k++) out.push(...(await this.range(positions[k] as number, 1)))
        i = j
        continue
      }
      const buf = Buffer.allocUnsafe(Math.max(0, end - base))
      const { bytesRead } = await this.data.read(buf, 0, buf.length, base)
      for (let k = i; k < j; k++) {
        const r = (positions[k] as number) - first
        const to = Math.min((recs.offsets[r + 1] ?? end) - base, bytesRead)
        const from = Math.min((recs.offsets[r] ?? end) - base, to)
        out.push(...parseLines(buf.toString('utf8', from, to), 1))
      }
      i = j
    }
    return out
  }
}

/** A read-only array over the `length` stored calls of `pid`, read on demand (see the header). */
export function storedCallsView(dir: string, pid: number, length: number): StoredCall[] {
  const cache = new Map<number, StoredCall[]>()
  const item = (i: number): StoredCall | undefined => {
    const page = Math.floor(i / PAGE)
    let calls = cache.get(page)
    if (calls === undefined) {
      calls = readCallsSync(dir, pid, page * PAGE, Math.min(PAGE, length - page * PAGE))
      cache.set(page, calls)
      if (cache.size > PAGES) cache.delete(cache.keys().next().value as number)
    }
    return calls[i - page * PAGE]
  }
  const index = (prop: string | symbol): number | null => {
    if (typeof prop !== 'string' || !/^(?:0|[1-9]\d{0,15})$/.test(prop)) return null
    const i = Number(prop)
    return i < length ? i : null
  }
  async function* pages(): AsyncGenerator<StoredCall[]> {
    if (length === 0) return
    const file = await StoredCallsFile.open(dir, pid)
    try {
      for (let at = 0; at < length; at += STREAM_PAGE) yield await file.range(at, Math.min(STREAM_PAGE, length - at))
    } finally {
      await file.close()
    }
  }
  const readOnly = (): boolean => false
  return new Proxy<StoredCall[]>([], {
    get(target, prop, receiver) {
      if (prop === 'length') return length
      if (prop === STREAM_PAGES) return pages
      const i = index(prop)
      if (i !== null) return item(i)
      return Reflect.get(target, prop, receiver)
    },
    has(target, prop) {
      return index(prop) !== null || Reflect.has(target, prop)
    },
    ownKeys() {
      return [...Array.from({ length }, (_, i) => String(i)), 'length']
    },
    getOwnPropertyDescriptor(target, prop) {
      if (prop === 'length') return { value: length, writable: true, enumerable: false, configurable: false }
      const i = index(prop)
      if (i !== null) return { value: item(i), writable: false, enumerable: true, configurable: true }
      return Reflect.getOwnPropertyDescriptor(target, prop)
    },
    set: readOnly,
    defineProperty: readOnly,
    deleteProperty: readOnly
  })
}
