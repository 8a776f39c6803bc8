// Process memory dumps on Linux (option procmemdump, on by default where strace runs; 0 turns it
// off): the memory of the sample's processes, read from /proc/<pid>/maps and /proc/<pid>/mem and
// uploaded to the result server as memory/<pid>-<n>.dmp, Cuckoo 2's name and format (for each
// region a 24-byte little-endian header, address u64, size u32, state u32, type u32, protect u32,
// with Windows' values, then the region's bytes; malduck and Cuckoo's procmemory read it).
//
// When: as a process exits, and at the end of the run for those still running.
// - At exit: strace holds every tracee at the entry of exit_group for EXIT_HOLD_US (its syscall
//   fault injection, delay_enter). strace writes that call's line only once the call is over, so
//   the line cannot be the signal: the dumper polls the tracked processes every POLL_MS and
//   finds those stopped at exit_group (/proc/<pid>/task/<tid>/syscall); it then stops strace
//   itself (SIGSTOP) so that the held process cannot go on while it is read, reads it into
//   memory, and lets strace go (SIGCONT). The upload follows, with nothing held.
// - At the end of the run: the processes still running, read as they run.
//
// What: readable regions that are not a plain file's unchanged image: anonymous memory (heap,
// stacks, mmap'd data), writable mappings, deleted files and memfd mappings. Read-only and
// executable mappings of files still on disk (libraries, the program's own code) are the files'
// bytes and are left out. Caps: procmem_max bytes per process (64 MiB) and procmem_total per task
// (256 MiB); a region past a cap is cut, and the rest of the process or the task is not read.
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, readSync } from 'node:fs'
import { Readable } from 'node:stream'
import { uploadFile, type NetlogLog, type NetlogServer } from './netlog.js'

export const EXIT_HOLD_US = 150_000
const POLL_MS = 25
const CHUNK = 1024 * 1024
/** exit_group's number (the first field of /proc/<pid>/syscall while a task is stopped in it). */
const EXIT_GROUP_NR: Partial<Record<NodeJS.Architecture, number>> = { x64: 231, arm64: 94, ia32: 252, arm: 248 }

export interface ProcMemLimits {
  perProcess: number
  total: number
}

export function procMemLimits(options: Map<string, string>): ProcMemLimits | null {
  if (options.get('procmemdump') === '0') return null
  const n = (k: string, d: number): number => {
    const v = Number(options.get(k))
    return Number.isSafeInteger(v) && v > 0 ? v : d
  }
  return { perProcess: n('procmem_max', 64 * 1024 * 1024), total: n('procmem_total', 256 * 1024 * 1024) }
}

export interface MapRegion {
  start: number
  end: number
  perms: string
  path: string
}

/** /proc/<pid>/maps lines: `start-end perms offset dev inode [path]`. */
export function parseMaps(text: string): MapRegion[] {
  const out: MapRegion[] = []
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \d+\s*(.*)$/.exec(line)
    if (m === null) continue
    const start = Number.parseInt(m[1] ?? '', 16)
    const end = Number.parseInt(m[2] ?? '', 16)
    if (!Number.isSafeInteger(end) || end <= start) continue
    out.push({ start, end, perms: m[3] ?? '', path: m[4] ?? '' })
  }
  return out
}

/** Whether a region is dumped (see the header). */
export function wanted(r: MapRegion): boolean {
  if (r.perms[0] !== 'r') return false
  if (r.path === '[vvar]' || r.path === '[vsyscall]' || r.path === '[vdso]') return false
  if (r.path === '' || r.path.startsWith('[')) return true
  if (r.perms[1] === 'w') return true
  return r.path.endsWith(' (deleted)') || r.path.startsWith('/memfd:')
}

// Windows' constants, as Cuckoo's format carries them.
const MEM_COMMIT = 0x1000
const MEM_PRIVATE = 0x20000
const MEM_MAPPED = 0x40000
const MEM_IMAGE = 0x1000000
export function protectOf(perms: string): number {
  const r = perms[0] === 'r'
  const w = perms[1] === 'w'
  const x = perms[2] === 'x'
  if (x) return w ? 0x40 : r ? 0x20 : 0x10
  return w ? 0x04 : r ? 0x02 : 0x01
}

function header(addr: number, size: number, r: MapRegion): Buffer {
  const h = Buffer.alloc(24)
  h.writeBigUInt64LE(BigInt(addr), 0)
  h.writeUInt32LE(size, 8)
  h.writeUInt32LE(MEM_COMMIT, 12)
  const anon = r.path === '' || r.path.startsWith('[')
  h.writeUInt32LE(anon ? MEM_PRIVATE : r.perms[2] === 'x' ? MEM_IMAGE : MEM_MAPPED, 16)
  h.writeUInt32LE(protectOf(r.perms), 20)
  return h
}

/** Reads a process's wanted regions, in chunks of at most 1 MiB each with its own header, up to `max` bytes of memory. */
export function readProcess(pid: number, max: number): { parts: Buffer[]; bytes: number; cut: boolean } {
  const parts: Buffer[] = []
  let bytes = 0
  let cut = false
  let fd: number
  let regions: MapRegion[]
  try {
    regions = parseMaps(readFileSync(`/proc/${pid}/maps`, 'latin1')).filter(wanted)
    fd = openSync(`/proc/${pid}/mem`, 'r')
  } catch {
    return { parts, bytes, cut }
  }
  try {
    outer: for (const r of regions) {
      for (let at = r.start; at < r.end; at += CHUNK) {
        if (bytes >= max) {
          cut = true
          break outer
        }
        const want = Math.min(CHUNK, r.end - at, max - bytes)
        const buf = Buffer.allocUnsafe(want)
        let got = 0
        try {
          while (got < want) {
            const n = readSync(fd, buf, got, want - got, at + got)
            if (n <= 0) break
            got += n
          }
        } catch {
          // a page that cannot be read (guard pages, a mapping gone): what came before is kept
        }
        if (got > 0) {
          parts.push(header(at, got, r), buf.subarray(0, got))
          bytes += got
        }
        if (got < want) break
      }
    }
  } finally {
    closeSync(fd)
  }
  return { parts, bytes, cut }
}

/** Whether a task of `pid` is stopped at the entry of exit_group (held by strace). */
function inExitGroup(pid: number, nr: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    if (state !== 't') return false
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const s = readFileSync(`/proc/${pid}/task/${tid}/syscall`, 'latin1')
      if (Number.parseInt(s, 10) === nr) return true
    }
  } catch {
    // gone, or not ours to read
  }
  return false
}

export class ProcMemDumper {
  private readonly done = new Set<number>()
  private readonly uploads: Promise<void>[] = []
  private used = 0
  private timer: NodeJS.Timeout | null = null
  private dumps = 0
  private full = false

  constructor(private readonly server: NetlogServer, private readonly limits: ProcMemLimits, private readonly log: NetlogLog) {}

  /** Dumps each tracked process held at exit_group; `tracer` is strace's pid. */
  watchExits(tracer: number, tracked: () => number[]): void {
    const nr = EXIT_GROUP_NR[process.arch]
    if (nr === undefined) return
    this.timer = setInterval(() => {
      for (const pid of tracked()) {
        if (this.done.has(pid) || this.full || !inExitGroup(pid, nr)) continue
        try {
          process.kill(tracer, 'SIGSTOP')
        } catch {
          return
        }
        try {
          this.dump(pid, 'exit')
        } finally {
          try {
            process.kill(tracer, 'SIGCONT')
          } catch {
            // strace is gone
          }
        }
      }
    }, POLL_MS)
  }

  /** Dumps the processes of `pids` not dumped yet (the end of the run). */
  dumpAll(pids: number[]): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    for (const pid of pids) if (!this.done.has(pid) && !this.full) this.dump(pid, 'end')
  }

  private dump(pid: number, when: 'exit' | 'end'): void {
    this.done.add(pid)
    const left = this.limits.total - this.used
    const { parts, bytes, cut } = readProcess(pid, Math.min(this.limits.perProcess, left))
    if (bytes === 0) return
    this.used += bytes
    if (this.used >= this.limits.total) {
      this.full = true
      this.log.warning(`process memory: procmem_total (${this.limits.total} bytes) reached; later processes are not dumped`)
    } else if (cut) {
      this.log.warning(`process memory of ${pid}: cut at procmem_max (${this.limits.perProcess} bytes)`)
    }
    let exe = ''
    try {
      exe = readlinkSync(`/proc/${pid}/exe`)
    } catch {
      // gone
    }
    this.dumps++
    this.uploads.push(uploadFile(this.server, `memory/${pid}-1.dmp`, exe, [pid], Readable.from(parts)).catch((err: unknown) => {
      this.log.warning(`process memory of ${pid} could not be sent: ${(err as Error).message}`)
    }))
    this.log.info(`process memory of ${pid} (${when === 'exit' ? 'at its exit' : 'at the end'}): ${bytes} bytes`)
  }

  async finish(): Promise<number> {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    await Promise.all(this.uploads)
    return this.dumps
  }
}
