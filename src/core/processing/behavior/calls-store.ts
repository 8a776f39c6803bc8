// The calls store: every process's kept calls on disk, never all in memory. Processing appends
// each call of each process (Linux system calls from logs/strace.log, Cuckoo monitor calls from
// logs/<pid>.bson) to `calls/<pid>.jsonl`, one JSON line per call, and its offset and kind (a
// 2-byte code for its [category, api]) to `calls/<pid>.idx`; `calls/index.json` lists the
// processes with their counts. The report writer streams the calls into report.json from there,
// and GET /aviary/tasks/{id}/calls pages and filters them from there.
//
// Memory: pending lines are buffered per process and written when a process has 256 KiB or all
// have 8 MiB waiting, so a run of a million calls costs a few MiB. Each process keeps at most
// `maxCalls` calls (the rest are counted only). The store is written into a temporary folder and
// renamed over calls/ at the end, so a rereport never leaves half of one store with half of another.
import { randomBytes } from 'node:crypto'
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { CALLS_DIR, CALLS_INDEX, callsDataName, callsOffsetsName } from '../../storage/layout'
import type { CallsIndex, StoredCall, StoredProcess } from './calls-schema'

/**
 * Calls kept per process by default. Each costs about 250 bytes of disk in the store and ~600 in
 * report.json (indented): 100,000 calls keep one process's share of report.json near 60 MB, which
 * viewers and Cuckoo's consumers still open, while a busy process's first 100,000 calls are far
 * more than an analyst pages through (apistats and the summary still count every call).
 */
export const DEFAULT_MAX_CALLS = 100_000
/** Index record: 6-byte offset + 2-byte kind. */
export const RECORD = 8
/** Kind code of the record after the last call (its offset is the end of the data). */
export const END_KIND = 0xffff
const MAX_KINDS = 0xfffe
/** A longer serialized call has its largest arguments shortened until it fits. */
export const MAX_CALL_BYTES = 64 * 1024
const FLUSH_ONE = 256 * 1024
const FLUSH_ALL = 8 * 1024 * 1024
/** Processes with calls in one store; a log naming more pids is a forged one. */
export const MAX_PROCESSES = 10_000
const MAX_NAME = 128

interface Pending {
  pid: number
  seen: number
  kept: number
  /** Bytes of <pid>.jsonl, written and pending. */
  bytes: number
  lines: string[]
  lineBytes: number
  idx: Buffer
  idxLen: number
  kinds: Map<number, number>
}

export interface CallsStoreOptions {
  /** Calls kept per process (DEFAULT_MAX_CALLS). */
  maxCalls?: number
}

/** What was stored, once committed. */
export interface CommittedStore {
  /** The store folder (the analysis folder's calls/). */
  dir: string
  index: CallsIndex
}

function shrink(call: StoredCall): string {
  let json = JSON.stringify(call)
  if (Buffer.byteLength(json) <= MAX_CALL_BYTES) return json
  const args = { ...call.arguments }
  const sizes = Object.entries(args).map(([k, v]) => [k, JSON.stringify(v)?.length ?? 0] as const).sort((a, b) => b[1] - a[1])
  for (const [k] of sizes) {
    const v = args[k]
    args[k] = Array.isArray(v) ? [...v.slice(0, 16), `... ${v.length - 16} more`] : typeof v === 'string' ? `${v.slice(0, 1024)}...` : '...'
    json = JSON.stringify({ ...call, arguments: args })
    if (Buffer.byteLength(json) <= MAX_CALL_BYTES) return json
  }
  return JSON.stringify({ ...call, arguments: { truncated: 'arguments too large' } })
}

export class CallsStoreWriter {
  private readonly procs = new Map<number, Pending>()
  private readonly kinds = new Map<string, number>()
  private readonly kindList: [string, string][] = []
  private pendingBytes = 0
  /** Calls not kept because their pid was not storable, or their kinds too many. */
  refused = 0
  private refusedPids = 0
  private done = false

  private constructor(private readonly analysisDir: string, readonly tmpDir: string, readonly maxCalls: number) {}

  /** A new store for the analysis folder `analysisDir` (written to a temporary folder inside it). */
  static async create(analysisDir: string, o: CallsStoreOptions = {}): Promise<CallsStoreWriter> {
    const tmp = path.join(analysisDir, `.${CALLS_DIR}.${randomBytes(6).toString('hex')}.tmp`)
    await mkdir(tmp, { recursive: true })
    const max = o.maxCalls ?? DEFAULT_MAX_CALLS
    return new CallsStoreWriter(analysisDir, tmp, Number.isSafeInteger(max) && max >= 0 ? max : DEFAULT_MAX_CALLS)
  }

  /** Calls seen for `pid` so far (kept or not). */
  seen(pid: number): number {
    return this.procs.get(pid)?.seen ?? 0
  }

  kept(pid: number): number {
    return this.procs.get(pid)?.kept ?? 0
  }

  /** Pids with calls, in the order their first call came. */
  pids(): number[] {
    return [...this.procs.keys()]
  }

  private kindOf(category: string, api: string): number | null {
    const c = category.slice(0, MAX_NAME)
    const a = api.slice(0, MAX_NAME)
    const key = `${c}\0${a}`
    let code = this.kinds.get(key)
    if (code === undefined) {
      if (this.kindList.length >= MAX_KINDS) return null
      code = this.kindList.length
      this.kinds.set(key, code)
      this.kindList.push([c, a])
    }
    return code
  }

  /**
   * Counts one call of `pid` and keeps it when the process is under the cap. True when the caller
   * should `await drain()` before the next call (enough is waiting to be written).
   */
  add(pid: number, call: StoredCall): boolean {
    if (this.done) throw new Error('calls store already committed')
    let p = this.procs.get(pid)
    if (p === undefined) {
      if (!Number.isSafeInteger(pid) || pid < 0 || this.procs.size >= MAX_PROCESSES) {
        this.refused++
        this.refusedPids++
        return false
      }
      p = { pid, seen: 0, kept: 0, bytes: 0, lines: [], lineBytes: 0, idx: Buffer.alloc(64 * RECORD), idxLen: 0, kinds: new Map() }
      this.procs.set(pid, p)
    }
    p.seen++
    if (p.kept >= this.maxCalls) return false
    const kind = this.kindOf(call.category, call.api)
    if (kind === null) {
      this.refused++
      return false
    }
    const line = `${shrink(call)}\n`
    const size = Buffer.byteLength(line)
    if (p.idxLen + RECORD > p.idx.length) {
      const grown = Buffer.alloc(p.idx.length * 2)
      p.idx.copy(grown, 0, 0, p.idxLen)
      p.idx = grown
    }
    p.idx.writeUIntLE(p.bytes, p.idxLen, 6)
    p.idx.writeUInt16LE(kind, p.idxLen + 6)
    p.idxLen += RECORD
    p.lines.push(line)
    p.lineBytes += size
    p.bytes += size
    p.kept++
    p.kinds.set(kind, (p.kinds.get(kind) ?? 0) + 1)
    this.pendingBytes += size + RECORD
    return p.lineBytes >= FLUSH_ONE || this.pendingBytes >= FLUSH_ALL
  }

  private async flush(p: Pending): Promise<void> {
    if (p.lines.length === 0) return
    const text = p.lines.join('')
    const idx = p.idx.subarray(0, p.idxLen)
    await appendTo(path.join(this.tmpDir, callsDataName(p.pid)), text)
    await appendTo(path.join(this.tmpDir, callsOffsetsName(p.pid)), idx)
    this.pendingBytes -= p.lineBytes + p.idxLen
    p.lines = []
    p.lineBytes = 0
    p.idxLen = 0
    if (p.idx.length > 64 * RECORD * 16) p.idx = Buffer.alloc(64 * RECORD)
  }

  /** Writes what is waiting: the processes over their share, or all when too much waits. */
  async drain(): Promise<void> {
    const all = this.pendingBytes >= FLUSH_ALL
    for (const p of this.procs.values()) if (all || p.lineBytes >= FLUSH_ONE) await this.flush(p)
  }

  /** Notes for the report: calls beyond the cap, calls that could not be stored. */
  notes(): string[] {
    const out: string[] = []
    for (const p of this.procs.values()) if (p.seen > p.kept) out.push(`pid ${p.pid}: ${p.seen - p.kept} call(s) beyond the ${this.maxCalls} kept`)
    if (this.refused > 0) {
      out.push(`${this.refused} call(s) not stored (${this.refusedPids > 0 ? `more than ${MAX_PROCESSES} processes or a bad pid` : `more than ${MAX_KINDS} distinct APIs`})`)
    }
    return out
  }

  /**
   * Writes everything, ends each offsets file, writes index.json and puts the store in place of
   * the analysis folder's calls/ (an older store is removed). `names` gives process names.
   */
  async commit(names: ReadonlyMap<number, string>): Promise<CommittedStore> {
    this.done = true
    const processes: StoredProcess[] = []
    for (const p of this.procs.values()) {
      await this.flush(p)
      const end = Buffer.alloc(RECORD)
      end.writeUIntLE(p.bytes, 0, 6)
      end.writeUInt16LE(END_KIND, 6)
      await appendTo(path.join(this.tmpDir, callsOffsetsName(p.pid)), end)
      const categories: Record<string, number> = {}
      const apis: Record<string, number> = {}
      for (const [code, n] of p.kinds) {
        const [category, api] = this.kindList[code] as [string, string]
        categories[category] = (categories[category] ?? 0) + n
        apis[api] = (apis[api] ?? 0) + n
      }
      processes.push({ pid: p.pid, process_name: names.get(p.pid) ?? '', calls: p.kept, dropped: p.seen - p.kept, categories, apis })
    }
    const index: CallsIndex = { version: 1, max_calls: this.maxCalls, kinds: this.kindList, processes }
    await writeFile(path.join(this.tmpDir, CALLS_INDEX), JSON.stringify(index))
    const final = path.join(this.analysisDir, CALLS_DIR)
    const old = path.join(this.analysisDir, `.${CALLS_DIR}.${randomBytes(6).toString('hex')}.old`)
    const hadOld = await rename(final, old).then(() => true, () => false)
    await rename(this.tmpDir, final)
    if (hadOld) await rm(old, { recursive: true, force: true })
    return { dir: final, index }
  }

  /** Drops the temporary folder (processing failed, or there were no calls). */
  async abort(): Promise<void> {
    this.done = true
    await rm(this.tmpDir, { recursive: true, force: true })
  }
}

async function appendTo(file: string, data: string | Buffer): Promise<void> {
  const fh = await open(file, 'a')
  try {
    await fh.writeFile(data)
  } finally {
    await fh.close()
  }
}

/** Removes the calls store of an analysis folder (a rereport that found no calls). */
export async function removeCallsStore(analysisDir: string): Promise<void> {
  await rm(path.join(analysisDir, CALLS_DIR), { recursive: true, force: true })
}
