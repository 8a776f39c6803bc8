// Turns one Cuckoo monitor log (logs/<pid>.bson, written by Cuckoo's Windows analyzer) into the
// process, its API calls, its per-process summary and its API counts, the way Cuckoo 2 reports
// them (netlog.py BsonParser + platform/windows.py): `info` messages declare each API index (name,
// argument names and types, category, flag tables) before its first call; `__process__` carries
// the process facts with a FILETIME; `buffer` messages are stored as buffer/<sha1> and linked to
// the next call; `debug` carries a message. Calls go to the calls store (calls-store.ts), which
// keeps each process's first ones up to its cap on disk and counts the rest, so a huge log costs
// no memory for its calls.
import { createHash } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ProcessSeen } from '../types.js'
import type { CallsStoreWriter } from './calls-store.js'
import { readBsonStream, type BsonStreamEnd } from './bson.js'
import { convert, list, parseInfo, plain, resolveFlags, str, type ApiInfo } from './monitor-args.js'
import { SUMMARY_RULES, ntSuccess } from './summary-map.js'

/** One API call as behavior.processes[].calls[] shows it. */
export interface MonitorCall {
  api: string
  category: string
  status: unknown
  return_value: unknown
  arguments: Record<string, unknown>
  flags: Record<string, string>
  /** Epoch seconds: the process's first_seen plus the call's tick offset. */
  time: number
  tid: number
  stacktrace: unknown[]
  last_error?: unknown
  nt_status?: unknown
  buffer?: string
}

export interface MonitorProcess extends ProcessSeen {
  is_64bit: boolean
  /** Its pid was taken already (by another log, or Aviary's analyzer log): its calls were not stored. */
  ignored: boolean
  summary: Map<string, Set<string>>
  apistats: Record<string, number>
}

export interface MonitorLog {
  processes: MonitorProcess[]
  anomalies: { category: string; funcname: string; message: string }[]
  actions: string[]
  debug: string[]
  /** Things the analyst should know: truncated stream, calls dropped, unknown API indexes. */
  notes: string[]
}

export interface MonitorLogOptions {
  /** Where the calls go (each process's first ones up to the store's cap). */
  store: CallsStoreWriter
  /** Pids already reported; a process of this log with one of them is `ignored`. The log's own are added. */
  taken: Set<number>
  /** Where `buffer` messages go (the analysis folder's buffer/), or null to not keep them. */
  bufferDir?: string | null
}

const FILETIME_EPOCH_OFFSET = 11644473600

function basenameWin(path: string): string {
  const parts = path.split(/[\\/]/)
  return parts[parts.length - 1] ?? path
}

function newProcess(args: Record<string, unknown>, tid: number): MonitorProcess {
  const low = Number(args.time_low ?? args.TimeLow ?? 0) >>> 0
  const high = Number(args.time_high ?? args.TimeHigh ?? 0) >>> 0
  const first = (high * 2 ** 32 + low) / 1e7 - FILETIME_EPOCH_OFFSET
  const path = str(args.module_path ?? args.ModulePath)
  const entry: MonitorProcess & { tid: number; time: number; type: string } = {
    pid: Number(args.pid ?? args.process_identifier ?? args.ProcessIdentifier ?? 0),
    ppid: Number(args.ppid ?? args.parent_process_identifier ?? args.ParentProcessIdentifier ?? 0),
    process_name: basenameWin(path),
    process_path: path,
    command_line: str(args.command_line),
    first_seen: first,
    exited: null,
    track: args.track === undefined ? true : Boolean(args.track),
    modules: Array.isArray(args.modules) ? args.modules : [],
    calls: [],
    is_64bit: Boolean(args.is_64bit),
    ignored: false,
    summary: new Map(),
    apistats: {},
    tid,
    time: 0,
    type: 'process'
  }
  return entry
}

function add(proc: MonitorProcess, category: string, value: unknown): void {
  if (value === undefined || value === null) return
  const text = str(value)
  let set = proc.summary.get(category)
  if (set === undefined) proc.summary.set(category, (set = new Set()))
  set.add(text)
}

/** Applies the summary table to one call (platform/windows.py BehaviorReconstructor semantics). */
function summarize(proc: MonitorProcess, handles: Map<string, string>, call: MonitorCall): void {
  const rule = SUMMARY_RULES.get(call.api)
  if (rule === undefined) return
  const a = call.arguments
  if ('category' in rule) {
    if (rule.ifNonEmpty === true && (a[rule.arg] === '' || a[rule.arg] === undefined || a[rule.arg] === null)) return
    add(proc, rule.category, a[rule.arg])
    return
  }
  switch (rule.special) {
    case 'create-file': {
      const path = str(a.filepath)
      if (a.file_handle !== undefined) handles.set(str(a.file_handle), path)
      if (!ntSuccess(call.return_value)) return add(proc, 'file_failed', path)
      const info = (call.flags.status_info ?? '').toLowerCase()
      const category = info === 'file_overwritten' || info === 'file_superseded' ? 'file_recreated'
        : info === 'file_does_not_exist' ? 'file_failed' : info === 'file_created' ? 'file_created' : 'file_opened'
      return add(proc, category, path)
    }
    case 'read-file':
    case 'write-file': {
      const path = handles.get(str(a.file_handle))
      if (path !== undefined && ntSuccess(call.return_value)) add(proc, rule.special === 'read-file' ? 'file_read' : 'file_written', path)
      return
    }
    case 'close-handle':
      handles.delete(str(a.handle))
      return
    case 'create-process':
      if (a.track !== 0 && a.track !== false) add(proc, 'command_line', str(a.command_line) || str(a.filepath))
      return
    case 'shell-execute':
      add(proc, 'command_line', str(a.parameters) !== '' ? `${str(a.filepath)} ${str(a.parameters)}` : str(a.filepath))
      return
    case 'download':
      add(proc, 'downloads_file', a.url)
      add(proc, 'file_opened', a.filepath)
      add(proc, 'file_written', a.filepath)
  }
}

/**
 * Walks one monitor BSON log: fills `out` (processes, anomalies, actions, debug, notes) and
 * yields every API call with its process. Never throws on bad content: a bad tail ends the log.
 */
async function* walk(path: string, bufferDir: string | null, out: MonitorLog): AsyncGenerator<[MonitorProcess, MonitorCall]> {
  const infos = new Map<number, ApiInfo>()
  let proc: MonitorProcess | null = null
  let is64 = false
  let pendingBuffer: string | null = null
  let unknownIndexes = 0
  let end: BsonStreamEnd | null = null
  for await (const d of readBsonStream(path, (e) => (end = e))) {
    const type = typeof d.type === 'string' ? d.type : 'none'
    const index = typeof d.I === 'number' ? d.I : -1
    if (type === 'info') {
      infos.set(index, parseInfo(d))
      continue
    }
    if (type === 'buffer') {
      const bytes = Buffer.isBuffer(d.buffer) ? d.buffer : Buffer.from(str(d.buffer), 'latin1')
      pendingBuffer = createHash('sha1').update(bytes).digest('hex')
      if (bufferDir !== null) {
        await mkdir(bufferDir, { recursive: true })
        await writeFile(join(bufferDir, pendingBuffer), bytes)
      }
      continue
    }
    if (type === 'debug') {
      if (out.debug.length < 1000) out.debug.push(str(d.msg))
      continue
    }
    const info = infos.get(index)
    if (info === undefined) {
      unknownIndexes++
      continue
    }
    const raw = list(d.args)
    if (raw.length !== info.argNames.length) {
      out.notes.push(`${info.name}: ${raw.length} arguments for ${info.argNames.length} declared, call skipped`)
      continue
    }
    const args: Record<string, unknown> = {}
    raw.forEach((v, i) => (args[info.argNames[i] ?? String(i)] = convert(v, info.argTypes[i] ?? null, is64)))
    const tid = typeof d.T === 'number' ? d.T : 0
    const tick = typeof d.t === 'number' ? d.t : 0
    if (info.name === '__process__') {
      is64 = Boolean(args.is_64bit)
      proc = newProcess(args, tid)
      out.processes.push(proc)
      continue
    }
    if (info.name === '__thread__') continue
    if (info.name === '__action__') {
      out.actions.push(str(args.action))
      continue
    }
    if (proc === null) {
      out.notes.push(`${info.name} before any __process__ message, skipped`)
      continue
    }
    const status = 'is_success' in args ? args.is_success : 1
    const retval = 'retval' in args ? args.retval : 0
    delete args.is_success
    delete args.retval
    const call: MonitorCall = {
      api: info.name,
      category: info.category,
      status,
      return_value: retval,
      arguments: args,
      flags: resolveFlags(info, args),
      time: proc.first_seen + tick / 1000,
      tid,
      stacktrace: list(d.s).map(plain)
    }
    if ('e' in d && 'E' in d) {
      call.last_error = plain(d.e)
      call.nt_status = plain(d.E)
    }
    if (pendingBuffer !== null) {
      call.buffer = pendingBuffer
      pendingBuffer = null
    }
    if (info.name === '__anomaly__') out.anomalies.push({ category: str(args.subcategory), funcname: str(args.function_name), message: str(args.message) })
    yield [proc, call]
  }
  const e = end as BsonStreamEnd | null
  if (e !== null && !e.complete) out.notes.push(`${path}: log ends early at byte ${e.offset}: ${e.reason ?? ''}`)
  if (unknownIndexes > 0) out.notes.push(`${path}: ${unknownIndexes} message(s) with an API index never declared by an info message`)
}

/** Parses one monitor BSON log: processes with their full summary and apistats; calls go to the store. */
export async function parseMonitorLog(path: string, options: MonitorLogOptions): Promise<MonitorLog> {
  const out: MonitorLog = { processes: [], anomalies: [], actions: [], debug: [], notes: [] }
  const registered = new Set<MonitorProcess>()
  const register = (p: MonitorProcess): void => {
    if (registered.has(p)) return
    registered.add(p)
    if (options.taken.has(p.pid)) p.ignored = true
    else options.taken.add(p.pid)
  }
  let handlesOf: MonitorProcess | null = null
  let handles = new Map<string, string>()
  for await (const [proc, call] of walk(path, options.bufferDir ?? null, out)) {
    if (handlesOf !== proc) {
      handlesOf = proc
      handles = new Map()
      register(proc)
    }
    if (proc.ignored) continue
    proc.apistats[call.api] = (proc.apistats[call.api] ?? 0) + 1
    summarize(proc, handles, call)
    if (options.store.add(proc.pid, call)) await options.store.drain()
  }
  // A process without calls still takes its pid.
  for (const p of out.processes) register(p)
  return out
}

/**
 * Every API call of one monitor log, read again from the file one at a time: for a report writer
 * that streams all calls (as Cuckoo's MonitorProcessLog re-reads the log at reporting time)
 * without holding them in memory.
 */
export async function* monitorCalls(path: string): AsyncGenerator<{ pid: number; call: MonitorCall }> {
  const out: MonitorLog = { processes: [], anomalies: [], actions: [], debug: [], notes: [] }
  for await (const [proc, call] of walk(path, null, out)) yield { pid: proc.pid, call }
}
