// Linux calls: logs/strace.log (the raw `strace -f -ttt -yy` output Aviary's analyzer streams to
// the result server) read line by line into Cuckoo-shaped calls per process, written to the calls
// store, with apistats and the behaviour summary of what only the calls show.
//
// - Threads: strace prints the thread's id; a clone with CLONE_THREAD makes its child a thread of
//   the caller's process, any other clone/fork/vfork a new process. A task seen before its
//   parent's clone returned is taken for the child of the clone pending at that moment.
// - Interrupted calls (`<unfinished ...>` then `<... name resumed>`) are joined per thread; the
//   call's time is when it started.
// - Processes: those of behavior.jsonl (`known`) get their calls. Others are reported too when the
//   log shows where they came from: a fork of a reported process (a subshell, which never exec'ed,
//   so behavior.jsonl left it out), or a process that executed a program. A task that never did
//   either, such as the sample's start that failed, gets no process.
// - Summary keys from the calls, each filled here only (aviary-log.ts fills command_line,
//   file_created, file_written, file_deleted and connects_ip from behavior.jsonl,
//   which the analyzer built from the same strace output plus its folder snapshots and /proc
//   polling): file_opened, file_read, file_failed, file_exists, file_moved, directory_created,
//   directory_removed, directory_enumerated, dll_loaded (shared objects mapped executable),
//   resolves_host (DNS questions the process sent).
// - mmap/mprotect without PROT_EXEC are left out (the loader makes dozens per program; only
//   executable mappings say something).
// - Each process's image: the file its last exec ran, and the one it was forked with (`images`),
//   which index.ts checks /proc's view against (kernelImage).
// The guest wrote the log: lines are bounded, counts are bounded, anything unreadable is counted
// and skipped, and the log may stop anywhere: inside the call open when strace stopped (the normal
// end of a sample still running), at the result server's cap, or where a guest went away (traceEnd).
import path from 'node:path'
import dnsPacket from 'dns-packet'
import type { ProcessSeen } from '../types'
import { addTo, type Summary } from './aviary-log'
import { boundedLines, type LinesEnd } from './bounded-lines'
import type { StoredCall } from './calls-schema'
import type { CallsStoreWriter } from './calls-store'
import { parseReturn, parseStraceLine } from './strace-line'
import { buildCall, splitBody } from './strace-syscalls'
import { ARTIFACTS } from '../../storage/layout'

/** Longest line read (an execve with its whole environment is a few KiB; strace caps strings). */
export const MAX_LINE = 1024 * 1024
/** Interrupted calls waiting for their second half, and the bytes they may hold. */
const MAX_PENDING = 4096
const MAX_PENDING_BYTES = 16 * 1024 * 1024
/** Tasks (threads and processes) followed; a log naming more is a forged one. */
const MAX_TASKS = 100_000
/** Distinct values per summary key, per process and for the whole analysis. */
export const MAX_SUMMARY_VALUES = 10_000
/** Distinct API names counted per process in apistats. */
const MAX_APIS = 2048
/** The result server's marker after the bytes a per-file cap cut (resultserver/sinks.ts). */
const CUT_MARKER = '... (truncated)'

interface Proc {
  pid: number
  ppid: number
  name: string
  path: string
  /** The image it had when it was made (its parent's), and the file of its last exec. */
  forkedAs: string
  execed: string | null
  commandLine: string
  firstSeen: number
  exited: number | null
  cwd: string | null
  /** Its calls are reported (see the header). */
  reported: boolean
  summary: Summary
  apistats: Map<string, number>
}

export interface StraceCallsResult {
  /** Processes the log shows that `known` did not name (see the header). */
  processes: ProcessSeen[]
  summary: Summary
  perProcess: Map<number, Summary>
  apistats: Record<string, Record<string, number>>
  /** Per process the log showed: the image it was made with, and the file its last exec ran. */
  images: Map<number, { forkedAs: string; execed: string | null }>
  notes: string[]
  /**
   * Set when calls are missing from the end of the log: the result server's per-file cap cut it,
   * or the bytes stopped mid-line. A log ending inside a call that was still open is not cut.
   */
  cut: string | null
}

interface PendingCall {
  name: string
  body: string
  time: number
}

function programName(argv: unknown, filepath: string): string {
  const first = Array.isArray(argv) && typeof argv[0] === 'string' ? argv[0] : ''
  return path.posix.basename(first || filepath)
}

/** The question names of a DNS query (UDP, or TCP with its 2-byte length first). */
export function dnsQuestions(bytes: Buffer): string[] {
  for (const at of [0, 2]) {
    try {
      const msg = dnsPacket.decode(bytes.subarray(at))
      if (msg.type !== 'query') continue
      const names = (msg.questions ?? []).map((q) => q.name).filter((n) => n !== '' && n.length <= 253 && /^[\x21-\x7e]+$/.test(n))
      if (names.length > 0) return names.slice(0, 16)
    } catch {
      // not a DNS message at this offset
    }
  }
  return []
}

export class StraceCallsParser {
  private readonly procs = new Map<number, Proc>()
  /** Thread id → its process (thread group) id. */
  private readonly tgid = new Map<number, number>()
  private readonly pending = new Map<number, PendingCall>()
  private pendingBytes = 0
  /** Clones whose return has not been printed yet: thread id of the caller → is it a thread. */
  private readonly cloning = new Map<number, boolean>()
  readonly summary: Summary = new Map()
  readonly counts = { lines: 0, calls: 0, unreadable: 0, orphans: 0, unreported: 0, dropped: 0, summaryCut: 0, pendingCut: 0 }

  constructor(private readonly store: CallsStoreWriter, private readonly known: ReadonlySet<number>) {}

  private note(p: Proc, category: string, value: unknown): void {
    if (typeof value !== 'string' || value === '') return
    for (const s of [this.summary, p.summary]) {
      const set = s.get(category)
      if (set !== undefined && set.size >= MAX_SUMMARY_VALUES && !set.has(value)) this.counts.summaryCut++
      else addTo(s, category, value)
    }
  }

  private newProc(pid: number, time: number, parent: Proc | null): Proc | null {
    if (this.procs.size >= MAX_TASKS) return null
    const p: Proc = {
      pid, ppid: parent?.pid ?? 0, name: parent?.name ?? '', path: parent?.path ?? '', forkedAs: parent?.path ?? '', execed: null,
      commandLine: parent?.commandLine ?? '',
      firstSeen: time, exited: null, cwd: parent?.cwd ?? null, reported: this.known.has(pid) || (parent?.reported ?? false),
      summary: new Map(), apistats: new Map()
    }
    this.procs.set(pid, p)
    this.tgid.set(pid, pid)
    return p
  }

  /** The process of thread `tid`, made when first seen. */
  private procOf(tid: number, time: number): Proc | null {
    const pid = this.tgid.get(tid)
    if (pid !== undefined) return this.procs.get(pid) ?? null
    if (this.tgid.size >= MAX_TASKS) return null
    // A child that ran before its parent's clone returned: the most recent pending clone's.
    const caller = [...this.cloning.keys()].pop()
    if (caller !== undefined) {
      const parent = this.procOf(caller, time)
      const thread = this.cloning.get(caller) === true
      this.cloning.delete(caller)
      if (parent !== null && thread) {
        this.tgid.set(tid, parent.pid)
        return parent
      }
      return this.newProc(tid, time, parent)
    }
    return this.newProc(tid, time, null)
  }

  /** Feeds one line of the log. */
  async line(text: string): Promise<void> {
    this.counts.lines++
    const l = parseStraceLine(text)
    if (l === null) {
      if (text.trim() !== '') this.counts.unreadable++
      return
    }
    if (l.kind === 'signal') return
    if (l.kind === 'exit') {
      if (this.tgid.get(l.tid) === l.tid) {
        const p = this.procs.get(l.tid)
        if (p !== undefined) p.exited = l.time
      }
      this.dropPending(l.tid)
      return
    }
    if (l.kind === 'unfinished') {
      this.dropPending(l.tid)
      if (this.pending.size >= MAX_PENDING || this.pendingBytes + l.body.length > MAX_PENDING_BYTES) {
        this.counts.pendingCut++
        return
      }
      this.pending.set(l.tid, { name: l.name, body: l.body, time: l.time })
      this.pendingBytes += l.body.length
      if (/^(clone3?|fork|vfork)$/.test(l.name)) this.cloning.set(l.tid, /CLONE_THREAD/.test(l.body))
      return
    }
    let name = l.name
    let body: string
    let time = l.time
    if (l.kind === 'resumed') {
      const p = this.pending.get(l.tid)
      if (p === undefined || p.name !== l.name) {
        this.counts.orphans++
        return
      }
      this.dropPending(l.tid)
      body = `${p.body}${l.rest}`
      time = p.time
      name = p.name
    } else {
      body = l.body
    }
    await this.call(l.tid, time, name, body)
  }

  private dropPending(tid: number): void {
    const p = this.pending.get(tid)
    if (p === undefined) return
    this.pendingBytes -= p.body.length
    this.pending.delete(tid)
  }

  private async call(tid: number, time: number, name: string, body: string): Promise<void> {
    if ((name === 'mmap' || name === 'mprotect' || name === 'pkey_mprotect') && !body.includes('PROT_EXEC')) return
    const split = splitBody(body)
    if (split === null) {
      this.counts.unreadable++
      return
    }
    const ret = parseReturn(split.after)
    const isClone = /^(clone3?|fork|vfork)$/.test(name)
    if (isClone) this.cloning.delete(tid)
    const p = this.procOf(tid, time)
    if (p === null) {
      this.counts.dropped++
      return
    }
    const built = buildCall(name, split.args, { cwd: p.cwd }, ret?.decoration ?? null)
    if (built.cwd !== null) p.cwd = built.cwd
    const ok = ret !== null && ret.errno === null
    const args = built.arguments
    const value = ret?.value ?? null
    if (isClone && ok && typeof value === 'number' && value > 0 && !this.tgid.has(value)) {
      if (/CLONE_THREAD/.test(String(args.clone_flags ?? ''))) this.tgid.set(value, p.pid)
      else this.newProc(value, time, p)
    } else if ((name === 'chdir' || name === 'fchdir') && ok && typeof args.dirpath === 'string' && args.dirpath.startsWith('/')) {
      p.cwd = args.dirpath
    } else if ((name === 'execve' || name === 'execveat') && ok) {
      p.path = typeof args.filepath === 'string' ? args.filepath : p.path
      p.execed = p.path
      p.commandLine = typeof args.command_line === 'string' ? args.command_line : p.path
      p.name = programName(args.argv, p.path)
      p.reported = true
    }
    if (!p.reported) {
      this.counts.unreported++
      return
    }
    this.counts.calls++
    const call: StoredCall = {
      category: built.category, api: name, arguments: args, return_value: value, status: ok ? 1 : 0, time, tid, flags: {}, stacktrace: []
    }
    if (ret?.errno) call.errno = ret.errno
    if (p.apistats.has(name) || p.apistats.size < MAX_APIS) p.apistats.set(name, (p.apistats.get(name) ?? 0) + 1)
    this.summarize(p, name, call, built.dns)
    if (this.store.add(p.pid, call)) await this.store.drain()
  }

  private summarize(p: Proc, name: string, call: StoredCall, dns: Buffer[]): void {
    const a = call.arguments
    const ok = call.status === 1
    switch (name) {
      case 'open':
      case 'openat':
      case 'openat2':
      case 'creat': {
        const flags = String(a.oflag ?? a.how ?? '')
        if (!ok) return this.note(p, 'file_failed', a.filepath)
        if (flags.includes('O_DIRECTORY')) return
        this.note(p, 'file_opened', a.filepath)
        if (name !== 'creat' && !flags.includes('O_WRONLY')) this.note(p, 'file_read', a.filepath)
        return
      }
      case 'stat': case 'lstat': case 'newfstatat': case 'fstatat64': case 'statx': case 'access': case 'faccessat': case 'faccessat2':
      case 'readlink': case 'readlinkat':
        if (a.filepath !== '' && !String(a.flags ?? '').includes('AT_EMPTY_PATH')) this.note(p, 'file_exists', a.filepath)
        return
      case 'rename': case 'renameat': case 'renameat2':
        if (ok && typeof a.oldfilepath === 'string' && typeof a.newfilepath === 'string') this.note(p, 'file_moved', JSON.stringify([a.oldfilepath, a.newfilepath]))
        return
      case 'mkdir': case 'mkdirat':
        if (ok) this.note(p, 'directory_created', a.dirpath)
        return
      case 'rmdir':
        if (ok) this.note(p, 'directory_removed', a.dirpath)
        return
      case 'unlinkat':
        if (ok && String(a.flags ?? '').includes('AT_REMOVEDIR')) this.note(p, 'directory_removed', a.filepath)
        return
      case 'getdents': case 'getdents64':
        if (ok) this.note(p, 'directory_enumerated', a.dirpath)
        return
      case 'mmap':
        if (ok && typeof a.filepath === 'string' && a.filepath.startsWith('/')) this.note(p, 'dll_loaded', a.filepath)
        return
      default:
        if (call.category === 'network') for (const b of dns) for (const host of dnsQuestions(b)) this.note(p, 'resolves_host', host)
    }
  }

  /** What the log showed, once every line was fed. */
  result(): StraceCallsResult {
    const out: StraceCallsResult = { processes: [], summary: this.summary, perProcess: new Map(), apistats: {}, images: new Map(), notes: [], cut: null }
    for (const p of this.procs.values()) {
      if (!p.reported) continue
      out.images.set(p.pid, { forkedAs: p.forkedAs, execed: p.execed })
      if (p.summary.size > 0) out.perProcess.set(p.pid, p.summary)
      if (p.apistats.size > 0) out.apistats[String(p.pid)] = Object.fromEntries(p.apistats)
      if (this.known.has(p.pid)) continue
      out.processes.push({
        pid: p.pid, ppid: p.ppid, process_name: p.name, process_path: p.path, command_line: p.commandLine,
        first_seen: p.firstSeen, exited: p.exited, track: true, modules: [], calls: []
      })
    }
    const c = this.counts
    if (c.unreadable > 0) out.notes.push(`${ARTIFACTS.straceLog}: ${c.unreadable} line(s) that are not strace's were skipped`)
    if (c.orphans > 0) out.notes.push(`${ARTIFACTS.straceLog}: ${c.orphans} resumed call(s) without their start were skipped`)
    if (c.pendingCut > 0) out.notes.push(`${ARTIFACTS.straceLog}: ${c.pendingCut} interrupted call(s) beyond ${MAX_PENDING} waiting were skipped`)
    if (c.dropped > 0) out.notes.push(`${ARTIFACTS.straceLog}: ${c.dropped} call(s) of tasks beyond ${MAX_TASKS} were skipped`)
    if (c.summaryCut > 0) out.notes.push(`${ARTIFACTS.straceLog}: ${c.summaryCut} summary value(s) beyond ${MAX_SUMMARY_VALUES} per key were left out`)
    return out
  }
}

/**
 * What the last line of the log says about how it ended, when it has no newline. strace prints a
 * call's start when the call is entered and the rest when it returns, so a trace whose strace was
 * stopped (the analysis ended with the sample still running, as most malware is) ends inside the
 * call that was open then: `123 1700000000.000001 clock_nanosleep(CLOCK_REALTIME, 0, {...}, `.
 * That is the normal end, not a loss. The result server's per-file cap writes its marker after the
 * last byte it kept (resultserver/sinks.ts): that, and only that, is a cut by the cap.
 */
export function traceEnd(last: string, cutLastLine: boolean, bytes: number): { cut: string | null; note: string | null } {
  if (last.endsWith(CUT_MARKER)) {
    const kept = bytes - Buffer.byteLength(CUT_MARKER, 'latin1')
    return { cut: `${ARTIFACTS.straceLog} was cut at byte ${kept} by the result server's per-file cap (upload_max_size): calls after it are missing`, note: null }
  }
  if (!cutLastLine) return { cut: null, note: null }
  const open = parseStraceLine(last)
  if (open !== null && open.kind === 'call' && splitBody(open.body) === null) {
    return { cut: null, note: `${ARTIFACTS.straceLog} ends inside ${open.name} of task ${open.tid}, a call still open when strace stopped` }
  }
  // Not strace's way to end: the bytes stopped arriving mid-line (the guest or its connection went
  // away, or the task's upload limit was reached, which the task's errors then say).
  return { cut: `${ARTIFACTS.straceLog} stops inside a line at byte ${bytes} (the upload ended there): calls after it may be missing`, note: null }
}

/** Reads logs/strace.log at `file` into the store; see the header. */
export async function readStraceLog(file: string, store: CallsStoreWriter, known: ReadonlySet<number>): Promise<StraceCallsResult> {
  const parser = new StraceCallsParser(store, known)
  let end: LinesEnd = { overlong: 0, cutLastLine: false, bytes: 0 }
  let last = ''
  for await (const text of boundedLines(file, MAX_LINE, (e) => (end = e))) {
    if (last !== '') await parser.line(last)
    last = text
  }
  const { cut, note } = traceEnd(last, end.cutLastLine, end.bytes)
  // A last line without its end is half a call: left out rather than misread.
  if (last !== '' && !end.cutLastLine && cut === null) await parser.line(last)
  const out = parser.result()
  if (end.overlong > 0) out.notes.push(`${ARTIFACTS.straceLog}: ${end.overlong} line(s) longer than ${MAX_LINE} bytes were skipped`)
  if (note !== null) out.notes.push(note)
  out.cut = cut
  return out
}
