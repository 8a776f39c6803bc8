// Linux process and connection monitor: polls /proc (every 100 ms by default) for the sample's
// process tree (the root and every descendant; once seen, a process stays tracked even if it is
// reparented to init) and for the sockets those processes hold, matched by inode against
// /proc/<pid>/net/{tcp,tcp6,udp,udp6}. Polling can miss processes that live less than one period;
// strace (strace-log.ts) fills that gap where it is available.
//
// What a poll reads: the list of /proc, then the stat of each tracked process and of each pid the
// previous poll did not list. A pid that the previous poll listed and found outside the tree is
// not read again: its parent was not in the tree then, and a process's parent only ever changes
// to init or to a subreaper above it, never into a tree it was not in. That pid number is still
// the same process, because Linux hands out pids in turn and comes back to a freed one only after
// going round the whole pid space (kernel.pid_max, 32768 at least), which one period of forks
// cannot do. Where the guest is a network namespace on a busy host, /proc lists every process of
// the host; reading each one's stat ten times a second cost more CPU than the sample's own tree.
//
// The socket tables are read only when they can say something new. Reading /proc/net/tcp walks
// every bucket of the kernel's TCP hash table, which is sized by the machine's memory: about 5 ms
// of CPU per read on a 24 GB host (262,144 buckets), so tcp and tcp6 ten times a second took a
// tenth of a core, which a sample can see as load. A connected TCP socket keeps its peer, so once
// its connection is recorded its inode is settled; the tables are read again when a tracked
// process holds a socket the last read had not seen, and otherwise at most once a second while
// some socket is unsettled (a listening or unconnected one, a UDP or Unix socket). A socket that
// connects after that read and closes within the second is missed; strace has it where it runs.
// The last poll, at stop, reads them in any case.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs'
import type { ConnectionRecord, ProcessRecord } from '../../guest-protocol/behavior.js'
import type { Monitor } from './monitor.js'

interface Tracked {
  record: ProcessRecord
  start: string
}

function statOf(pid: number): { ppid: number; start: string } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // comm may hold spaces and parentheses: fields start after the last ')'.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { ppid: Number(rest[1]), start: rest[19] ?? '' }
  } catch {
    return null
  }
}

function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').split('\0').join(' ')
  } catch {
    return ''
  }
}

function exeOf(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/exe`)
  } catch {
    return null
  }
}

/** Parses "0100007F:1F90" (little-endian IPv4 or 4x32-bit IPv6 words) into address and port. */
export function parseProcAddress(hex: string): { addr: string; port: number } {
  const [a = '', p = '0'] = hex.split(':')
  const port = Number.parseInt(p, 16)
  if (a.length === 8) {
    const b = Buffer.from(a, 'hex').reverse()
    return { addr: Array.from(b).join('.'), port }
  }
  const words: string[] = []
  for (let i = 0; i < 32; i += 8) {
    const le = Buffer.from(a.slice(i, i + 8), 'hex').reverse().toString('hex')
    words.push(le.slice(0, 4), le.slice(4, 8))
  }
  const v6 = words.map((w) => w.replace(/^0{1,3}/, '')).join(':')
  const mapped = /^0:0:0:0:0:ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6)
  if (mapped !== null) {
    const n = (Number.parseInt(mapped[1] ?? '0', 16) << 16) | Number.parseInt(mapped[2] ?? '0', 16)
    return { addr: [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'), port }
  }
  return { addr: v6.replace(/(^|:)0(:0)+(:|$)/, '::'), port }
}

/** How often the socket tables are read again for sockets that were there at the last read. */
const SOCKET_RECHECK_MS = 1000

export class ProcMonitor implements Monitor {
  private readonly tracked = new Map<number, Tracked>()
  private readonly connections = new Map<string, ConnectionRecord>()
  /** Inodes of TCP sockets whose connection is recorded: their peer cannot change. */
  private readonly settled = new Set<string>()
  /** The socket inodes the last read of the tables saw, and when it was. */
  private lastRead = { at: 0, inodes: new Set<string>() }
  /** How many times the socket tables were read (for the tests: they are read when needed only). */
  socketTableReads = 0
  /** Pids the last poll listed and found outside the tree, for good (see the top of the file). */
  private outside = new Set<number>()
  private timer: NodeJS.Timeout | null = null

  /** `root` is the process we started; with `hideRoot` (strace) only its descendants are reported. */
  constructor(private readonly root: number, private readonly hideRoot: boolean, private readonly periodMs = 100) {}

  start(): void {
    this.poll()
    this.timer = setInterval(() => this.poll(), this.periodMs)
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    this.poll(true)
  }

  /** Live tracked pids (the root included). */
  alive(): number[] {
    return [...this.tracked.entries()].filter(([, t]) => t.record.exited === null).map(([pid]) => pid)
  }

  processes(): ProcessRecord[] {
    return [...this.tracked.entries()].filter(([pid]) => !(this.hideRoot && pid === this.root)).map(([, t]) => t.record)
  }

  connectionRecords(): ConnectionRecord[] {
    return [...this.connections.values()]
  }

  /** One look at /proc; `final` (the last, at stop) reads the socket tables whatever the last read saw. */
  poll(final = false): void {
    const now = Date.now()
    const table = new Map<number, { ppid: number; start: string }>()
    const outside = new Set<number>()
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue
      const pid = Number(name)
      if (this.outside.has(pid)) {
        outside.add(pid)
        continue
      }
      const s = statOf(pid)
      if (s !== null) table.set(pid, s)
    }
    for (const [pid, t] of this.tracked) {
      const s = table.get(pid)
      if (t.record.exited !== null) continue
      if (s === undefined || s.start !== t.start) {
        t.record.exited = now
        continue
      }
      // A fork seen before its execve shows the parent's image: follow the exec.
      const exe = exeOf(pid)
      if (exe !== null && exe !== t.record.exe) {
        t.record.exe = exe
        t.record.command_line = cmdlineOf(pid) || t.record.command_line
      }
    }
    const inTree = (pid: number): boolean => {
      const t = this.tracked.get(pid)
      return t !== undefined && t.record.exited === null && t.start === table.get(pid)?.start
    }
    /** Below a live tracked process, but not taken yet (a zombie, or strace's fork before its exec). */
    const pending = new Set<number>()
    let grew = true
    while (grew) {
      grew = false
      pending.clear()
      for (const [pid, s] of table) {
        const known = this.tracked.get(pid)
        if (known !== undefined && known.start === s.start) continue
        const isRoot = pid === this.root && known === undefined
        if (!isRoot && !inTree(s.ppid)) continue
        pending.add(pid)
        // Under strace, the root's own forks (its start-up feature probes, or the sample's child
        // before its execve) still show strace's command line: wait until they have exec'ed.
        const cmd = cmdlineOf(pid)
        if (this.hideRoot && s.ppid === this.root && cmd === this.rootCmdline()) continue
        // A zombie shows neither command line nor image: nothing to report (strace has it, if any).
        const exe = exeOf(pid)
        if (cmd === '' && exe === null) continue
        pending.delete(pid)
        const ppid = this.hideRoot && s.ppid === this.root ? this.parentOfRoot() : s.ppid
        this.tracked.set(pid, {
          start: s.start,
          record: { type: 'process', pid, ppid, command_line: cmd, exe, first_seen: now, exited: null }
        })
        grew = true
      }
    }
    // Outside for good: neither in the tree nor waiting below it, nor below one that waits.
    const held = new Set(pending)
    for (let more = held.size > 0; more;) {
      more = false
      for (const [pid, s] of table) {
        if (!held.has(pid) && held.has(s.ppid)) {
          held.add(pid)
          more = true
        }
      }
    }
    for (const pid of table.keys()) {
      if (!this.tracked.has(pid) && !held.has(pid) && pid !== this.root) outside.add(pid)
    }
    this.outside = outside
    this.pollSockets(now, final)
  }

  private rootCmdline(): string {
    return this.tracked.get(this.root)?.record.command_line ?? ''
  }

  private parentOfRoot(): number {
    return this.tracked.get(this.root)?.record.ppid ?? 0
  }

  private pollSockets(now: number, final: boolean): void {
    const inodes = new Map<string, number>()
    const live = this.alive().filter((pid) => !(this.hideRoot && pid === this.root))
    for (const pid of live) {
      let fds: string[]
      try {
        fds = readdirSync(`/proc/${pid}/fd`)
      } catch {
        continue
      }
      for (const fd of fds) {
        try {
          const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
          if (m?.[1] !== undefined) inodes.set(m[1], pid)
        } catch {
          // closed meanwhile
        }
      }
    }
    if (inodes.size === 0 || live[0] === undefined) return
    for (const i of this.settled) if (!inodes.has(i)) this.settled.delete(i)
    const unsettled = [...inodes.keys()].filter((i) => !this.settled.has(i))
    if (unsettled.length === 0) return
    const fresh = unsettled.some((i) => !this.lastRead.inodes.has(i))
    if (!fresh && !final && now - this.lastRead.at < SOCKET_RECHECK_MS) return
    this.lastRead = { at: now, inodes: new Set(inodes.keys()) }
    this.socketTableReads++
    for (const file of ['tcp', 'tcp6', 'udp', 'udp6']) {
      let text: string
      try {
        text = readFileSync(`/proc/${live[0]}/net/${file}`, 'utf8')
      } catch {
        continue
      }
      for (const line of text.split('\n').slice(1)) {
        const f = line.trim().split(/\s+/)
        const pid = inodes.get(f[9] ?? '')
        if (pid === undefined || f[1] === undefined || f[2] === undefined) continue
        const src = parseProcAddress(f[1])
        const dst = parseProcAddress(f[2])
        if (dst.port === 0) continue // listening or unconnected
        const proto = file.startsWith('tcp') ? 'tcp' : 'udp'
        if (proto === 'tcp') this.settled.add(f[9]!)
        const key = `${proto}|${src.addr}|${src.port}|${dst.addr}|${dst.port}|${pid}`
        if (!this.connections.has(key)) {
          this.connections.set(key, { type: 'connection', proto, src: src.addr, sport: src.port, dst: dst.addr, dport: dst.port, pid, time: now })
        }
      }
    }
  }
}
