// A periodic job on a timer (never a busy loop): runs, then sleeps `intervalMs`, or runs again at
// once when the job says there is more to do. stop() clears the timer and waits for a run in flight.

/** What a run returns: 'again' to run at once (a full batch was handled), otherwise sleep. */
export type RunResult = 'again' | undefined

export class Loop {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private stopped = true

  constructor(
    private readonly intervalMs: number,
    private readonly job: () => Promise<RunResult>,
    private readonly onError: (err: unknown) => void
  ) {}

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.schedule(0)
  }

  /** Runs as soon as possible (e.g. new work arrived); a run in flight is not interrupted. */
  kick(): void {
    if (this.stopped || this.running) return
    this.schedule(0)
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    await this.running
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.running = this.run()
    }, ms)
  }

  private async run(): Promise<void> {
    let again = false
    try {
      again = (await this.job()) === 'again'
    } catch (err) {
      this.onError(err)
    }
    this.running = undefined
    if (!this.stopped) this.schedule(again ? 0 : this.intervalMs)
  }
}

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i]!)
    }
  }
  // Every lane ends before this returns, even when one fails: no call is still running behind
  // the caller's back (it may write marks the caller is about to flush).
  const lanes = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, lane))
  for (const l of lanes) if (l.status === 'rejected') throw l.reason
  return out
}
