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

  /** The agent's part of the run: wait for it, start the analysis, wait for its end; never longer than timeout + critical. */
  async run(o: { timeout: number; critical: number; spec: () => Promise<GuestStartSpec> }): Promise<Ending> {
    const limitMs = (o.timeout + o.critical) * 1000
    const deadline = AbortSignal.timeout(limitMs)
    const signal = AbortSignal.any([this.h.signal, deadline, this.capped.signal])
    const session = new GuestSession({ ip: this.h.ip, port: AGENT_PORT, log: (msg) => this.h.log.info(msg), run: this.runId })
    this.session = session
    try {
      return await this.talk(session, limitMs, signal, o)
    } catch (err) {
      if (this.h.signal.aborted) return { kind: 'interrupted' }
      if (this.capped.signal.aborted) {
        this.h.stage('finished', 'ended early: the guest reached the upload limit')
        return { kind: 'completed' }
      }
      if (deadline.aborted) return this.timedOut(o.timeout, o.critical)
      throw err
    }
  }

  private async talk(session: GuestSession, limitMs: number, signal: AbortSignal,
    o: { timeout: number; critical: number; spec: () => Promise<GuestStartSpec> }): Promise<Ending> {
    const startedAt = Date.now()
    const left = (): number => Math.max(0, limitMs - (Date.now() - startedAt))
    this.h.guestStatus('starting')
    const info = await session.waitAvailable({ timeoutMs: left(), signal })
    this.h.stage('agent_answered', `${this.h.ip}:${AGENT_PORT}`)
    await session.start(await o.spec(), signal, info).catch((err: unknown) => {
      this.h.guestStatus('failed')
      throw err
    })
    this.h.stage('analyzer_started', `${info.kind} agent${info.version ? ` ${info.version}` : ''}`)
    this.h.guestStatus('running')
    const result = await session.waitForCompletion({
      timeoutMs: left(), signal, onRunning: () => this.h.stage('sample_running', null),
      onStale: (what) => this.foreign(`ignored ${what} from an analyzer of an earlier run`)
    })
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
        return this.timedOut(o.timeout, o.critical)
    }
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
