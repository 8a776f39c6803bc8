// The analyses this agent started, so that it can (a) say when an analyzer died without reporting,
// and (b) end every earlier analysis when the host asks (POST /reset) before a new one, which is
// what keeps a machine that is never reverted (a physical one, or a VM whose revert failed) from
// running an earlier task's analyzer and sample into the next task.
//
// What "an analysis" is: a process the host started through the agent (the analyzer of
// /execpy and /execnode, or an /execute command) and everything that descends from it. Nothing is
// added to their environment, arguments or names to tell them apart, because the sample inherits
// all of that and a sample that finds its sandbox plays clean (docs/engine.md, "What the sample
// can see"). Instead:
// - Linux: each started process is moved, right after the spawn, into a cgroup v2 of its own under
//   the agent's cgroup (cgroups.ts). /reset ends each such cgroup whole, whatever its processes
//   did with their process group, session or parent.
// - Linux without a writable cgroup2: each started process's process group, and every process
//   that descends from a started process, when /reset looks or when the agent looked before
//   (every LINEAGE_MS while such an analysis runs, /proc/<pid>/stat). What was seen stays ended
//   with its analysis after its parent has gone: an analyzer cut off when the host died leaves
//   strace and the sample to init, in sessions of their own. A daemon whose parent exited before
//   the agent looked (a quick double fork) and that left the process group escapes;
//   docs/engine.md says so.
// - Windows: taskkill /T of each started process that still runs, then the process itself (Wine
//   refuses /T).
// The environment every started process gets is the one the agent itself was started with.
import type { ChildProcess } from 'node:child_process'
import { spawnSync } from 'node:child_process'
import { tagDescription } from '../guest-protocol/run-identity.js'
import { agentCgroupDir, AnalysisCgroup, descendants, processTable } from './cgroups.js'

/** The part of the agent's state this module reads and writes. */
export interface StatusState {
  status: string | null
  description: string | null
  /** Incremented by every POST /status, so an exit can tell whether its analyzer reported since it started. */
  posts: number
}

interface Tracked {
  child: ChildProcess
  run: string | null
  postsAtStart: number
}

interface Started {
  child: ChildProcess
  /** Linux: its cgroup; null where none could be made (the fallback ends it). */
  group: AnalysisCgroup | null
}

export interface AnalysesOptions {
  /**
   * Linux: the cgroup2 folder to make the analyses' cgroups in; default the agent's own cgroup.
   * null: no cgroups (process groups and descendants only, as where no cgroup2 is writable).
   */
  cgroupParent?: string | null
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Linux without cgroups: how often the descendants of the running analyses are noted. */
const LINEAGE_MS = 500

export class Analyses {
  /** The environment every started process gets: the agent's own, as it was started. */
  readonly env: NodeJS.ProcessEnv
  private readonly tracked = new Map<number, Tracked>()
  private started: Started[] = []
  private cgroupParent: string | null
  private warned = false
  /** Linux without cgroups: each process seen descending from a started one, with its start time. */
  private readonly lineage = new Map<number, string>()
  private lineageTimer: NodeJS.Timeout | null = null

  constructor(private readonly state: StatusState, private readonly log: (m: string) => void, o: AnalysesOptions & { env?: NodeJS.ProcessEnv } = {}) {
    this.env = { ...(o.env ?? process.env) }
    this.cgroupParent = process.platform !== 'linux' ? null : o.cgroupParent === undefined ? agentCgroupDir() : o.cgroupParent
    if (process.platform === 'linux') {
      this.log(this.cgroupParent === null
        ? 'no cgroup2 found: earlier analyses are ended by process group and descendants'
        : `analyses are kept in cgroups under ${this.cgroupParent}`)
    }
  }

  /**
   * Takes hold of a process the agent has just spawned (called synchronously after spawn(), so that
   * it is in its cgroup before it has done anything worth speaking of).
   */
  contain(child: ChildProcess): void {
    const pid = child.pid
    if (pid === undefined) return
    let group: AnalysisCgroup | null = null
    if (this.cgroupParent !== null) {
      try {
        group = AnalysisCgroup.create(this.cgroupParent)
        group.add(pid)
      } catch (err) {
        if (group !== null) group.removeIfEmpty()
        group = null
        if (!this.warned) {
          this.warned = true
          this.log(`cannot use cgroups under ${this.cgroupParent} (${(err as Error).message}): ` +
            'earlier analyses are ended by process group and descendants')
        }
      }
    }
    const entry: Started = { child, group }
    this.started.push(entry)
    if (group === null && process.platform === 'linux' && this.lineageTimer === null) {
      this.lineageTimer = setInterval(() => this.noteLineage(), LINEAGE_MS)
      this.lineageTimer.unref()
    }
    // A command that ended and left nothing behind needs no cgroup until the next reset.
    child.once('exit', () => {
      if (group === null || !group.removeIfEmpty()) return
      const i = this.started.indexOf(entry)
      if (i >= 0) this.started.splice(i, 1)
    })
  }

  /**
   * Follows an analyzer the agent just started. If it exits before any status was posted after its
   * start, the status becomes `exception` naming how it ended (as CAPE's agent does for /execpy),
   * tagged with its run, so the host stops waiting at once instead of running into the timeout.
   */
  track(child: ChildProcess, run: string | null): void {
    const pid = child.pid
    if (pid === undefined) return
    this.tracked.set(pid, { child, run, postsAtStart: this.state.posts })
    child.once('exit', (code, signal) => {
      const t = this.tracked.get(pid)
      if (t === undefined || t.child !== child) return // ended by reset(): not its own death
      this.tracked.delete(pid)
      if (this.state.posts !== t.postsAtStart) return
      const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code ?? '?'}`
      const text = `the analyzer (pid ${pid}) ${how} before it reported`
      this.state.status = 'exception'
      this.state.description = t.run === null ? text : tagDescription(t.run, text)
      this.state.posts++
      this.log(`status: exception (${text})`)
    })
  }

  /**
   * The agent stops: removes the cgroups nothing runs in any more. What still runs is left as it
   * is, in its cgroup, for whoever reverts or reboots the machine.
   */
  release(): void {
    this.started = this.started.filter((s) => s.group === null || !s.group.removeIfEmpty())
  }

  /** Ends every analysis started so far (see the top of this file); returns how many processes were ended. */
  async reset(): Promise<number> {
    const all = this.started
    this.started = []
    this.tracked.clear()
    let ended = 0
    if (process.platform === 'win32') {
      for (const { child } of all) {
        if (child.exitCode !== null || child.signalCode !== null) continue
        // taskkill /T ends the tree where it is supported (Windows); Wine refuses /T, so the
        // started process itself is ended in any case.
        spawnSync('taskkill', ['/F', '/T', '/PID', String(child.pid)], { stdio: 'ignore', windowsHide: true })
        try {
          child.kill('SIGKILL')
        } catch {
          // gone
        }
        ended++
      }
    } else {
      for (const { group } of all) if (group !== null) ended += await group.end()
      ended += await this.endLoose(all.filter((s) => s.group === null).map((s) => s.child))
    }
    this.state.status = null
    this.state.description = null
    this.state.posts++
    return ended
  }

  /** The processes noted below the analyses that still run: the same process, not a reused pid. */
  private notedRunning(table: Map<number, { start: string }>): number[] {
    return [...this.lineage].filter(([pid, start]) => table.get(pid)?.start === start).map(([pid]) => pid)
  }

  /** The started processes without a cgroup that still run, and those noted below them. */
  private looseRoots(table: Map<number, { start: string }>): number[] {
    const started = this.started.filter((s) => s.group === null && s.child.exitCode === null && s.child.signalCode === null)
      .map((s) => s.child.pid ?? 0).filter((p) => p > 0)
    return [...new Set([...started, ...this.notedRunning(table)])]
  }

  /** Notes what now descends from the loose analyses; stops looking once none of them runs. */
  private noteLineage(): void {
    const table = processTable()
    const roots = this.looseRoots(table).filter((p) => table.has(p))
    if (roots.length === 0) {
      if (this.lineageTimer !== null) clearInterval(this.lineageTimer)
      this.lineageTimer = null
      return
    }
    for (const pid of descendants(roots, table)) this.lineage.set(pid, table.get(pid)!.start)
  }

  /**
   * Linux without cgroups: the started processes, their descendants (now, and those noted
   * before), and the process groups they lead (the agent starts each detached, so each leads its
   * own). Repeated, since a fork bomb adds processes while they are being ended.
   */
  private async endLoose(started: ChildProcess[]): Promise<number> {
    const first = processTable()
    // A started process that has exited is no root (its pid may be another process's by now),
    // but the group it led still is ours: a pid is not reused while its group has members.
    const running = started.filter((c) => c.exitCode === null && c.signalCode === null).map((c) => c.pid ?? 0)
    const roots = [...new Set([...running, ...this.notedRunning(first)])].filter((p) => p > 0)
    const led = started.map((c) => c.pid ?? 0).filter((p) => p > 0)
    this.lineage.clear()
    if (this.lineageTimer !== null) clearInterval(this.lineageTimer)
    this.lineageTimer = null
    if (led.length === 0 && roots.length === 0) return 0
    const seen = new Set<number>()
    for (let round = 0; round < 5; round++) {
      const table = round === 0 ? first : processTable()
      const below = descendants(roots, table)
      const targets = new Set<number>([...roots, ...below].filter((p) => table.has(p) && p !== process.pid))
      // Process groups led by one of ours: members that left the tree but kept the group.
      const groups = new Set<number>([...led, ...roots, ...below])
      for (const [pid, { pgid }] of table) if (groups.has(pgid) && pid !== process.pid) targets.add(pid)
      if (targets.size === 0) break
      for (const pid of targets) {
        try {
          process.kill(pid, 'SIGKILL')
          seen.add(pid)
        } catch {
          // already gone
        }
      }
      await sleep(20)
    }
    return seen.size
  }
}
