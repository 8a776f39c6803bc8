// The composition root of the headless service: storage, database, services and the HTTP API,
// started and stopped in order. `aviary serve` and the Electron main process both use it.
import { readdir, rm } from 'node:fs/promises'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { createLayout, type StorageLayout } from './storage/layout'
import { lockDataDir } from './storage/data-lock'
import { openDatabase, type Db } from './db/database'
import { SamplesRepository } from './db/samples.repository'
import { TasksRepository } from './db/tasks.repository'
import { SubmitsRepository } from './db/submits.repository'
import { MachinesRepository } from './db/machines.repository'
import { TimelineRepository } from './db/timeline.repository'
import { EventBus } from './events/event-bus'
import { Engine } from './engine'
import type { RoutingSettings } from './network/routing-config'
import { loadFleetConfig } from './machinery/machines-config'
import { HashPool } from './hashing/hash-pool'
import { createFileTypeDetector } from './hashing/magic'
import { SampleStore } from './samples/sample-store'
import { SubmitService } from './submit/submit.service'
import { TasksService } from './tasks/tasks.service'
import { ResultsService } from './results/results.service'
import { StatusService } from './status/status.service'
import { AviaryStatsService } from './status/aviary-stats.service'
import { TaskSearch } from './db/task-search'
import { TaskStats } from './db/task-stats'
import { buildApp, type App } from './api/app'
import { defaultUiDir } from './api/ui-static'
import { ConnectionsRepository } from './connections/connections.repository'
import { ConnectionsService } from './connections/connections.service'
import { DEFAULT_HOST, DEFAULT_MAX_UPLOAD, DEFAULT_PORT, VERSION } from './config'
import type { UnpackLimits } from './submit/unpack'
import { RetentionService } from './retention/retention.service'
import { machineBuildsFor, type MachineBuilds } from './builder/machine-builds'
import { upkeepFor } from './builder/upkeep'
import { RetentionSchedule, type ScheduleOptions } from './retention/retention-schedule'
import { ConsoleHub, DEFAULT_RECORD_CAP } from './console/console-hub'
import { ConsoleService } from './console/console.service'
import { RunControls } from './scheduler/run-clock'
import { GuestsRepository } from './db/guests.repository'
import { closeGracefully } from '../shared/close-server'

export interface ServiceOptions {
  dataDir: string
  host?: string
  /** 0 picks a free port */
  port?: number
  apiToken?: string | undefined
  debug?: boolean
  maxUploadBytes?: number
  logLevel?: string
  /** Path of the bundled hashing worker; null hashes inline; default: next to the bundle. */
  hashWorker?: string | null
  allowedOrigins?: string[]
  unpackLimits?: Partial<UnpackLimits>
  /** Called when a client asks the service to stop (GET /exit in debug mode). */
  onExitRequest?: () => void
  /** Machines running at once (overrides machines.json's max_machines). */
  maxMachines?: number
  /** Aviary's analyzer folder (default: next to the bundle). */
  analyzerDir?: string
  /** How often machines.json is checked for changes (ms). */
  configPollMs?: number
  /**
   * Run analyses (default true). Off, the instance serves the API and the stored results only:
   * tasks wait as `pending` (the API tests use this to own every task state themselves).
   */
  engine?: boolean
  /** The built UI served at `/` (default: out/renderer next to the bundle); null serves none. */
  uiDir?: string | null
  /** Serve the live console to hosts other than this one (default: loopback only). */
  consoleRemote?: boolean
  /** The bytes one run's console recordings may take together (default 256 MiB). */
  consoleRecordCap?: number
  /** The retention schedule's clock and how often it looks (tests: a moved clock, a few ms). */
  retentionSchedule?: Pick<ScheduleOptions, 'checkMs' | 'now'>
}

interface Running {
  app: App
  engine: Engine | null
  db: Db
  bus: EventBus
  pool: HashPool
  retention: RetentionService
  builds: MachineBuilds
  schedule: RetentionSchedule
  unlock: () => void
  url: string
}

export class AviaryService {
  readonly layout: StorageLayout
  private running: Running | null = null
  private consoleHub: ConsoleHub | null = null
  private starting: Promise<{ url: string }> | null = null

  constructor(private readonly opts: ServiceOptions) {
    this.layout = createLayout(opts.dataDir)
  }

  get url(): string | null {
    return this.running?.url ?? null
  }

  /** The running engine (tests reload machines.json through it instead of waiting for the poll). */
  get engine(): Engine | null {
    return this.running?.engine ?? null
  }

  /**
   * The live consoles (src/core/console/console-hub.ts): runs register their machine's; prepare
   * mode registers a machine outside any task here (`register({ task: null, machine, ... })`),
   * and the routes keyed by machine serve it.
   */
  get consoles(): ConsoleHub | null {
    return this.running ? this.consoleHub : null
  }

  /** Task and machine events of the running service (the desktop shell notifies from them). */
  get events(): EventBus | null {
    return this.running?.bus ?? null
  }

  start(): Promise<{ url: string }> {
    if (this.running) return Promise.resolve({ url: this.running.url })
    this.starting ??= this.doStart().finally(() => { this.starting = null })
    return this.starting
  }

  private async doStart(): Promise<{ url: string }> {
    const layout = this.layout
    layout.ensure()
    const unlock = lockDataDir(layout.root)
    let db: Db | null = null
    let engine: Engine | null = null
    /** The routes when no engine runs (they are read once). */
    let staticRouting: RoutingSettings | null = null
    const pool = new HashPool(this.opts.hashWorker)
    let retention: RetentionService | null = null
    let builds: MachineBuilds | null = null
    try {
      await cleanTmp(layout.tmp)
      db = openDatabase(layout.database)
      const machines = new MachinesRepository(db)
      const timeline = new TimelineRepository(db)
      const bus = new EventBus(db, machines)
      const samples = new SamplesRepository(db)
      const tasks = new TasksRepository(db)
      const detectType = createFileTypeDetector()
      const store = new SampleStore(layout, samples, pool, detectType)
      const maxUploadBytes = this.opts.maxUploadBytes ?? DEFAULT_MAX_UPLOAD
      const tasksService = new TasksService(tasks, layout)
      // Retention logs to the app's log, which exists once the app is built.
      let appLog: App['log'] | null = null
      const log = { info: (m: string) => appLog?.info(m), warn: (m: string) => appLog?.warn(m) }
      const consoleHub = new ConsoleHub()
      const runControls = new RunControls()
      const consoleRecordCap = this.opts.consoleRecordCap ?? DEFAULT_RECORD_CAP
      this.consoleHub = consoleHub
      builds = machineBuildsFor(layout)
      retention = new RetentionService({ db, layout, tasks: tasksService, log, now: this.opts.retentionSchedule?.now })
      const app = await buildApp(
        {
          version: VERSION,
          store,
          submit: new SubmitService({
            tasks, samples, machines, store, layout, submits: new SubmitsRepository(db), unpackLimits: this.opts.unpackLimits,
            routing: () => (engine ? engine.routing() : staticRouting)
          }),
          tasks: tasksService,
          results: new ResultsService(layout, tasks),
          status: new StatusService(tasks, machines, layout, VERSION),
          samples,
          machines,
          taskRows: tasks,
          timeline,
          bus,
          connections: new ConnectionsService(new ConnectionsRepository(db)),
          taskSearch: new TaskSearch(db),
          aviaryStats: new AviaryStatsService(new TaskStats(db), machines, layout.root),
          // The engine is made after the app: read when a request comes.
          get fleet() { return engine?.fleet ?? null },
          retention,
          consoles: new ConsoleService({ hub: consoleHub, runs: runControls, tasks, guests: new GuestsRepository(db), machines, layout, recordCap: consoleRecordCap }),
          consoleRemote: this.opts.consoleRemote ?? false,
          idsDir: layout.suricata,
          builds,
          upkeep: upkeepFor(layout),
          routing: () => (engine ? engine.routing() : staticRouting),
          requestExit: () => (this.opts.onExitRequest ?? (() => void this.stop()))()
        },
        {
          logLevel: this.opts.logLevel ?? 'info',
          maxUploadBytes,
          apiToken: this.opts.apiToken,
          debug: this.opts.debug ?? false,
          allowedOrigins: this.opts.allowedOrigins ?? [],
          uiDir: this.opts.uiDir === undefined ? defaultUiDir() : this.opts.uiDir
        }
      )
      if (this.opts.engine ?? true) {
        engine = new Engine({
          db, layout, tasks, machines, samples, timeline, bus, detectType, hashing: pool, aviaryVersion: VERSION,
          log: { info: (m) => app.log.info(m), warn: (m) => app.log.warn(m), error: (m) => app.log.error(m) },
          maxMachines: this.opts.maxMachines,
          analyzerDir: this.opts.analyzerDir,
          consoles: consoleHub, runControls, consoleRecordCap,
          ...(this.opts.configPollMs ? { configPollMs: this.opts.configPollMs } : {})
        })
        // Before the API listens: tasks a crash left running are recovered before anyone asks.
        engine.start()
      } else {
        const fleet = loadFleetConfig(layout.machinesConfig)
        machines.sync(fleet.machines)
        staticRouting = fleet.settings.routing
      }
      await app.listen({ host: this.opts.host ?? DEFAULT_HOST, port: this.opts.port ?? DEFAULT_PORT })
      appLog = app.log
      // Retention's schedule looks every minute; it runs only when retention.json turns it on.
      const schedule = new RetentionSchedule(retention, { ...this.opts.retentionSchedule, log })
      schedule.start()
      const address = app.server.address() as AddressInfo
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
      this.running = { app, engine, db, bus, pool, retention, builds, schedule, unlock, url: `http://${host}:${address.port}` }
      return { url: this.running.url }
    } catch (err) {
      await retention?.stop()
      await builds?.stop()
      await engine?.stop()
      await pool.stop()
      db?.close()
      unlock()
      throw err
    }
  }

  /** Stops in reverse order of start; safe to call twice. */
  async stop(): Promise<void> {
    if (this.starting) await this.starting.catch(() => undefined)
    const r = this.running
    if (!r) return
    this.running = null
    // A retention run under way ends after the task it is deleting; then the engine stops.
    await r.schedule.stop()
    await r.retention.stop()
    // A machine build under way is interrupted; it removes what it made.
    await r.builds.stop()
    await r.engine?.stop()
    // Consoles no run holds (prepare mode's) end too; the runs closed their own.
    this.consoleHub?.closeAll('the service is stopping')
    await closeGracefully(r.app)
    await r.pool.stop()
    r.bus.close()
    r.db.close()
    r.unlock()
  }
}

/** Uploads and unpack scratch left by a crash are garbage: nothing refers to them. */
async function cleanTmp(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (name.startsWith('upload-') || name.startsWith('unpack-')) {
      await rm(path.join(dir, name), { recursive: true, force: true })
    }
  }
}
