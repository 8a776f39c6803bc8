// The analyzer's behaviour log, logs/behavior.jsonl: what the in-guest analyzer saw of the
// sample, uploaded to the result server once at the end. Aviary's analyzer writes it and the
// host's behaviour processing (src/core/processing/behavior/aviary-log.ts) reads it, checking
// every field, since the guest wrote it.
//
// Format: UTF-8 JSON Lines, one object per line, each with a `type`:
//   {"type":"analyzer", ...}    exactly one, first: the run itself (package, platform, times, why it stopped)
//   {"type":"process", ...}     one per process of the sample's tree (the started process and its
//                               descendants, also ones that were reparented after being seen)
//   {"type":"file", ...}        one per file change seen in the watched folders (or by strace)
//   {"type":"connection", ...}  one per distinct (proto, src, sport, dst, dport, pid) of the tree
//   {"type":"registry", ...}    one per registry value written or deleted under the keys the
//                               Windows analyzer watches (autorun keys), in the order seen
// Times are milliseconds since the Unix epoch (guest clock). Unknown values are null, never absent,
// except the optional keys marked `?`. New keys may be added; readers ignore keys they do not know.

export const BEHAVIOR_FORMAT_VERSION = 1

export interface AnalyzerRecord {
  type: 'analyzer'
  version: number
  /** Task id from analysis.conf. */
  task: string
  package: string
  platform: string
  category: string
  target: string
  /** Pid of the process the package started (the tree's root), null if it never started. */
  pid: number | null
  started: number
  ended: number
  /** Why monitoring ended: the tree exited, the timeout passed, or the package failed to start. */
  reason: 'tree-ended' | 'timeout' | 'start-failed'
  /** Why the sample did not start, in the OS's words (reason 'start-failed'); absent otherwise. */
  error?: string
  /**
   * Monitors that ran: "proc" (/proc polling), "strace", "files", "winmon" (Windows: the native
   * helper's processes, connections and registry), "wmi" (Windows: PowerShell polling, its fallback).
   */
  monitors: string[]
}

export interface ProcessRecord {
  type: 'process'
  pid: number
  ppid: number
  command_line: string
  exe: string | null
  first_seen: number
  /** When the process was found gone (or strace saw it exit); null if alive at the end. */
  exited: number | null
  exit_code?: number | null
}

export type FileOp = 'created' | 'modified' | 'deleted'

export interface FileRecord {
  type: 'file'
  op: FileOp
  path: string
  time: number
  /** Process that wrote or removed it, when strace saw it. */
  pid?: number
  sha256?: string
  size?: number
}

export interface ConnectionRecord {
  type: 'connection'
  proto: 'tcp' | 'udp'
  /** Local address and port; null when only strace saw the connection. */
  src: string | null
  sport: number | null
  dst: string
  dport: number
  pid: number | null
  time: number
}

/**
 * A registry value written or deleted (Windows). `key` is the full key path with the hive spelled
 * out (`HKEY_CURRENT_USER\Software\...\Run`), `name` the value's name ('' for the default
 * value). Seen by snapshot and diff, so the writer is not known: `pid` is null unless a monitor
 * that knows it says so.
 */
export interface RegistryRecord {
  type: 'registry'
  op: 'written' | 'deleted'
  key: string
  name: string
  /** Written values: the data (strings cut by the monitor; numbers for DWORDs), or null for other types. */
  data?: string | number | null
  pid: number | null
  time: number
}

export type BehaviorRecord = AnalyzerRecord | ProcessRecord | FileRecord | ConnectionRecord | RegistryRecord

export function toJsonLines(records: BehaviorRecord[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + (records.length > 0 ? '\n' : '')
}
