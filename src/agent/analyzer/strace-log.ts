// Reads the analyzer's strace output (strace-run.ts: `strace -f -ttt -yy ...`) line by line as it
// comes: the sample's processes however short they lived (fork/clone results, execve, exits), the
// files they opened for writing or removed, and the addresses they connected or sent to. Each line
// is "PID EPOCH.USEC syscall(args) = result"; a syscall interrupted by another process's line is
// split into "<unfinished ...>" and "<... name resumed>", which are joined back here. Only these
// facts are kept, each bounded in number: the whole trace goes to the host as logs/strace.log,
// where processing reads the calls themselves (src/core/processing/behavior/strace-calls.ts).
import { isAbsolute, posix } from 'node:path'
import type { ConnectionRecord, ProcessRecord } from '../../guest-protocol/behavior.js'

export interface StraceFileEvent {
  pid: number
  path: string
  op: 'write' | 'unlink' | 'rename-to'
  time: number
}

export interface StraceResult {
  processes: ProcessRecord[]
  /** The first event of each path (in the order first seen), and the pid that touched it last. */
  files: StraceFileEvent[]
  lastPid: Map<string, number>
  connections: ConnectionRecord[]
  /**
   * Why the sample never ran: the error of the traced root's execve, in the OS's words
   * ("Exec format error (ENOEXEC)"), when no execve of the root succeeded; null when it ran.
   */
  startError: string | null
}

/** Bounds: a sample can make millions of processes, files or connections (or fake them). */
const MAX_PROCESSES = 50_000
const MAX_FILES = 50_000
const MAX_CONNECTIONS = 10_000
const MAX_PENDING = 4096

const LINE = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/
const ARGS_STRINGS = /"((?:[^"\\]|\\.)*)"/g

/**
 * strace writes each byte outside printable ASCII as an escape (\342\200\256 for U+202E): the
 * escapes are turned back into bytes and the whole string decoded as UTF-8, so a file name with
 * unicode or bidi characters reads as the sample wrote it (bytes that are not UTF-8 become U+FFFD).
 */
function unescape(s: string): string {
  const bytes: number[] = []
  const plain = (text: string): void => { for (const b of Buffer.from(text, 'utf8')) bytes.push(b) }
  let last = 0
  for (const m of s.matchAll(/\\(x[0-9a-f]{2}|[0-7]{1,3}|.)/g)) {
    plain(s.slice(last, m.index))
    const e = m[1] as string
    if (e.startsWith('x')) bytes.push(Number.parseInt(e.slice(1), 16))
    else if (/^[0-7]+$/.test(e)) bytes.push(Number.parseInt(e, 8) & 0xff)
    else plain(({ n: '\n', t: '\t', r: '\r', v: '\v', f: '\f' } as Record<string, string>)[e] ?? e)
    last = m.index + m[0].length
  }
  plain(s.slice(last))
  return Buffer.from(bytes).toString('utf8')
}

/**
 * The call without its -yy decorations (`3</path>`, `AT_FDCWD</cwd>`, `3<TCP:[a->b]>`), and the
 * decorations in order. Inside one, strace escapes a path's own < and >, so the unescaped ones
 * (but the `->` of sockets) are its structure.
 */
function decorations(call: string): { text: string; found: string[] } {
  const found: string[] = []
  let text = ''
  let from = 0
  for (let i = 0; i < call.length; i++) {
    const c = call[i]
    if (c === '"') {
      for (i++; i < call.length && call[i] !== '"'; i++) if (call[i] === '\\') i++
    } else if (c === '<' && i > 0 && /[0-9A-Za-z_]/.test(call[i - 1] as string)) {
      let depth = 0
      let j = i
      for (; j < call.length; j++) {
        const d = call[j]
        if (d === '\\') j++
        else if (d === '<') depth++
        else if (d === '>' && call[j - 1] !== '-' && --depth === 0) break
      }
      if (j >= call.length) break
      text += call.slice(from, i)
      found.push(call.slice(i + 1, j).replace(/<(?:char|block) \d+:\d+>$/, ''))
      from = j + 1
      i = j
    }
  }
  return { text: text + call.slice(from), found }
}

function strings(s: string): string[] {
  return [...s.matchAll(ARGS_STRINGS)].map((m) => unescape(m[1] ?? ''))
}

function sockaddr(call: string): { dst: string; dport: number } | null {
  const port = /sin6?_port=htons\((\d+)\)/.exec(call)
  const v4 = /sin_addr=inet_addr\("([^"]+)"\)/.exec(call)
  const v6 = /inet_pton\(AF_INET6, "([^"]+)"/.exec(call)
  const addr = v4?.[1] ?? v6?.[1]
  if (port?.[1] === undefined || addr === undefined) return null
  return { dst: addr, dport: Number(port[1]) }
}

/** The strace output read one line at a time (see the header). */
export class StraceLog {
  private readonly procs = new Map<number, ProcessRecord>()
  private readonly files = new Map<string, StraceFileEvent>()
  private readonly lastPid = new Map<string, number>()
  private readonly conns = new Map<string, ConnectionRecord>()
  private readonly pending = new Map<number, string>()
  private root: number | null = null
  private rootExecuted = false
  private rootExecError: string | null = null

  private proc(pid: number, time: number, ppid = 0): ProcessRecord | null {
    let p = this.procs.get(pid)
    if (p === undefined) {
      if (this.procs.size >= MAX_PROCESSES) return null
      p = { type: 'process', pid, ppid, command_line: '', exe: null, first_seen: time, exited: null, exit_code: null }
      this.procs.set(pid, p)
    }
    return p
  }

  private file(pid: number, path: string, op: StraceFileEvent['op'], time: number): void {
    if (!isAbsolute(path)) return
    if (!this.files.has(path)) {
      if (this.files.size >= MAX_FILES) return
      this.files.set(path, { pid, path, op, time })
    }
    this.lastPid.set(path, pid)
  }

  line(raw: string): void {
    const m = LINE.exec(raw)
    if (m === null) return
    const pid = Number(m[1])
    const time = Math.round(Number(m[2]) * 1000)
    let call = m[3] ?? ''
    if (call.endsWith('<unfinished ...>')) {
      if (this.pending.size < MAX_PENDING || this.pending.has(pid)) this.pending.set(pid, call.slice(0, -'<unfinished ...>'.length))
      return
    }
    const resumed = /^<\.\.\. \S+ resumed>(.*)$/.exec(call)
    if (resumed !== null) {
      call = (this.pending.get(pid) ?? '') + (resumed[1] ?? '')
      this.pending.delete(pid)
    }
    this.root ??= pid
    const p = this.proc(pid, time)
    if (p === null) return
    const exited = /^\+\+\+ (?:exited with (\d+)|killed by (\S+)).*\+\+\+$/.exec(call)
    if (exited !== null) {
      p.exited = time
      p.exit_code = exited[1] !== undefined ? Number(exited[1]) : null
      return
    }
    const result = /\)\s+=\s+(-?\d+)(?:<[^>]*>)?(?:\s.*)?$/.exec(call)
    const ret = result?.[1] !== undefined ? Number(result[1]) : null
    const name = /^(\w+)\(/.exec(call)?.[1] ?? ''
    const { text, found } = decorations(call)
    // A path relative to the directory strace decorated (openat(AT_FDCWD</cwd>, "x", ...)).
    const at = (dir: string | undefined, path: string | undefined): string | undefined =>
      path === undefined || isAbsolute(path) || dir === undefined || !isAbsolute(dir) ? path : posix.join(unescape(dir), path)
    if ((name === 'fork' || name === 'vfork' || name === 'clone' || name === 'clone3') && ret !== null && ret > 0) {
      if (!call.includes('CLONE_THREAD')) {
        const child = this.proc(ret, time, pid)
        if (child !== null) child.ppid = pid
      }
    } else if ((name === 'execve' || name === 'execveat') && ret !== 0) {
      const failed = /=\s+-1\s+(E[A-Z0-9]+)\s+\(([^)]*)\)/.exec(call)
      if (pid === this.root && failed !== null) this.rootExecError = `${failed[2]} (${failed[1]})`
    } else if ((name === 'execve' || name === 'execveat') && ret === 0) {
      if (pid === this.root) this.rootExecuted = true
      const args = strings(text)
      p.exe = args[0] ?? null
      const argvPart = /\[(.*?)\](?:, |\))/.exec(text)?.[1] ?? ''
      p.command_line = strings(argvPart).join(' ')
    } else if ((name === 'open' || name === 'openat' || name === 'creat') && ret !== null && ret >= 0) {
      // The descriptor strace decorated (`= 3</path>`) is the file itself, links resolved.
      const returned = decorations(call.slice(call.lastIndexOf(') = '))).found[0]
      const path = returned !== undefined && isAbsolute(returned) ? returned : at(name === 'openat' ? found[0] : undefined, strings(text)[0])
      if (path !== undefined && (name === 'creat' || /O_WRONLY|O_RDWR|O_CREAT/.test(text))) this.file(pid, unescape(path), 'write', time)
    } else if ((name === 'unlink' || name === 'unlinkat') && ret === 0 && !text.includes('AT_REMOVEDIR')) {
      const path = at(name === 'unlinkat' ? found[0] : undefined, strings(text)[0])
      if (path !== undefined) this.file(pid, path, 'unlink', time)
    } else if (name.startsWith('rename') && ret === 0) {
      const path = at(name === 'rename' ? undefined : found[found.length - 1], strings(text)[1])
      if (path !== undefined) this.file(pid, path, 'rename-to', time)
    } else if (name === 'connect' || name === 'sendto' || name === 'sendmsg') {
      const addr = sockaddr(text)
      if (addr === null || addr.dport === 0 || (ret !== null && ret < 0 && !/EINPROGRESS/.test(call))) return
      const proto = /^(TCP|TCPv6)/.test(found[0] ?? '') ? 'tcp' : /^(UDP|UDPv6)/.test(found[0] ?? '') ? 'udp' : name === 'connect' ? 'tcp' : 'udp'
      const key = `${proto}|${addr.dst}|${addr.dport}|${pid}`
      if (!this.conns.has(key) && this.conns.size < MAX_CONNECTIONS) {
        this.conns.set(key, { type: 'connection', proto, src: null, sport: null, dst: addr.dst, dport: addr.dport, pid, time })
      }
    }
  }

  result(): StraceResult {
    const root = this.root
    // The first traced process is the sample itself; its parent (strace) is not part of the tree.
    if (root !== null) {
      const p = this.procs.get(root)
      if (p !== undefined) p.ppid = 0
    }
    // A root that never executed is strace's own child that failed to become the sample: no process.
    const startError = root !== null && !this.rootExecuted ? this.rootExecError : null
    const processes = [...this.procs.values()].filter((p) => p.command_line !== '' || p.exe !== null || (p.pid === root && startError === null))
    return { processes, files: [...this.files.values()], lastPid: this.lastPid, connections: [...this.conns.values()], startError }
  }
}

/** A whole strace output at once (tests; the analyzer feeds StraceLog as the trace comes). */
export function parseStrace(text: string): StraceResult {
  const log = new StraceLog()
  for (const line of text.split('\n')) log.line(line)
  return log.result()
}
