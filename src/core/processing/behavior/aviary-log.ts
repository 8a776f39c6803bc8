// Reads logs/behavior.jsonl, the behaviour log of Aviary's own analyzer (its records are defined
// once, in src/guest-protocol/behavior.ts, shared with the analyzer). Read line by line, so memory
// follows the number of processes, not the log size; every record is checked field by field
// because the guest wrote it. Times in the log are epoch milliseconds; the report wants epoch
// seconds.
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import type { ProcessSeen } from '../types.js'
import type { AnalyzerRecord } from '../../../guest-protocol/behavior.js'

/** The analyzer record as read (AnalyzerRecord, times in epoch seconds; an unknown reason kept as written). */
export type AviaryAnalyzerInfo = Pick<AnalyzerRecord, 'package' | 'platform' | 'category' | 'target' | 'pid' | 'started' | 'ended' | 'monitors'> & {
  reason: string
}

export type Summary = Map<string, Set<string>>

export interface AviaryBehavior {
  analyzer: AviaryAnalyzerInfo | null
  processes: ProcessSeen[]
  /** Whole-analysis summary (also the files and connections no process was named for). */
  summary: Summary
  perProcess: Map<number, Summary>
  notes: string[]
}

/** Records kept per kind; a guest could write millions of lines. */
const MAX_RECORDS = 200_000

type Json = Record<string, unknown>

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)
const text = (v: unknown): string | null => (typeof v === 'string' ? v : null)

export function addTo(summary: Summary, category: string, value: string): void {
  let set = summary.get(category)
  if (set === undefined) summary.set(category, (set = new Set()))
  set.add(value)
}

function basename(path: string): string {
  const parts = path.split(/[\\/]/)
  return parts[parts.length - 1] ?? path
}

/** The program of a command line: its first word, quotes honoured. */
function program(commandLine: string): string {
  const m = /^\s*(?:"([^"]*)"|(\S+))/.exec(commandLine)
  return m === null ? '' : (m[1] ?? m[2] ?? '')
}

/** A Windows image path: a drive letter or a UNC/device prefix. */
const WINDOWS_PATH = /^(?:[A-Za-z]:[\\/]|\\\\)/

/**
 * A process's name. On Windows the image's file name, as Cuckoo's monitor and CAPE take it
 * (`cmd.exe` for a process started as `cmd /c ...`, whose image is C:\windows\system32\cmd.exe).
 * On Linux the name its command line gives (sh, not the dash it links to; bash even after it
 * exec'd its last command), else the executable's.
 */
export function processName(commandLine: string, exe: string): string {
  if (WINDOWS_PATH.test(exe)) return basename(exe)
  return basename(program(commandLine) || exe)
}

export async function readAviaryLog(path: string): Promise<AviaryBehavior> {
  const out: AviaryBehavior = { analyzer: null, processes: [], summary: new Map(), perProcess: new Map(), notes: [] }
  const seen = new Map<number, ProcessSeen>()
  const counts = { bad: 0, files: 0, connections: 0, dropped: 0 }
  const forPid = (pid: number | null): Summary | null => {
    if (pid === null || !seen.has(pid)) return null
    let s = out.perProcess.get(pid)
    if (s === undefined) out.perProcess.set(pid, (s = new Map()))
    return s
  }
  const note = (pid: number | null, category: string, value: string): void => {
    addTo(out.summary, category, value)
    const s = forPid(pid)
    if (s !== null) addTo(s, category, value)
  }
  const files: Json[] = []
  const connections: Json[] = []
  const registry: Json[] = []
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity })
  for await (const line of lines) {
    if (line.trim() === '') continue
    let r: Json
    try {
      const parsed: unknown = JSON.parse(line)
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object')
      r = parsed as Json
    } catch {
      counts.bad++
      continue
    }
    if (r.type === 'analyzer' && out.analyzer === null) {
      out.analyzer = {
        package: text(r.package) ?? '',
        platform: text(r.platform) ?? '',
        category: text(r.category) ?? '',
        target: text(r.target) ?? '',
        pid: num(r.pid),
        started: (num(r.started) ?? 0) / 1000,
        ended: (num(r.ended) ?? 0) / 1000,
        reason: text(r.reason) ?? '',
        monitors: Array.isArray(r.monitors) ? r.monitors.filter((m): m is string => typeof m === 'string') : []
      }
    } else if (r.type === 'process') {
      const pid = num(r.pid)
      if (pid === null || seen.has(pid)) continue
      if (seen.size >= MAX_RECORDS) {
        counts.dropped++
        continue
      }
      const commandLine = text(r.command_line) ?? ''
      const exe = text(r.exe)
      const exited = num(r.exited)
      const entry: ProcessSeen = {
        pid,
        ppid: num(r.ppid) ?? 0,
        process_name: processName(commandLine, exe ?? ''),
        process_path: exe ?? '',
        command_line: commandLine,
        first_seen: (num(r.first_seen) ?? 0) / 1000,
        exited: exited === null ? null : exited / 1000,
        track: true,
        modules: [],
        calls: []
      }
      seen.set(pid, entry)
      out.processes.push(entry)
    } else if (r.type === 'file' || r.type === 'connection' || r.type === 'registry') {
      const bucket = r.type === 'file' ? files : r.type === 'connection' ? connections : registry
      if (bucket.length >= MAX_RECORDS) counts.dropped++
      else bucket.push(r)
    }
  }
  // Processes first, so files and connections can be attributed to the pids they name.
  for (const p of out.processes) if (p.command_line !== '') note(p.pid, 'command_line', p.command_line)
  for (const f of files) {
    const path = text(f.path)
    if (path === null) continue
    const pid = num(f.pid)
    if (f.op === 'created') {
      note(pid, 'file_created', path)
      note(pid, 'file_written', path)
    } else if (f.op === 'modified') note(pid, 'file_written', path)
    else if (f.op === 'deleted') note(pid, 'file_deleted', path)
    counts.files++
  }
  // Addresses only: connects_host takes host names (Cuckoo's, from the name a program connected
  // to), which the report's DNS answers give once the capture is read (connects-host.ts).
  for (const c of connections) {
    const dst = text(c.dst)
    if (dst === null) continue
    note(num(c.pid), 'connects_ip', dst)
    counts.connections++
  }
  // Registry values (Windows), as Cuckoo's summary names them: the key's path, then the value's name.
  for (const g of registry) {
    const key = text(g.key)
    const name = text(g.name)
    if (key === null || name === null || (g.op !== 'written' && g.op !== 'deleted')) continue
    note(num(g.pid), g.op === 'written' ? 'regkey_written' : 'regkey_deleted', `${key}\\${name === '' ? '(Default)' : name}`)
  }
  if (counts.bad > 0) out.notes.push(`${path}: ${counts.bad} line(s) that are not JSON objects were skipped`)
  if (counts.dropped > 0) out.notes.push(`${path}: ${counts.dropped} record(s) beyond ${MAX_RECORDS} per kind were skipped`)
  return out
}
