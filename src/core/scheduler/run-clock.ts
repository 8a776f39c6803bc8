// When a running analysis ends, as something that can move: the analyst extends it or finishes it
// now from the Live tab (POST /aviary/tasks/<id>/extend, /finish). The guest phase waits on it
// (guest-phase.ts), Aviary's analyzer in the guest is told each move (guest-protocol/agent-api.ts,
// DEADLINE_FILE), and the API reads it for the countdown. Its signal fires at the end plus the
// critical timeout, so the run keeps one wall-clock limit however often it was moved, and the
// total is capped (MAX_RUN_SECONDS): an analysis cannot be extended without end.
import type { TimelineStage } from '../../shared/api/schemas'

/** The longest an analysis may last with its extensions: the API's largest timeout. */
export const MAX_RUN_SECONDS = 86_400
/** After Finish now, how long an analyzer that does not read the deadline (Cuckoo's) is waited for. */
export const FINISH_GRACE_MS = 5000

export class RunClock {
  readonly startedAt: number
  private endAt: number
  private finished = false
  private readonly listeners = new Set<() => void>()
  extendedBy = 0

  constructor(readonly timeoutSeconds: number, private readonly now: () => number = Date.now) {
    this.startedAt = now()
    this.endAt = this.startedAt + timeoutSeconds * 1000
  }

  get endsAt(): number {
    return this.endAt
  }

  get finishing(): boolean {
    return this.finished
  }

  remainingMs(): number {
    return Math.max(0, this.endAt - this.now())
  }

  /** Moves the end by `seconds`; returns the new end, or a reason it cannot be moved. */
  extend(seconds: number): number | string {
    if (this.finished) return 'the analysis is finishing'
    const limit = this.startedAt + MAX_RUN_SECONDS * 1000
    if (this.endAt + seconds * 1000 > limit) return `an analysis lasts at most ${MAX_RUN_SECONDS} s with its extensions`
    // Extending a run already past its end moves the end from now, not from the past.
    this.endAt = Math.max(this.endAt, this.now()) + seconds * 1000
    this.extendedBy += seconds
    this.changed()
    return this.endAt
  }

  finishNow(): boolean {
    if (this.finished) return false
    this.finished = true
    this.endAt = Math.min(this.endAt, this.now())
    this.changed()
    return true
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /**
   * A signal that fires `graceMs` after the end, following every move (after Finish now, at most
   * FINISH_GRACE_MS after it). dispose() stops its timer.
   */
  deadline(graceMs: number): { signal: AbortSignal; dispose(): void } {
    const ctl = new AbortController()
    let timer: NodeJS.Timeout | null = null
    const arm = (): void => {
      if (timer) clearTimeout(timer)
      if (ctl.signal.aborted) return
      const grace = this.finished ? Math.min(graceMs, FINISH_GRACE_MS) : graceMs
      timer = setTimeout(() => ctl.abort(new Error('deadline')), Math.max(0, this.endAt + grace - this.now()))
    }
    arm()
    const off = this.onChange(arm)
    return {
      signal: ctl.signal,
      dispose: () => {
        off()
        if (timer) clearTimeout(timer)
      }
    }
  }

  private changed(): void {
    for (const fn of this.listeners) fn()
  }
}

export interface RunControl {
  clock: RunClock
  /** interactive=1: the machine is kept until the end (or Finish now), whatever the sample does. */
  interactive: boolean
  timeline(stage: TimelineStage, message: string): void
}

/** The runs that have reached their guest phase, by task: what the API's extend and finish act on. */
export class RunControls {
  private readonly runs = new Map<number, RunControl>()

  set(task: number, c: RunControl): () => void {
    this.runs.set(task, c)
    return () => {
      if (this.runs.get(task) === c) this.runs.delete(task)
    }
  }

  get(task: number): RunControl | undefined {
    return this.runs.get(task)
  }
}
