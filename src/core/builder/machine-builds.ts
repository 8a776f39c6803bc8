// The machine builder as a service for the API and the UI: builds run in the background, one at a
// time per data folder, each a job with an id, its progress events (build-progress.ts) and, once
// over, its result or its error. A route starts a job and answers 202 with it; the Machines page
// follows its events (subscribe, or read `events` from a `seq` on). The CLI calls
// createLinuxMachines directly and prints the same events. docs/machines.md, "The builder service".
import { EventEmitter } from 'node:events'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { StorageLayout } from '../storage/layout'
import type { BuildEvent } from './build-progress'
import { createLinuxMachines, BuildError, type LinuxBuildContext, type LinuxBuildResult } from './linux-machines'
import { BuildInputError, checkLinuxRequest, type LinuxMachinesRequest } from './linux-plan'

export type BuildState = 'running' | 'succeeded' | 'failed'

/** A second build while one runs: the route's 409. */
export class BuildBusyError extends BuildInputError {
  constructor() {
    super('name', 'a machine build is running already; wait for it to end')
  }
}

export interface BuildJob {
  id: number
  /** `rebuild`: an existing machine deleted, then made again under its name. */
  kind: 'linux' | 'rebuild'
  request: LinuxMachinesRequest
  state: BuildState
  /** ISO times. */
  started: string
  ended: string | null
  /** Every event so far but `output` lines beyond the last OUTPUT_KEPT (a build prints thousands). */
  events: BuildEvent[]
  result: LinuxBuildResult | null
  /** Why it failed, in words; `field` when the request itself was refused (a form shows it there). */
  error: { message: string; step: string | null; field: string | null; leftBehind: string[] } | null
}

export interface MachineBuildsEvents {
  /** A job's new event. */
  progress: [jobId: number, event: BuildEvent]
  /** A job ended (succeeded or failed); `job` as `get` returns it. */
  ended: [job: BuildJob]
}

const OUTPUT_KEPT = 200
const JOBS_KEPT = 20

export class MachineBuilds extends EventEmitter<MachineBuildsEvents> {
  private readonly jobs = new Map<number, BuildJob>()
  private next = 1
  private running: Promise<unknown> | null = null
  private readonly abort = new AbortController()

  /** `context`: where to build (the service's data folder, the agent); called when a job starts. */
  constructor(private readonly context: () => Omit<LinuxBuildContext, 'signal'>) {
    super()
    this.setMaxListeners(0)
  }

  /**
   * Starts making Linux machines; returns the job at once. Refuses (BuildInputError, naming the
   * field) a bad request, and a second build while one runs.
   */
  startLinux(request: LinuxMachinesRequest, o: { kind?: BuildJob['kind']; before?: (ctx: Omit<LinuxBuildContext, 'signal'>, note: (m: string) => void) => Promise<void> } = {}): BuildJob {
    checkLinuxRequest(request)
    if (this.running) throw new BuildBusyError()
    const job: BuildJob = {
      id: this.next++, kind: o.kind ?? 'linux', request: structuredClone(request), state: 'running', started: new Date().toISOString(), ended: null,
      events: [], result: null, error: null
    }
    this.jobs.set(job.id, job)
    for (const old of [...this.jobs.keys()].slice(0, Math.max(0, this.jobs.size - JOBS_KEPT))) this.jobs.delete(old)
    const onEvent = (e: BuildEvent): void => {
      job.events.push(e)
      if (e.kind === 'output' && job.events.filter((x) => x.kind === 'output').length > OUTPUT_KEPT) {
        job.events.splice(job.events.findIndex((x) => x.kind === 'output'), 1)
      }
      this.emit('progress', job.id, e)
    }
    const done = (state: BuildState): void => {
      job.state = state
      job.ended = new Date().toISOString()
      this.running = null
      this.emit('ended', job)
    }
    const context = this.context()
    // What runs first (a rebuild's delete) says so in notes numbered before the build's own events.
    let before = 0
    const first = o.before
      ? o.before(context, (message) => onEvent({ seq: ++before, elapsedMs: Date.now() - Date.parse(job.started), step: 'check', kind: 'note', message }))
      : Promise.resolve()
    this.running = first.then(() => createLinuxMachines(request, { ...context, signal: this.abort.signal }, (e) => onEvent({ ...e, seq: e.seq + before }))).then(
      (result) => {
        job.result = result
        done('succeeded')
      },
      (err: unknown) => {
        job.error = {
          message: (err as Error).message,
          step: err instanceof BuildError ? err.step : null,
          field: err instanceof BuildInputError ? err.field : null,
          leftBehind: err instanceof BuildError ? err.leftBehind : []
        }
        done('failed')
      })
    return job
  }

  /** A build is running. */
  busy(): boolean {
    return this.running !== null
  }

  get(id: number): BuildJob | undefined {
    return this.jobs.get(id)
  }

  list(): BuildJob[] {
    return [...this.jobs.values()]
  }

  /** Resolves when `id` has ended (at once if it has). */
  async wait(id: number): Promise<BuildJob> {
    const job = this.jobs.get(id)
    if (!job) throw new Error(`no build ${id}`)
    if (job.state !== 'running') return job
    return new Promise((resolve) => {
      const on = (j: BuildJob): void => {
        if (j.id !== id) return
        this.off('ended', on)
        resolve(j)
      }
      this.on('ended', on)
    })
  }

  /** Interrupts a running build (it removes what it made) and waits for it: the service's stop(). */
  async stop(): Promise<void> {
    this.abort.abort()
    await this.running?.catch(() => undefined)
  }
}

/** The Linux agent `npm run build:agent` makes, next to the bundle (out/agent) or under the current folder. */
export function defaultLinuxAgent(): string {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const candidates = [path.join(here, '..', 'agent', 'aviary-agent-linux-x64'), path.resolve('out/agent/aviary-agent-linux-x64')]
  return candidates.find((p) => existsSync(p)) ?? candidates[0]!
}

/** The builds of a service's data folder, with the agent of this install: what the service holds for its routes. */
export function machineBuildsFor(layout: StorageLayout, agentFile = defaultLinuxAgent()): MachineBuilds {
  return new MachineBuilds(() => ({ layout, agentFile }))
}
