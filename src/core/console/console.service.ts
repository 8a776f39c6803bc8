// What the console routes call (api/routes/aviary-console.routes.ts): whether a task's or a
// machine's console is open and why not, the run's end (Extend, Finish now), the recordings of a
// task's sessions. It reads the hub and the run controls the engine fills, and never a driver.
import { lstatSync, readdirSync, statSync } from 'node:fs'
import { ApiError, badRequest, notFound, taskNotFound } from '../errors'
import { ErrorCodes } from '../../shared/errors'
import { NO_CONSOLE, type DriverKind } from '../../shared/api/drivers'
import { isRecordingName } from '../../shared/console-recording'
import type { ConsoleState, RecordingList, RunEnd } from '../../shared/api/console'
import type { TasksRepository } from '../db/tasks.repository'
import type { GuestsRepository } from '../db/guests.repository'
import type { MachinesRepository } from '../db/machines.repository'
import { ARTIFACTS, type StorageLayout } from '../storage/layout'
import type { TimelineStage } from '../../shared/api/schemas'
import type { ConsoleEntry, ConsoleHub } from './console-hub'

/**
 * The runs in their guest phase, by task: what Extend and Finish now act on. The scheduler's
 * RunControls (scheduler/run-clock.ts) is one; said here by shape because the scheduler imports
 * this folder (a run opens its console), and folders do not import each other both ways.
 */
export interface RunControlsView {
  get(task: number): {
    clock: {
      readonly startedAt: number
      readonly endsAt: number
      readonly extendedBy: number
      readonly finishing: boolean
      extend(seconds: number): number | string
      remainingMs(): number
      finishNow(): boolean
    }
    timeline(stage: TimelineStage, message: string): void
  } | undefined
}

export interface ConsoleServiceDeps {
  hub: ConsoleHub
  runs: RunControlsView
  tasks: TasksRepository
  guests: GuestsRepository
  machines: MachinesRepository
  layout: StorageLayout
  recordCap: number
}

const conflict = (message: string): ApiError => new ApiError(409, message, ErrorCodes.TASK_STATE)

export class ConsoleService {
  constructor(private readonly d: ConsoleServiceDeps) {}

  /** Why the task's console is not open, or its entry. */
  private taskConsole(id: number): { entry: ConsoleEntry } | { reason: string; machine: string | null; driver: string | null } {
    const task = this.d.tasks.get(id)
    if (!task) throw taskNotFound()
    const entry = this.d.hub.byTask(id)
    if (entry) return { entry }
    const guest = this.d.guests.latestOf(id)
    const driver = guest?.manager ?? null
    const why = driver !== null ? NO_CONSOLE[driver as DriverKind] : undefined
    if (why !== undefined) return { reason: why, machine: guest?.name ?? null, driver }
    if (task.status !== 'running') return { reason: `the task is ${task.status}: a console is open only while the task's analysis runs`, machine: guest?.name ?? null, driver }
    return { reason: 'the machine is starting: its console opens once it runs', machine: guest?.name ?? null, driver }
  }

  state(id: number): ConsoleState {
    const c = this.taskConsole(id)
    const run = this.d.runs.get(id)
    const task = this.d.tasks.get(id)
    const interactiveOption = /(^|,)\s*interactive\s*=\s*(1|yes|true|on)\s*(,|$)/i.test(task?.options ?? '')
    const common = {
      task: id, interactive_option: interactiveOption, now: Date.now(),
      started_at: run ? run.clock.startedAt : null, ends_at: run ? run.clock.endsAt : null,
      extended_by: run?.clock.extendedBy ?? 0, finishing: run?.clock.finishing ?? false,
      recording_cap: this.d.recordCap
    }
    if ('reason' in c) {
      return { ...common, available: false, reason: c.reason, machine: c.machine, driver: c.driver, interactive_taken: false, sessions: [], recording_bytes: this.recordings(id).total_bytes }
    }
    const refusal = c.entry.refusal()
    return {
      ...common, available: refusal === null, reason: refusal, machine: c.entry.target.machine,
      driver: this.d.machines.findByName(c.entry.target.machine)?.driver ?? null,
      interactive_taken: c.entry.interactiveTaken, sessions: c.entry.info(), recording_bytes: c.entry.budget.used
    }
  }

  /** The console a websocket may join, or the refusal (404, 409). */
  acceptTask(id: number): ConsoleEntry {
    const c = this.taskConsole(id)
    if ('reason' in c) throw conflict(c.reason)
    const refusal = c.entry.refusal()
    if (refusal !== null) throw conflict(refusal)
    return c.entry
  }

  /** A machine's console: a running task's, or one that prepare mode opened. */
  acceptMachine(name: string): ConsoleEntry {
    const m = this.d.machines.findByName(name)
    if (!m) throw notFound(`Machine not found: no configured machine is named ${JSON.stringify(name.slice(0, 100))}`, ErrorCodes.MACHINE_NOT_FOUND)
    const entry = this.d.hub.byMachine(name)
    if (!entry) throw conflict(NO_CONSOLE[m.driver] ?? `machine ${name} has no console open: it is not running an analysis (or being prepared)`)
    const refusal = entry.refusal()
    if (refusal !== null) throw conflict(refusal)
    return entry
  }

  machineState(name: string): { available: boolean; reason: string | null; task: number | null; interactive_taken: boolean; sessions: ReturnType<ConsoleEntry['info']> } {
    try {
      const e = this.acceptMachine(name)
      return { available: true, reason: null, task: e.target.task, interactive_taken: e.interactiveTaken, sessions: e.info() }
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 409) return { available: false, reason: err.message, task: null, interactive_taken: false, sessions: [] }
      throw err
    }
  }

  private control(id: number) {
    const task = this.d.tasks.get(id)
    if (!task) throw taskNotFound()
    const run = this.d.runs.get(id)
    if (!run) throw conflict(task.status === 'running' ? 'the analysis has not started yet (the machine is starting): try again in a moment' : `the task is ${task.status}: only a running analysis can be extended or finished`)
    return run
  }

  extend(id: number, seconds: number): RunEnd {
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 3600) throw badRequest('seconds', `a whole number of seconds from 1 to 3600 (got '${seconds}')`)
    const run = this.control(id)
    const r = run.clock.extend(seconds)
    if (typeof r === 'string') throw conflict(r)
    run.timeline('extended', `+${seconds} s from the Live tab: the analysis now ends at ${new Date(r).toISOString()}`)
    return { ends_at: r, remaining: Math.round(run.clock.remainingMs() / 1000), finishing: false }
  }

  finish(id: number): RunEnd {
    const run = this.control(id)
    if (run.clock.finishNow()) run.timeline('finish_requested', 'Finish now from the Live tab')
    return { ends_at: run.clock.endsAt, remaining: 0, finishing: true }
  }

  recordings(id: number): RecordingList {
    if (!this.d.tasks.exists(id)) throw taskNotFound()
    const dir = this.d.layout.artifact(id, ARTIFACTS.console)
    const recordings: RecordingList['recordings'] = []
    let names: string[] = []
    try {
      names = readdirSync(dir).filter(isRecordingName).sort()
    } catch {
      /* none */
    }
    for (const name of names) {
      try {
        const st = statSync(this.d.layout.artifact(id, ARTIFACTS.console, name))
        if (st.isFile()) recordings.push({ name, bytes: st.size, session: Number.parseInt(name, 10) })
      } catch {
        /* removed meanwhile */
      }
    }
    return { recordings, total_bytes: recordings.reduce((a, r) => a + r.bytes, 0) }
  }

  /** A recording's path, for the file route (a name that is not one is a 404, as is a link planted there). */
  recordingPath(id: number, name: string): string {
    if (!this.d.tasks.exists(id)) throw taskNotFound()
    if (!isRecordingName(name)) throw notFound('No such recording (names are NNNN.vncrec)', ErrorCodes.FILE_NOT_FOUND)
    const p = this.d.layout.artifact(id, ARTIFACTS.console, name)
    let ok: boolean
    try {
      ok = lstatSync(p).isFile() // a link is not a recording
    } catch {
      ok = false
    }
    if (!ok) throw notFound('No such recording', ErrorCodes.FILE_NOT_FOUND)
    return p
  }
}
