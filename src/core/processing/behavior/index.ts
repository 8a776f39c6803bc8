// The `behavior` key of report.json (Cuckoo 2.0.7's cuckoo/processing/behavior.py; docs/reports.md): processes,
// processtree, summary, generic, apistats, anomaly. Three sources, used together when they exist:
// Aviary's analyzer log (logs/behavior.jsonl: processes, file changes, connections), the raw strace
// output of its Linux runs (logs/strace.log: system calls), and Cuckoo monitor logs (logs/<pid>.bson
// from Cuckoo's Windows analyzer: processes with API calls). Calls of both kinds go to the calls
// store (calls-store.ts), capped per process; behavior.processes[].calls are views of it, read from
// disk when used (calls-reader.ts), so no list of calls is ever held whole in memory.
// Like Cuckoo (analysis_size_limit), a .bson log over the size limit is skipped with a note.
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { ProcessEntry, ProcessSeen } from '../types.js'
import { addTo, readAviaryLog, type AviaryAnalyzerInfo, type Summary } from './aviary-log.js'
import type { CallsIndex, ProcessCallCounts } from './calls-schema.js'
import { storedCallsView } from './calls-reader.js'
import { CallsStoreWriter, DEFAULT_MAX_CALLS, removeCallsStore, type CommittedStore } from './calls-store.js'
import { readStraceLog } from './strace-calls.js'
import { buildProcessTree } from './tree.js'
import { parseMonitorLog, type MonitorProcess } from './windows-calls.js'
import { ARTIFACTS, artifactPath, MONITOR_LOG_EXT } from '../../storage/layout.js'

export { monitorCalls, type MonitorCall } from './windows-calls.js'
export { DEFAULT_MAX_CALLS } from './calls-store.js'

export interface BehaviorOptions {
  /** .bson logs larger than this are skipped (Cuckoo's analysis_size_limit, 128 MiB). */
  sizeLimit?: number
  /** Calls kept per process (the rest are counted only; default DEFAULT_MAX_CALLS). */
  maxCalls?: number
}

export interface BehaviorResult {
  /** The report's `behavior` key. */
  behavior: Record<string, unknown>
  /** The analyzer record of Aviary's log, when there is one (package, reason, monitors...). */
  analyzer: AviaryAnalyzerInfo | null
  /** Monitor `__action__` messages (Cuckoo puts them in debug.action). */
  actions: string[]
  /** Monitor `debug` messages. */
  debug: string[]
  /** What was skipped or cut short, for the task log. */
  notes: string[]
  /** What the analyst must know: a log that stops short (its calls after that point are missing). */
  incomplete: string[]
  /** The calls store's table of contents (calls/index.json), or null when no process had calls. */
  calls: CallsIndex | null
}

export const DEFAULT_SIZE_LIMIT = 128 * 1024 * 1024

/** Summary keys whose values are [from, to] pairs, as Cuckoo writes them. */
const PAIR_KEYS = new Set(['file_moved', 'file_copied'])

function summaryObject(s: Summary | undefined): Record<string, unknown[]> {
  return Object.fromEntries([...(s ?? new Map<string, Set<string>>())].map(([k, v]) => [
    k, PAIR_KEYS.has(k) ? [...v].map((x) => JSON.parse(x) as unknown) : [...v]
  ]))
}

function merge(into: Summary, from: Summary): void {
  for (const [k, values] of from) for (const v of values) addTo(into, k, v)
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false)
}

/** The behaviour options a task asks for: option `calls_max=N` sets the calls kept per process. */
export function behaviorOptions(task: Record<string, unknown>): BehaviorOptions {
  const options = typeof task.options === 'string' ? task.options : ''
  const m = /(?:^|,)\s*calls_max\s*=\s*(\d{1,9})\s*(?:,|$)/.exec(options)
  return m === null ? {} : { maxCalls: Number(m[1]) }
}

export async function analyzeBehaviorDetailed(dir: string, options: BehaviorOptions = {}): Promise<BehaviorResult> {
  const sizeLimit = options.sizeLimit ?? DEFAULT_SIZE_LIMIT
  const logs = artifactPath(dir, ARTIFACTS.logs)
  const processes: ProcessSeen[] = []
  const perProcess = new Map<number, Summary>()
  const summary: Summary = new Map()
  const apistats: Record<string, Record<string, number>> = {}
  const anomaly: { category: string; funcname: string; message: string }[] = []
  const result: BehaviorResult = { behavior: {}, analyzer: null, actions: [], debug: [], notes: [], incomplete: [], calls: null }
  const pids = new Set<number>()
  const addSummary = (pid: number, s: Summary): void => {
    merge(summary, s)
    const mine = perProcess.get(pid)
    if (mine === undefined) perProcess.set(pid, s)
    else merge(mine, s)
  }

  const jsonl = artifactPath(dir, ARTIFACTS.behaviorLog)
  if (await exists(jsonl)) {
    const aviary = await readAviaryLog(jsonl)
    result.analyzer = aviary.analyzer
    result.notes.push(...aviary.notes)
    for (const p of aviary.processes) {
      processes.push(p)
      pids.add(p.pid)
    }
    merge(summary, aviary.summary)
    for (const [pid, s] of aviary.perProcess) perProcess.set(pid, s)
  }

  const store = await CallsStoreWriter.create(dir, { maxCalls: options.maxCalls ?? DEFAULT_MAX_CALLS })
  let committed: CommittedStore | null = null
  try {
    const names = (await readdir(logs).catch(() => [] as string[])).filter((n) => n.endsWith(MONITOR_LOG_EXT)).sort()
    for (const name of names) {
      const path = join(logs, name)
      const size = (await stat(path)).size
      if (size > sizeLimit) {
        result.notes.push(`${ARTIFACTS.logs}/${name}: ${size} bytes is over the ${sizeLimit}-byte limit, not parsed`)
        continue
      }
      const log = await parseMonitorLog(path, { store, taken: pids, bufferDir: artifactPath(dir, ARTIFACTS.buffer) })
      result.notes.push(...log.notes.map((n) => n.replace(path, `${ARTIFACTS.logs}/${name}`)))
      result.actions.push(...log.actions)
      result.debug.push(...log.debug)
      anomaly.push(...log.anomalies)
      for (const p of log.processes) {
        if (p.ignored) {
          result.notes.push(`${ARTIFACTS.logs}/${name}: pid ${p.pid} already seen, its second process record is ignored`)
          continue
        }
        processes.push(reportProcess(p))
        addSummary(p.pid, p.summary)
        if (Object.keys(p.apistats).length > 0) apistats[String(p.pid)] = p.apistats
      }
    }

    const straceLog = artifactPath(dir, ARTIFACTS.straceLog)
    if (await exists(straceLog)) {
      const traced = await readStraceLog(straceLog, store, new Set(pids))
      result.notes.push(...traced.notes)
      if (traced.cut !== null) result.incomplete.push(traced.cut)
      for (const p of traced.processes) {
        if (pids.has(p.pid)) continue
        pids.add(p.pid)
        processes.push(p)
      }
      merge(summary, traced.summary)
      for (const [pid, s] of traced.perProcess) addSummary(pid, s)
      Object.assign(apistats, traced.apistats)
      const deleted = summary.get('file_deleted') ?? new Set<string>()
      for (const p of processes) p.process_path = kernelImage(p.process_path, traced.images.get(p.pid), deleted)
    }

    result.notes.push(...store.notes())
    if (store.pids().length > 0) {
      committed = await store.commit(new Map(processes.map((p) => [p.pid, p.process_name])))
    } else {
      await store.abort()
      await removeCallsStore(dir)
    }
  } catch (err) {
    await store.abort()
    throw err
  }

  const stored = new Map((committed?.index.processes ?? []).map((p) => [p.pid, p]))
  for (const p of processes) {
    const s = stored.get(p.pid)
    const counts: ProcessCallCounts = { calls_seen: s === undefined ? 0 : s.calls + s.dropped, calls_kept: s?.calls ?? 0 }
    Object.assign(p as ProcessEntry, counts)
    p.calls = committed !== null && s !== undefined ? storedCallsView(committed.dir, p.pid, s.calls) : []
  }
  result.calls = committed?.index ?? null

  processes.sort((a, b) => a.first_seen - b.first_seen)
  result.behavior = {
    processes,
    processtree: buildProcessTree(processes),
    summary: summaryObject(summary),
    generic: processes.map((p) => ({
      pid: p.pid,
      ppid: p.ppid,
      process_name: p.process_name,
      process_path: p.process_path,
      first_seen: p.first_seen,
      summary: summaryObject(perProcess.get(p.pid))
    })),
    apistats,
    anomaly
  }
  return result
}

/**
 * A Linux process's executable: what the guest's /proc said (`exe`, the kernel's view: symlinks
 * resolved), checked against the trace. The kernel appends " (deleted)" to an image whose file was
 * removed, which is no part of its name: it goes when the trace shows that file was the one exec'd
 * or removed. A poll that caught a fork before its exec shows the image it was forked with: the
 * exec'd file replaces it.
 */
export function kernelImage(path: string, image: { forkedAs: string; execed: string | null } | undefined, deleted: ReadonlySet<string>): string {
  if (image !== undefined && image.execed !== null && image.forkedAs !== '' && path === image.forkedAs && image.execed !== image.forkedAs) return image.execed
  const DELETED = ' (deleted)'
  if (!path.endsWith(DELETED)) return path
  const file = path.slice(0, -DELETED.length)
  return file === image?.execed || file === image?.forkedAs || deleted.has(file) ? file : path
}

/** A monitor process as behavior.processes[] shows it (Cuckoo's keys, without the parser's bookkeeping). */
function reportProcess(p: MonitorProcess): ProcessSeen {
  const { summary: _s, apistats: _a, is_64bit: _b, ignored: _i, ...entry } = p
  return entry
}

/** Cuckoo 2's `behavior` key for the analysis folder `dir`. */
export async function analyzeBehavior(dir: string, options: BehaviorOptions = {}): Promise<Record<string, unknown>> {
  return (await analyzeBehaviorDetailed(dir, options)).behavior
}
