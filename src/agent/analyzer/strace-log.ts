// Reads the output of `strace -f -ttt -yy -s 1024 -e trace=process,file,network -o FILE`: the
// sample's processes however short they lived (fork/clone results, execve, exits), the files they
// opened for writing or removed, and the addresses they connected or sent to. Each line is
// "PID EPOCH.USEC syscall(args) = result"; a syscall interrupted by another process's line is
// split into "<unfinished ...>" and "<... name resumed>", which are joined back here.
import { isAbsolute } from 'node:path'
import type { ConnectionRecord, ProcessRecord } from '../../guest-protocol/behavior.js'

export interface StraceFileEvent {
  pid: number
  path: string
  op: 'write' | 'unlink' | 'rename-to'
  time: number
}

export interface StraceResult {
  processes: ProcessRecord[]
  files: StraceFileEvent[]
  connections: ConnectionRecord[]
  /**
   * Why the sample never ran: the error of the traced root's execve, in the OS's words
   * ("Exec format error (ENOEXEC)"), when no execve of the root succeeded; null when it ran.
   */
  startError: string | null
}

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

export function parseStrace(text: string): StraceResult {
  const procs = new Map<number, ProcessRecord>()
  const files: StraceFileEvent[] = []
  const conns = new Map<string, ConnectionRecord>()
  const pending = new Map<number, string>()
  let root: number | null = null
  let rootExecuted = false
  let rootExecError: string | null = null
  const proc = (pid: number, time: number, ppid = 0): ProcessRecord => {
    let p = procs.get(pid)
    if (p === undefined) {
      p = { type: 'process', pid, ppid, command_line: '', exe: null, first_seen: time, exited: null, exit_code: null }
      procs.set(pid, p)
    }
    return p
  }
  for (const raw of text.split('\n')) {
    const m = LINE.exec(raw)
    if (m === null) continue
    const pid = Number(m[1])
    const time = Math.round(Number(m[2]) * 1000)
    let call = m[3] ?? ''
    if (call.endsWith('<unfinished ...>')) {
      pending.set(pid, call.slice(0, -'<unfinished ...>'.length))
      continue
    }
    const resumed = /^<\.\.\. \S+ resumed>(.*)$/.exec(call)
    if (resumed !== null) {
      call = (pending.get(pid) ?? '') + (resumed[1] ?? '')
      pending.delete(pid)
    }
    root ??= pid
    const p = proc(pid, time)
    const exited = /^\+\+\+ (?:exited with (\d+)|killed by (\S+)).*\+\+\+$/.exec(call)
    if (exited !== null) {
      p.exited = time
      p.exit_code = exited[1] !== undefined ? Number(exited[1]) : null
      continue
    }
    const result = /\)\s+=\s+(-?\d+)(?:<[^>]*>)?(?:\s.*)?$/.exec(call)
    const ret = result?.[1] !== undefined ? Number(result[1]) : null
    const name = /^(\w+)\(/.exec(call)?.[1] ?? ''
    if ((name === 'fork' || name === 'vfork' || name === 'clone' || name === 'clone3') && ret !== null && ret > 0) {
      if (!call.includes('CLONE_THREAD')) proc(ret, time, pid).ppid = pid
    } else if ((name === 'execve' || name === 'execveat') && ret !== 0) {
      const failed = /=\s+-1\s+(E[A-Z0-9]+)\s+\(([^)]*)\)/.exec(call)
      if (pid === root && failed !== null) rootExecError = `${failed[2]} (${failed[1]})`
    } else if ((name === 'execve' || name === 'execveat') && ret === 0) {
      if (pid === root) rootExecuted = true
      const args = strings(call)
      p.exe = args[0] ?? null
      const argvPart = /\[(.*?)\](?:, |\))/.exec(call)?.[1] ?? ''
      p.command_line = strings(argvPart).join(' ')
    } else if ((name === 'open' || name === 'openat' || name === 'creat') && ret !== null && ret >= 0) {
      const path = strings(call)[0]
      if (path !== undefined && isAbsolute(path) && (name === 'creat' || /O_WRONLY|O_RDWR|O_CREAT/.test(call))) files.push({ pid, path, op: 'write', time })
    } else if ((name === 'unlink' || name === 'unlinkat') && ret === 0) {
      const path = strings(call)[0]
      if (path !== undefined && isAbsolute(path)) files.push({ pid, path, op: 'unlink', time })
    } else if (name.startsWith('rename') && ret === 0) {
      const path = strings(call)[1]
      if (path !== undefined && isAbsolute(path)) files.push({ pid, path, op: 'rename-to', time })
    } else if (name === 'connect' || name === 'sendto' || name === 'sendmsg') {
      const addr = sockaddr(call)
      if (addr === null || addr.dport === 0 || (ret !== null && ret < 0 && !/EINPROGRESS/.test(call))) continue
      const proto = /<(TCP|TCPv6)[:>]/.test(call) ? 'tcp' : /<(UDP|UDPv6)[:>]/.test(call) ? 'udp' : name === 'connect' ? 'tcp' : 'udp'
      const key = `${proto}|${addr.dst}|${addr.dport}|${pid}`
      if (!conns.has(key)) conns.set(key, { type: 'connection', proto, src: null, sport: null, dst: addr.dst, dport: addr.dport, pid, time })
    }
  }
  // The first traced process is the sample itself; its parent (strace) is not part of the tree.
  if (root !== null) proc(root, 0).ppid = procs.get(root)?.ppid ?? 0
  // A root that never executed is strace's own child that failed to become the sample: no process.
  const startError = root !== null && !rootExecuted ? rootExecError : null
  const processes = [...procs.values()].filter((p) => p.command_line !== '' || p.exe !== null || (p.pid === root && startError === null))
  return { processes, files, connections: [...conns.values()], startError }
}
