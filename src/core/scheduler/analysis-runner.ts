// Runs analyses: one AnalysisRun per claimed task, each with its own AbortController so that a
// service stop interrupts every run, lets each tear its machine down, and waits for them. A run
// that breaks before its own teardown could (no analysis folder, say) still frees its machine and
// fails its task with the reason.
import type { MachineRow } from '../db/machines.repository'
import type { RunnerDeps } from './run-deps'

export type { RunnerDeps } from './run-deps'

export class AnalysisRunner {
  private readonly active = new Map<number, { ctl: AbortController; done: Promise<void> }>()

  constructor(private readonly d: RunnerDeps, private readonly onFinished: () => void) {}

  get running(): number {
    return this.active.size
  }

  /** Starts the run of a claimed task (status running, machine locked) without waiting for it. */
  launch(taskId: number, machine: MachineRow): void {
    const ctl = new AbortController()
    const done = this.run(taskId, machine, ctl.signal).finally(() => {
      this.active.delete(taskId)
      this.onFinished()
    })
    this.active.set(taskId, { ctl, done })
  }

  private async run(taskId: number, machine: MachineRow, signal: AbortSignal): Promise<void> {
    const task = this.d.tasks.get(taskId)
    if (!task) {
      this.d.machines.unlock(machine.id)
      return
    }
    try {
      // A run's code (guest session, capture, screenshots, routes) loads with the first task run.
      const { AnalysisRun } = await import('./analysis-run')
      await new AnalysisRun(this.d, task, machine, signal).execute()
    } catch (err) {
      // Only what AnalysisRun could not handle itself lands here (its folder could not be made).
      const reason = `the analysis could not start: ${(err as Error).message}`
      this.d.log.error(`task ${taskId}: ${reason}`)
      this.d.machines.unlock(machine.id)
      this.d.queue.addError(taskId, reason)
      if (this.d.queue.move(taskId, 'running', 'failed_analysis', { completed: true })) this.d.timeline.add(taskId, 'failed', reason)
    }
  }

  /** Interrupts every run and waits until each has stopped its machine. */
  async stop(): Promise<void> {
    for (const { ctl } of this.active.values()) ctl.abort()
    await Promise.all([...this.active.values()].map((r) => r.done))
  }
}
