// The `behavior` key of report.json (shared/reference/cuckoo-internals.md §7.2): processes,
// processtree, summary, generic, apistats, anomaly. Two sources, used together when both exist:
// Aviary's analyzer log (logs/behavior.jsonl: processes, file changes, connections; no API calls)
// and Cuckoo monitor logs (logs/<pid>.bson from Cuckoo's Windows analyzer: processes with API calls).
// Like Cuckoo (analysis_size_limit), a .bson log over the size limit is skipped with a note.
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { ProcessEntry } from '../types.js'
import { addTo, readAviaryLog, type AviaryAnalyzerInfo, type Summary } from './aviary-log.js'
import { buildProcessTree } from './tree.js'
import { parseMonitorLog, type MonitorProcess } from './windows-calls.js'

export { monitorCalls, DEFAULT_MAX_CALLS, type MonitorCall } from './windows-calls.js'

export interface BehaviorOptions {
  /** .bson logs larger than this are skipped (Cuckoo's analysis_size_limit, 128 MiB). */
  sizeLimit?: number
  /** API calls kept per process (the rest are counted only; default DEFAULT_MAX_CALLS = 10 000). */
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
  /** What was skipped or cut short, for the report's debug.errors or the task log. */
  notes: string[]
  /**
   * pid → its monitor log (absolute path). processes[].calls holds the first `maxCalls` calls;
   * a report writer that wants every call streams them with monitorCalls(path).
   */
  callLogs: Record<string, string>
}

export const DEFAULT_SIZE_LIMIT = 128 * 1024 * 1024

function summaryObject(s: Summary | undefined): Record<string, string[]> {
  return Object.fromEntries([...(s ?? new Map<string, Set<string>>())].map(([k, v]) => [k, [...v]]))
}

function merge(into: Summary, from: Summary): void {
  for (const [k, values] of from) for (const v of values) addTo(into, k, v)
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false)
}

export async function analyzeBehaviorDetailed(dir: string, options: BehaviorOptions = {}): Promise<BehaviorResult> {
  const sizeLimit = options.sizeLimit ?? DEFAULT_SIZE_LIMIT
  const logs = join(dir, 'logs')
  const processes: ProcessEntry[] = []
  const perProcess = new Map<number, Summary>()
  const summary: Summary = new Map()
  const apistats: Record<string, Record<string, number>> = {}
  const anomaly: { category: string; funcname: string; message: string }[] = []
  const result: BehaviorResult = { behavior: {}, analyzer: null, actions: [], debug: [], notes: [], callLogs: {} }
  const pids = new Set<number>()

  const jsonl = join(logs, 'behavior.jsonl')
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

  const names = (await readdir(logs).catch(() => [] as string[])).filter((n) => n.endsWith('.bson')).sort()
  for (const name of names) {
    const path = join(logs, name)
    const size = (await stat(path)).size
    if (size > sizeLimit) {
      result.notes.push(`logs/${name}: ${size} bytes is over the ${sizeLimit}-byte limit, not parsed`)
      continue
    }
    const log = await parseMonitorLog(path, { maxCalls: options.maxCalls, bufferDir: join(dir, 'buffer') })
    result.notes.push(...log.notes.map((n) => n.replace(path, `logs/${name}`)))
    result.actions.push(...log.actions)
    result.debug.push(...log.debug)
    anomaly.push(...log.anomalies)
    for (const p of log.processes) {
      if (pids.has(p.pid)) {
        result.notes.push(`logs/${name}: pid ${p.pid} already seen, its second process record is ignored`)
        continue
      }
      pids.add(p.pid)
      result.callLogs[String(p.pid)] = path
      processes.push(reportProcess(p))
      merge(summary, p.summary)
      perProcess.set(p.pid, p.summary)
      if (Object.keys(p.apistats).length > 0) apistats[String(p.pid)] = p.apistats
    }
  }

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

/** A monitor process as behavior.processes[] shows it (Cuckoo's keys, without the parser's bookkeeping). */
function reportProcess(p: MonitorProcess): ProcessEntry {
  const { summary: _s, apistats: _a, calls_dropped: _c, is_64bit: _b, ...entry } = p
  return entry
}

/** Cuckoo 2's `behavior` key for the analysis folder `dir`. */
export async function analyzeBehavior(dir: string): Promise<Record<string, unknown>> {
  return (await analyzeBehaviorDetailed(dir)).behavior
}
