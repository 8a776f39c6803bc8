// The lines of aviary-winmon.exe (src/agent/windows-helper/winmon.c), read back: one JSON object
// per line, checked field by field. The helper runs in the guest beside the sample, so its output
// is read like anything else the guest writes: lines are cut at MAX_LINE bytes (a longer one is
// skipped whole), strings at MAX_STRING characters, and anything malformed is counted, not thrown.

export const MAX_LINE = 64 * 1024
export const MAX_STRING = 16 * 1024

export type HelperEvent =
  | { t: 'hello'; version: number; pid: number; parent: number; time: number }
  | { t: 'process'; pid: number; ppid: number; created: number | null; exe: string | null; cmd: string | null; time: number }
  | { t: 'exit'; pid: number; code: number | null; time: number }
  | { t: 'connection'; proto: 'tcp' | 'udp'; src: string; sport: number; dst: string; dport: number; pid: number; time: number }
  | { t: 'registry'; op: 'written' | 'deleted'; key: string; name: string; data: string | number | null; time: number }
  | { t: 'limit'; what: string; max: number }
  | { t: 'bye'; time: number }

type Json = Record<string, unknown>

const int = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null)
const str = (v: unknown): string | null => (typeof v === 'string' ? v.slice(0, MAX_STRING) : null)
const port = (v: unknown): number | null => {
  const n = int(v)
  return n !== null && n <= 65535 ? n : null
}

/** One line of the helper as an event, or null when it is not one the analyzer knows. */
export function parseHelperLine(line: string): HelperEvent | null {
  if (line.length === 0 || line.length > MAX_LINE) return null
  let r: Json
  try {
    const v: unknown = JSON.parse(line)
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return null
    r = v as Json
  } catch {
    return null
  }
  const time = int(r.time) ?? Date.now()
  switch (r.t) {
    case 'hello': {
      const pid = int(r.pid)
      const parent = int(r.parent)
      return pid === null || parent === null ? null : { t: 'hello', version: int(r.version) ?? 0, pid, parent, time }
    }
    case 'process': {
      const pid = int(r.pid)
      const ppid = int(r.ppid)
      if (pid === null || ppid === null) return null
      const cmd = str(r.cmd)
      return { t: 'process', pid, ppid, created: int(r.created), exe: str(r.exe), cmd: cmd !== null && r.cmd_truncated === true ? `${cmd}…` : cmd, time }
    }
    case 'exit': {
      const pid = int(r.pid)
      return pid === null ? null : { t: 'exit', pid, code: int(r.code), time }
    }
    case 'connection': {
      const pid = int(r.pid)
      const src = str(r.src)
      const dst = str(r.dst)
      const sport = port(r.sport)
      const dport = port(r.dport)
      if (pid === null || src === null || dst === null || sport === null || dport === null) return null
      return { t: 'connection', proto: r.proto === 'udp' ? 'udp' : 'tcp', src, sport, dst, dport, pid, time }
    }
    case 'registry': {
      const key = str(r.key)
      const name = str(r.name)
      if (key === null || name === null || (r.op !== 'written' && r.op !== 'deleted')) return null
      const data = typeof r.data === 'number' && Number.isFinite(r.data) ? r.data : str(r.data)
      return { t: 'registry', op: r.op, key, name, data, time }
    }
    case 'limit':
      return { t: 'limit', what: str(r.what)?.slice(0, 64) ?? '?', max: int(r.max) ?? 0 }
    case 'bye':
      return { t: 'bye', time }
    default:
      return null
  }
}

/**
 * Splits a byte stream into lines without ever holding more than MAX_LINE bytes of one line:
 * a longer line is dropped (counted) up to its end.
 */
export class LineSplitter {
  private buf = ''
  private skipping = false
  dropped = 0

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: string): void {
    let start = 0
    for (;;) {
      const nl = chunk.indexOf('\n', start)
      const piece = chunk.slice(start, nl < 0 ? undefined : nl)
      if (!this.skipping) {
        if (this.buf.length + piece.length > MAX_LINE) {
          this.buf = ''
          this.skipping = true
          this.dropped++
        } else this.buf += piece
      }
      if (nl < 0) return
      if (!this.skipping) this.onLine(this.buf.endsWith('\r') ? this.buf.slice(0, -1) : this.buf)
      this.buf = ''
      this.skipping = false
      start = nl + 1
    }
  }
}
