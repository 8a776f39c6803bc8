// Waiting for the analyzer's end: GET /status every pollMs (Cuckoo 2.0.7's wait_for_completion)
// until a final status, the time limit or the signal. The guest is hostile, so the answers are
// judged, not just read:
// - each poll is one bounded exchange (agent-http.ts: the route's size limit, a 5 s deadline);
// - an answer no agent gives (longer than the limit, dripping past the deadline, not JSON, not
//   HTTP 200, a status that is neither a string nor null) is a misbehaviour; three in a row end
//   the wait at once with what the agent did, rather than letting it run into the timeout;
// - no answer at all is retried, as Cuckoo does (the guest may be busy);
// - with an analyzer that carries its run's id (Aviary's), a final status tagged with another run
//   comes from an analyzer left over from an earlier task: it is reported and ignored;
// - how the status moved is kept, so a timeout can say what the agent kept answering.
import { setTimeout as sleep } from 'node:timers/promises'
import { EXCHANGE_MS, isFinalStatus, ROUTES, type FinalStatus } from '../../guest-protocol/agent-api'
import { untagDescription } from '../../guest-protocol/run-identity'
import { AgentError, agentErrorText, agentRequest, errMessage, jsonObject, type ExchangeProgress } from './agent-http'

export type CompletionOutcome = FinalStatus | 'aborted' | 'timeout' | 'misbehaved'

export interface Completion {
  outcome: CompletionOutcome
  /** The analyzer's description (its run tag removed), or what the agent did for 'misbehaved'. */
  description: string | null
}

export interface PollTarget {
  ip: string
  port: number
  pollMs: number
  log: (msg: string) => void
  /** This run's id when the analyzer tags its statuses (Aviary's); null: untagged statuses count. */
  run: string | null
  watch: (p: ExchangeProgress) => void
  /** The limit on each poll's exchange, however its bytes trickle: EXCHANGE_MS.poll unless set. */
  exchangeMs?: number
}

export interface PollOptions {
  timeoutMs: number
  /** When the wait ends, asked at each poll (the run's end moves: run-clock.ts); else now + timeoutMs. */
  endAt?: () => number
  signal?: AbortSignal | undefined
  onRunning?: () => void
  /** A final status of another run's analyzer was seen (once per distinct answer). */
  onStale?: (what: string) => void
}

/** Misbehaving answers in a row that end the wait. */
const MISBEHAVIOURS_IN_A_ROW = 3

/** What the polls saw, for the reason of a run that ran out of time. */
export class PollHistory {
  statuses: string[] = []
  changes = 0
  lastProblem: string | null = null

  seen(status: string): void {
    if (this.statuses.at(-1) !== status) {
      if (this.statuses.length > 0) this.changes++
      this.statuses.push(status)
      if (this.statuses.length > 6) this.statuses.shift()
    }
  }

  /** In words, or null when there is nothing to say beyond "no final status". */
  describe(): string | null {
    if (this.lastProblem !== null) return `the last status poll failed: ${this.lastProblem}`
    if (this.changes >= 3) return `the agent's status changed ${this.changes} times (… ${this.statuses.join(' → ')}) without becoming final`
    const last = this.statuses.at(-1)
    if (last !== undefined) return `the agent kept answering status ${last}`
    return null
  }
}

function shown(v: unknown): string {
  return v === null || v === undefined ? 'null' : JSON.stringify(v).slice(0, 80)
}

export async function pollUntilFinal(t: PollTarget, o: PollOptions, history: PollHistory): Promise<Completion> {
  const end = Date.now() + o.timeoutMs
  let running = false
  let misbehaved = 0
  const stale = new Set<string>()
  for (;;) {
    if (o.signal?.aborted) return { outcome: 'aborted', description: null }
    const left = (o.endAt?.() ?? end) - Date.now()
    if (left <= 0) return { outcome: 'timeout', description: null }
    try {
      await sleep(Math.min(t.pollMs, left), undefined, { signal: o.signal })
    } catch {
      return { outcome: 'aborted', description: null }
    }
    let problem: string
    let misbehaviour: boolean
    const limitMs = t.exchangeMs ?? EXCHANGE_MS.poll
    try {
      const res = await agentRequest({
        ip: t.ip, port: t.port, method: 'GET', path: ROUTES.status, timeoutMs: limitMs, deadlineMs: limitMs,
        signal: o.signal, step: 'polling the analysis status', watch: t.watch
      })
      const j = res.status === 200 ? jsonObject(res.body) : null
      if (j === null) throw new AgentError('misbehaved', `GET /status answered ${res.status === 200 ? `${res.body.length} bytes that are not a JSON object` : agentErrorText(res)}`)
      const raw = j.status
      if (raw !== null && raw !== undefined && typeof raw !== 'string') throw new AgentError('misbehaved', `GET /status answered status ${shown(raw)}, not a string`)
      const status = raw ?? 'null'
      history.seen(status)
      history.lastProblem = null
      misbehaved = 0
      if (isFinalStatus(raw)) {
        const d = typeof j.description === 'string' && j.description !== '' ? j.description : null
        const tag = untagDescription(d)
        if (t.run !== null && tag.run !== t.run) {
          const what = `status ${raw}${d === null ? '' : ` (${d.slice(0, 200)})`}`
          if (!stale.has(what)) {
            stale.add(what)
            t.log(`ignored ${what}: it does not carry this run's id, so it comes from an analyzer of an earlier run`)
            o.onStale?.(what)
          }
          continue
        }
        t.log(`the analyzer reported ${raw}${tag.text ? `: ${tag.text}` : ''}`)
        return { outcome: raw, description: tag.text }
      }
      // Any answered non-final status means the analyzer was started and runs: CAPE's agent says
      // 'running', Cuckoo's never does (null, or 'init' after start() reset a kept status).
      if (!running) {
        running = true
        o.onRunning?.()
      }
      continue
    } catch (err) {
      if (o.signal?.aborted) return { outcome: 'aborted', description: null }
      problem = errMessage(err)
      misbehaviour = err instanceof AgentError && err.kind === 'misbehaved'
    }
    if (problem !== history.lastProblem) t.log(`status poll failed${misbehaviour ? '' : ', retrying'}: ${problem}`) // like Cuckoo: log and retry
    history.lastProblem = problem
    misbehaved = misbehaviour ? misbehaved + 1 : 0
    if (misbehaved >= MISBEHAVIOURS_IN_A_ROW) {
      return { outcome: 'misbehaved', description: `${MISBEHAVIOURS_IN_A_ROW} status polls in a row got answers no agent gives; the last: ${problem}` }
    }
  }
}
