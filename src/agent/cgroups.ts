// Linux: how the agent keeps hold of every process an analysis leaves behind without marking it.
//
// Each process the agent starts is moved, right after it was spawned, into a cgroup v2 of its own,
// created under the agent's own cgroup. Children stay in their parent's cgroup whatever they do
// with their process group, session or parent (a daemon that forked twice and called setsid is
// still there), and nothing of it is in the processes' environment, arguments or names: the only
// trace is the cgroup's path in /proc/<pid>/cgroup, which is named neutrally (`job-<random>`).
// Ending an analysis is `cgroup.kill` (Linux 5.14), else SIGKILL to every pid in `cgroup.procs`
// (and in any cgroup the sample made below it) in rounds until none is left, then the folders are
// removed.
//
// Where no writable cgroup2 is mounted (a cgroup v1-only system, a container with a read-only
// /sys/fs/cgroup), the caller falls back to process groups and the descendants of the processes it
// started (descendants() below); docs/engine.md says what that cannot catch.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** The kernel writes blanks, tabs, newlines and backslashes of mountinfo paths as \ooo. */
function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)))
}

/**
 * The folder of a process's own cgroup v2, from its /proc/<pid>/mountinfo and /proc/<pid>/cgroup
 * texts; null when no cgroup2 mount shows it. A hybrid hierarchy mounts cgroup2 at
 * /sys/fs/cgroup/unified, a unified one at /sys/fs/cgroup; a mount of a subtree (its root field is
 * not `/`) serves only the paths below that root.
 */
export function ownCgroupDir(mountinfo: string, cgroup: string): string | null {
  const entry = cgroup.split('\n').find((l) => l.startsWith('0::'))
  if (entry === undefined) return null
  const path = entry.slice(3).trim()
  if (!path.startsWith('/') || path.endsWith(' (deleted)')) return null
  for (const line of mountinfo.split('\n')) {
    const sep = line.indexOf(' - ')
    if (sep < 0 || line.slice(sep + 3).split(' ')[0] !== 'cgroup2') continue
    const fields = line.slice(0, sep).split(' ')
    const root = unescapeMountPath(fields[3] ?? '')
    const mountPoint = unescapeMountPath(fields[4] ?? '')
    if (mountPoint === '' || (fields[5] ?? '').split(',').includes('ro')) continue
    let rel: string | null
    if (root === '/') rel = path
    else if (path === root) rel = '/'
    else rel = path.startsWith(`${root}/`) ? path.slice(root.length) : null
    if (rel !== null) return join(mountPoint, rel)
  }
  return null
}

/** This process's own cgroup v2 folder, or null (not Linux, no cgroup2 mount that shows it). */
export function agentCgroupDir(): string | null {
  if (process.platform !== 'linux') return null
  try {
    return ownCgroupDir(readFileSync('/proc/self/mountinfo', 'utf8'), readFileSync('/proc/self/cgroup', 'utf8'))
  } catch {
    return null
  }
}

/** Pids listed in a cgroup and in every cgroup below it (a root sample may make its own). */
function pidsBelow(dir: string): number[] {
  const out: number[] = []
  try {
    for (const l of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) {
      const pid = Number.parseInt(l, 10)
      if (pid > 0) out.push(pid)
    }
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) out.push(...pidsBelow(join(dir, e.name)))
    }
  } catch {
    // removed meanwhile
  }
  return out
}

/** Removes a cgroup and every cgroup below it, deepest first; false when one still holds a process. */
function removeTree(dir: string): boolean {
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) removeTree(join(dir, e.name))
    }
    rmdirSync(dir)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
  }
}

/** One started process's cgroup (see the top of this file). */
export class AnalysisCgroup {
  private constructor(readonly dir: string) {}

  /** A new, empty cgroup under `parent`; throws when none can be made there. */
  static create(parent: string): AnalysisCgroup {
    for (let i = 0; ; i++) {
      const dir = join(parent, `job-${randomBytes(4).toString('hex')}`)
      try {
        mkdirSync(dir)
        return new AnalysisCgroup(dir)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || i >= 10) throw err
      }
    }
  }

  /**
   * Moves `pid` in, then the descendants it may already have forked before the move (a shell
   * started by /execute can fork within a millisecond; Node's analyzer forks nothing that early).
   */
  add(pid: number): void {
    writeFileSync(join(this.dir, 'cgroup.procs'), String(pid))
    for (const child of descendants([pid], processTable())) {
      try {
        writeFileSync(join(this.dir, 'cgroup.procs'), String(child))
      } catch {
        // ended meanwhile
      }
    }
  }

  /** Whether any process is still in it (or below it). */
  populated(): boolean {
    try {
      return /^populated 1$/m.test(readFileSync(join(this.dir, 'cgroup.events'), 'utf8'))
    } catch {
      return pidsBelow(this.dir).length > 0
    }
  }

  /** Removes the cgroup if nothing is left in it; true when it is gone. */
  removeIfEmpty(): boolean {
    return !this.populated() && removeTree(this.dir)
  }

  /** Ends every process in it and below it, then removes it; returns how many there were. */
  async end(): Promise<number> {
    const count = pidsBelow(this.dir).length
    const killFile = join(this.dir, 'cgroup.kill')
    let killed = false
    if (existsSync(killFile)) {
      try {
        writeFileSync(killFile, '1')
        killed = true
      } catch {
        // an older kernel's file, or refused: the rounds below do it
      }
    }
    // Rounds, also after cgroup.kill: SIGKILL is delivered asynchronously, and without
    // cgroup.kill a fork bomb adds processes while they are being ended.
    for (let round = 0; round < 100 && this.populated(); round++) {
      if (!killed || round > 0) {
        for (const pid of pidsBelow(this.dir)) {
          try {
            process.kill(pid, 'SIGKILL')
          } catch {
            // already gone
          }
        }
      }
      await sleep(round < 10 ? 10 : 50)
    }
    removeTree(this.dir)
    return count
  }
}

export interface ProcEntry {
  ppid: number
  pgid: number
  /** When it started (clock ticks since boot): with the pid, it names one process, not a reused pid. */
  start: string
}

/** Every process's parent and process group, from /proc/<pid>/stat (Linux). */
export function processTable(): Map<number, ProcEntry> {
  const out = new Map<number, ProcEntry>()
  let names: string[]
  try {
    names = readdirSync('/proc')
  } catch {
    return out
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1')
      // The name in parentheses may hold blanks and parentheses: fields start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(Number(name), { ppid: Number(fields[1]), pgid: Number(fields[2]), start: fields[19] ?? '' })
    } catch {
      // gone
    }
  }
  return out
}

/** The pids descending from `roots` (not the roots themselves) in a process table. */
export function descendants(roots: number[], table: Map<number, ProcEntry>): Set<number> {
  const children = new Map<number, number[]>()
  for (const [pid, { ppid }] of table) {
    const list = children.get(ppid)
    if (list === undefined) children.set(ppid, [pid])
    else list.push(pid)
  }
  const out = new Set<number>()
  const queue = [...roots]
  while (queue.length > 0) {
    for (const child of children.get(queue.pop()!) ?? []) {
      if (out.has(child) || roots.includes(child)) continue
      out.add(child)
      queue.push(child)
    }
  }
  return out
}
