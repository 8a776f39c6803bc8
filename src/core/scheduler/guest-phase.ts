// The guest's part of one run: from the moment the machine runs until the analyzer's end. The
// guest is hostile (docs/engine.md, "The guest is hostile"), so this part is held to one
// wall-clock limit, the task's timeout plus the critical timeout, whatever the agent does: every
// exchange with the agent gets the run's deadline as its signal, and when it fires the task fails
// with what the agent was doing. The run's id (src/guest-protocol/run-identity.ts) goes to the
// analyzer; what an earlier run's analyzer sends is refused and noted. The upload cap ends the
// wait early: nothing more could be stored.
import { randomBytes } from 'node:crypto'
import type { TimelineStage } from '../../shared/api/schemas'
import { AGENT_PORT } from '../../guest-protocol/agent-api'
import { GuestSession, type GuestStartSpec } from '../guest/guest-session'
import type { GuestStatus } from '../db/guests.repository'
import type { TaskLog } from './task-log'
import { FINISH_GRACE_MS, RunClock } from './run-clock'

export type Ending =
  | { kind: 'completed' }
  | { kind: 'failed'; reason: string }
  | { kind: 'interrupted' }

export interface GuestPhaseHooks {
  ip: string
  log: TaskLog
  /** The service stopping: the run is interrupted, not failed. */
  signal: AbortSignal
  stage(stage: TimelineStage, message: string | null): void
  /** A problem: task errors, timeline and analysis.log. */
  note(message: string): void
  /** The run's errors (the analyzer's own failure is one, but not the run's end). */
  errors: string[]
  guestStatus(status: GuestStatus): void
  timelineError(message: string): void
  /** The run's clock, made when the guest phase starts: the API moves it (Extend, Finish now). */
  clock?(clock: RunClock): void
}

/** Lines about refused foreign connections written to analysis.log before they are only counted. */
const FOREIGN_LOGGED = 20

export class GuestPhase {
  /** This run's id: in analysis.conf, on every connection of Aviary's analyzer, in its statuses. */
  readonly runId = randomBytes(16).toString('hex')
  /** Aborted when the guest reached the upload cap. */
  private readonly capped = new AbortController()
  private session: GuestSession | null = null
  private foreignCount = 0

  constructor(private readonly h: GuestPhaseHooks) {}

  /**
   * The agent's part of the run: wait for it, start the analysis, wait for its end; never longer
   * than the timeout (as extended, run-clock.ts) + critical. `interactive`: the machine is kept
   * until the end of the timeout or Finish now, even when the analyzer reports its end earlier.
   */
  async run(o: { timeout: number; critical: number; interactive?: boolean; spec: () => Promise<GuestStartSpec> }): Promise<Ending> {
    const clock = new RunClock(o.timeout)
    const deadline = clock.deadline(o.critical * 1000)
    const signal = AbortSignal.any([this.h.signal, deadline.signal, this.capped.signal])
    const session = new GuestSession({ ip: this.h.ip, port: AGENT_PORT, log: (msg) => this.h.log.info(msg), run: this.runId })
    this.session = session
    this.h.clock?.(clock)
    try {
      return await this.talk(session, clock, signal, o)
    } catch (err) {
      if (this.h.signal.aborted) return { kind: 'interrupted' }
      if (this.capped.signal.aborted) {
        this.h.stage('finished', 'ended early: the guest reached the upload limit')
        return { kind: 'completed' }
      }
      if (deadline.signal.aborted) return clock.finishing ? this.finishedUnreported() : this.timedOut(o.timeout + clock.extendedBy, o.critical)
      throw err
    } finally {
      deadline.dispose()
    }
  }

  /** Finish now, and the analyzer did not report its end in time (Cuckoo's does not read the deadline). */
  private finishedUnreported(): Ending {
    const why = 'Finish now: the analyzer had not reported its end a few seconds later; the machine was stopped and its results may be partial'
    this.h.stage('finished', why)
    this.h.errors.push(why)
    return { kind: 'completed' }
  }

  private async talk(session: GuestSession, clock: RunClock, signal: AbortSignal,
    o: { timeout: number; critical: number; interactive?: boolean; spec: () => Promise<GuestStartSpec> }): Promise<Ending> {
    const left = (): number => clock.remainingMs() + o.critical * 1000
    this.h.guestStatus('starting')
    const info = await session.waitAvailable({ timeoutMs: left(), signal })
    this.h.stage('agent_answered', `${this.h.ip}:${AGENT_PORT}`)
    await session.start(await o.spec(), signal, info).catch((err: unknown) => {
      this.h.guestStatus('failed')
      throw err
    })
    this.h.stage('analyzer_started', `${info.kind} agent${info.version ? ` ${info.version}` : ''}`)
    this.h.guestStatus('running')
    // Aviary's analyzer reads the end the host sets (Extend, Finish now); Cuckoo's keeps its own
    // timeout (tellDeadline does nothing for it).
    const offClock = clock.onChange(() => void session.tellDeadline(clock.remainingMs(), signal).catch(
      (err: unknown) => this.h.log.warn(`telling the analyzer its new end: ${(err as Error).message}`)))
    let result
    try {
      result = await session.waitForCompletion({
        timeoutMs: left(), endAt: () => clock.endsAt + (clock.finishing ? FINISH_GRACE_MS : o.critical * 1000), signal,
        onRunning: () => this.h.stage('sample_running', null),
        onStale: (what) => this.foreign(`ignored ${what} from an analyzer of an earlier run`)
      })
    } finally {
      offClock()
    }
    if (o.interactive && (result.outcome === 'complete' || result.outcome === 'exception' || result.outcome === 'failed')) {
      await this.keepUntilEnd(clock, signal)
    }
    switch (result.outcome) {
      case 'complete':
        this.h.stage('finished', result.description)
        return { kind: 'completed' }
      case 'exception':
      case 'failed': {
        const why = `the analyzer reported ${result.outcome}: ${result.description ?? 'no description'}`
        this.h.stage('finished', why)
        this.h.errors.push(why)
        return { kind: 'completed' }
      }
      case 'misbehaved':
        return { kind: 'failed', reason: `the agent misbehaved: ${result.description ?? 'no detail'}; the machine was stopped` }
      case 'aborted':
        throw new Error('interrupted') // run() says by what
      case 'timeout':
        // After Finish now the wait ends FINISH_GRACE_MS later: not a timeout, the analyst's end.
        return clock.finishing ? this.finishedUnreported() : this.timedOut(o.timeout + clock.extendedBy, o.critical)
    }
  }

  /** interactive=1: the analyzer has ended, the analyst keeps the machine until the end or Finish now. */
  private async keepUntilEnd(clock: RunClock, signal: AbortSignal): Promise<void> {
    if (clock.finishing || clock.remainingMs() === 0) return
    this.h.log.info(`interactive: the analyzer has ended; the machine is kept for ${Math.round(clock.remainingMs() / 1000)} s or until Finish now`)
    await new Promise<void>((done) => {
      let timer: NodeJS.Timeout | null = null
      const arm = (): void => {
        if (timer) clearTimeout(timer)
        if (clock.finishing) return finish()
        timer = setTimeout(finish, clock.remainingMs())
      }
      const finish = (): void => {
        if (timer) clearTimeout(timer)
        off()
        signal.removeEventListener('abort', finish)
        done()
      }
      const off = clock.onChange(arm)
      signal.addEventListener('abort', finish)
      arm()
    })
  }

  private timedOut(timeout: number, critical: number): Ending {
    const trouble = this.session?.trouble() ?? null
    this.h.stage('timed_out', `no completion within ${timeout} + ${critical} s${trouble ? `: ${trouble}` : ''}`)
    return {
      kind: 'failed',
      reason: `critical timeout: the analysis did not complete within its timeout (${timeout} s) plus the critical timeout ` +
        `(${critical} s); ${trouble ?? 'the analyzer never reported its end'}; the machine was stopped`
    }
  }

  /** The guest reached task_max_size: noted, and the wait for the analyzer ends (nothing more can be stored). */
  capReached(cap: number): void {
    if (this.capped.signal.aborted) return
    this.h.note(`the guest sent more than the task's limit of ${cap} bytes (task_max_size): nothing more was stored, ` +
      'the analysis was ended there and its results are partial')
    this.capped.abort()
  }

  /** Something of another run (an earlier run's analyzer) was refused: logged, and noted on the timeline once. */
  foreign(what: string): void {
    this.foreignCount++
    if (this.foreignCount <= FOREIGN_LOGGED) this.h.log.warn(what)
    if (this.foreignCount === 1) this.h.timelineError(`${what} (further ones are logged in analysis.log)`)
  }

  /** Ends what this run left running in the guest, where the agent can (Aviary's /reset). */
  async endInGuest(): Promise<void> {
    await this.session?.endEarlierAnalyses()
  }
}
