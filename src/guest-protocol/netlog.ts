// The result-server protocol as both ends of Aviary speak it: Cuckoo 2.0.7's netlog
// (Cuckoo 2.0.7's cuckoo/core/resultserver.py). A connection opens with one header (`LOG`, `BSON <pid>`, `FILE` +
// path, or `FILE 2` + path, guest path and pids; lines end in '\n') and its body runs until the
// socket closes; the server sends nothing back. Aviary's analyzer puts one line before the header,
// `AVIARY-RUN <id>` (run-identity.ts). The analyzer's log records on the LOG channel are lines in
// Python logging's format, which analysis.log keeps as they are.

/** Cuckoo's MAX_NETLOG_LINE: a header line (and a log record) longer than this is cut or refused. */
export const MAX_NETLOG_LINE = 4096

export const NETLOG_COMMANDS = { log: 'LOG', bson: 'BSON', file: 'FILE', file2: 'FILE 2' } as const

/**
 * Where a FILE upload may go, `<folder>/<name>` in the task's analysis folder: Cuckoo 2.0.7's
 * folders, plus package_files and logs. The host refuses any other (resultserver/upload-path.ts).
 */
export const UPLOAD_FOLDERS = ['files', 'shots', 'buffer', 'extracted', 'memory', 'package_files', 'logs'] as const
/** Dropped files: `files/<sha256[:16]>_<basename>`, Cuckoo's naming. */
export const DROPPED_FOLDER = 'files'
/** Aviary's analyzer's behaviour log (behavior.ts), uploaded once at the end. */
export const BEHAVIOR_LOG = 'logs/behavior.jsonl'
/** strace's output, streamed while the sample runs (Linux guests). */
export const STRACE_LOG = 'logs/strace.log'

/** The logger name of Aviary's analyzer in its log records. */
export const ANALYZER_LOGGER = 'analyzer'

export type LogLevel = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR'

/** The part of a log record's line before its message: `YYYY-MM-DD HH:MM:SS,mmm [logger] LEVEL: `. */
export const LOG_RECORD_PREFIX = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} \[([^\]]{1,64})\] [A-Z]{1,10}: /

const pad = (n: number, w = 2): string => String(n).padStart(w, '0')

/** Python logging's asctime, in local time: `2024-05-01 12:00:00,123`. */
export function logTimestamp(d = new Date()): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())},${pad(d.getMilliseconds(), 3)}`
}

/** One log record as a line (with its '\n'): one line whatever the message holds, cut to fit the limit. */
export function logRecordLine(logger: string, level: LogLevel, message: string, at = new Date()): string {
  const line = `${logTimestamp(at)} [${logger}] ${level}: ${message.replace(/[\r\n]+/g, ' ')}`
  if (Buffer.byteLength(line) < MAX_NETLOG_LINE - 4) return `${line}\n`
  // Cut in bytes, as the server counts; a character split at the cut becomes U+FFFD (3 bytes).
  return `${Buffer.from(line).subarray(0, MAX_NETLOG_LINE - 4).toString('utf8')}\n`
}
