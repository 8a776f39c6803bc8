// The retention schedule inside the service: every `checkMs` (a minute) it asks whether a
// scheduled run is due (RetentionService.nextScheduledRun: one interval after the last scheduled
// run, or after the schedule was turned on) and, if so, runs every enabled rule. Off by default
// (retention.json's schedule.enabled). A plain timer: nothing else wakes it.
import type { RetentionService } from './retention.service'

export interface ScheduleOptions {
  /** How often to look (ms); tests use a few ms. */
  checkMs?: number
  /** Epoch ms now (the service's clock, which tests move). */
  now?: () => number
  log?: { warn(msg: string): void }
}

export class RetentionSchedule {
  private timer: ReturnType<typeof setInterval> | null = null
  private running: Promise<void> | null = null
  private readonly now: () => number

  constructor(private readonly retention: RetentionService, private readonly o: ScheduleOptions = {}) {
    this.now = o.now ?? Date.now
  }

  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => void this.tick(), this.o.checkMs ?? 60_000)
    this.timer.unref()
  }

  /** Runs the enabled rules if a scheduled run is due; resolves when that run has ended. */
  tick(): Promise<void> {
    if (this.running) return this.running
    let due: boolean
    try {
      const next = this.retention.nextScheduledRun()
      due = next !== null && this.now() >= next
    } catch (err) {
      // A broken retention.json: said once per look, and nothing runs until it is fixed.
      this.o.log?.warn(`retention schedule: ${(err as Error).message}`)
      return Promise.resolve()
    }
    if (!due) return Promise.resolve()
    this.running = this.retention.run({}, 'schedule').then(
      () => undefined,
      (err: Error) => this.o.log?.warn(`retention schedule: the run failed: ${err.message}`)
    ).finally(() => { this.running = null })
    return this.running
  }

  /** Stops looking and waits for a scheduled run under way. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running
  }
}
