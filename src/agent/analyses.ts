// The analyses this agent started, so that it can (a) say when an analyzer died without reporting,
// and (b) end every earlier analysis when the host asks (POST /reset) before a new one, which is
// what keeps a machine that is never reverted (a physical one, or a VM whose revert failed) from
// running an earlier task's analyzer and sample into the next task.
//
// What "an analysis" is: the process the host started with async /execpy or /execnode (the
// analyzer), and everything that inherits its environment. Every process the agent starts gets
// AVIARY_AGENT_SESSION=<this agent's own random id>; the analyzer passes its environment on to the
// sample, and the sample to its children. On Linux /reset ends every process whose environment
// holds that value, whatever its process group or parent (a daemon that forked and called setsid
// still carries it), then each tracked process group. A process that rewrote its own environment
// escapes the scan: that limit is documented (docs/engine.md, "The guest is hostile").
import type { ChildProcess } from 'node:child_process'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { tagDescription } from '../guest-protocol/run-identity.js'

export const SESSION_ENV = 'AVIARY_AGENT_SESSION'

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

export class Analyses {
  readonly session = randomBytes(12).toString('hex')
  private readonly tracked = new Map<number, Tracked>()

  constructor(private readonly state: StatusState, private readonly log: (m: string) => void) {}

  /** The environment every process the agent starts gets. */
  env(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return { ...base, [SESSION_ENV]: this.session }
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

  /** Ends every analysis started so far (see the top of this file); returns how many processes were ended. */
  reset(): number {
    const own = [...this.tracked.values()]
    this.tracked.clear()
    let ended = 0
    if (process.platform === 'win32') {
      for (const { child } of own) {
        if (child.exitCode !== null || child.signalCode !== null) continue
        // taskkill /T ends the tree where it is supported (Windows); Wine refuses /T, so the
        // analyzer itself is ended in any case.
        spawnSync('taskkill', ['/F', '/T', '/PID', String(child.pid)], { stdio: 'ignore', windowsHide: true })
        try {
          child.kill('SIGKILL')
        } catch {
          // gone
        }
        ended++
      }
    } else {
      // Repeated: a fork bomb adds processes while they are being ended.
      for (let round = 0; round < 5; round++) {
        const found = this.marked()
        const groups = round === 0 ? own.map((t) => -(t.child.pid ?? 0)).filter((g) => g !== 0) : []
        if (found.length === 0 && groups.length === 0) break
        for (const pid of [...found, ...groups]) {
          try {
            process.kill(pid, 'SIGKILL')
            if (pid > 0) ended++
          } catch {
            // already gone
          }
        }
      }
    }
    this.state.status = null
    this.state.description = null
    this.state.posts++
    return ended
  }

  /** Linux: pids whose environment carries this agent's session (never the agent itself). */
  private marked(): number[] {
    const needle = Buffer.from(`\0${SESSION_ENV}=${this.session}\0`)
    const out: number[] = []
    let entries: string[]
    try {
      entries = readdirSync('/proc')
    } catch {
      return out
    }
    for (const name of entries) {
      if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
      try {
        // A leading NUL lets the first variable match like the others.
        const env = Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`), Buffer.from([0])])
        if (env.includes(needle)) out.push(Number(name))
      } catch {
        // gone, or not ours to read
      }
    }
    return out
  }
}
