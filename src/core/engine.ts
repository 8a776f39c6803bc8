// The engine: what makes submitted tasks run. It owns the scheduler, the runs, the result server
// and the machinery drivers, recovers what a crash left behind, and follows machines.json (a
// change is picked up without a restart, so a task waiting for a machine starts once one is
// configured). The service (service.ts) starts it after the database and before the API listens,
// and stops it first, so running analyses are interrupted cleanly and their tasks queued again.
import { existsSync, unwatchFile, watchFile } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { rooter, rooterOwner } from './network/rooter-client'
import { endLeftoverProxies } from './network/mitm'
import type { RoutingSettings } from './network/routing-config'
import type { Db } from './db/database'
import type { StorageLayout } from './storage/layout'
import type { TasksRepository } from './db/tasks.repository'
import type { MachinesRepository } from './db/machines.repository'
import type { SamplesRepository } from './db/samples.repository'
import { QueueRepository } from './db/queue.repository'
import { GuestsRepository } from './db/guests.repository'
import type { TimelineRepository } from './db/timeline.repository'
import type { EventBus } from './events/event-bus'
import { loadFleetConfig, type EngineSettings } from './machinery/machines-config'
import { createDrivers, driverSettingsChanged, type DriverSet } from './machinery/drivers'
import { ResultServer } from './resultserver/result-server'
import { ConsoleHub, DEFAULT_RECORD_CAP } from './console/console-hub'
import { RunControls } from './scheduler/run-clock'
import { AnalysisRunner } from './scheduler/analysis-runner'
import { Scheduler } from './scheduler/scheduler'
import { recoverAfterRestart } from './scheduler/recovery'
import { Processor } from './processing/processor'
import type { FileTypeDetector } from './hashing/magic'
import type { FileHashing } from './hashing/file-digest'
import { FleetService } from './fleet/fleet.service'
import { MachineLocks } from './db/machine-locks'
import { TaskScores } from './db/task-search'
import { SearchIndex } from './search/search-index'
import { SearchBackfill } from './search/backfill'

export interface EngineLog {
  info(msg: string): void
  warn(msg: string): void
  error(msg: string): void
}

export interface EngineOptions {
  db: Db
  layout: StorageLayout
  tasks: TasksRepository
  machines: MachinesRepository
  samples: SamplesRepository
  timeline: TimelineRepository
  bus: EventBus
  log: EngineLog
  /** Overrides machines.json's max_machines (`--max-machines`). */
  maxMachines?: number | undefined
  /** Aviary's analyzer folder; default: found next to the running bundle. */
  analyzerDir?: string | undefined
  /** How often machines.json is checked for changes (ms). */
  configPollMs?: number
  /** file(1) for processing (the service's detector). */
  detectType: FileTypeDetector
  /** The service's hashing workers, for processing. */
  hashing?: FileHashing
  aviaryVersion: string
  /** The live consoles the API serves (shared with it); default: the engine's own. */
  consoles?: ConsoleHub
  runControls?: RunControls
  /** The bytes one run's console recordings may take together (default DEFAULT_RECORD_CAP). */
  consoleRecordCap?: number | undefined
}

interface Running {
  processor: Processor
  backfill: SearchBackfill
  scheduler: Scheduler
  runner: AnalysisRunner
  resultServer: ResultServer
}

export class Engine {
  private settings: EngineSettings | null = null
  private drivers: DriverSet | null = null
  /** Driver sets replaced by a settings change, closed when the engine stops. */
  private readonly retired: DriverSet[] = []
  private running: Running | null = null
  private readonly onConfigChange = () => this.reloadConfig()
  /** Machine controls for the API (start, stop, revert, screenshot, doctor) while the engine runs. */
  readonly fleet: FleetService

  constructor(private readonly o: EngineOptions) {
    this.fleet = new FleetService({
      machines: o.machines, locks: new MachineLocks(o.db), machinesFile: o.layout.machinesConfig,
      kvmUri: () => this.settings?.kvm.uri ?? 'qemu:///system',
      machineDir: (name) => o.layout.machineDir(name),
      driver: (kind) => this.drivers!.get(kind),
      running: () => this.running !== null,
      released: () => this.running?.scheduler.kick(),
      // Prepare mode's console: not recorded (no task owns it, and nothing is analysed).
      openConsole: (machine, endpoint) => this.consoles.register({ task: null, machine, endpoint, recordDir: null, recordCap: 0 })
    })
  }

  /** The live consoles: the API's (shared with it) or, without one, the engine's own. */
  private get consoles(): ConsoleHub {
    this.ownConsoles ??= this.o.consoles ?? new ConsoleHub()
    return this.ownConsoles
  }

  private ownConsoles: ConsoleHub | undefined

  /** Loads machines.json (a bad one throws: the service does not start on a fleet it cannot read). */
  start(): void {
    if (this.running) return
    const o = this.o
    const fleet = loadFleetConfig(o.layout.machinesConfig)
    o.machines.sync(fleet.machines)
    this.settings = fleet.settings
    this.drivers = createDrivers(fleet.settings)
    const queue = new QueueRepository(o.db)
    const guests = new GuestsRepository(o.db)
    const recovered = recoverAfterRestart({ queue, machines: o.machines, guests, timeline: o.timeline })
    // Machines in prepare mode when the service stopped stay out of the scheduler's reach.
    this.fleet.restorePrepared()
    if (recovered.requeued.length) o.log.warn(`tasks queued again after an unclean stop: ${recovered.requeued.join(', ')}`)
    if (recovered.failed.length) o.log.error(`tasks failed after unclean stops: ${recovered.failed.join(', ')}`)
    // Decrypting proxies a killed service left running go before any run starts one.
    for (const line of endLeftoverProxies(o.layout.mitmConf)) o.log.warn(line)
    const settings = () => this.settings!
    // What a crashed run of this service left in the rooter's table goes before any run turns a
    // route on; other services' grants stay (they are not this service's to clear).
    const routing = fleet.settings.routing
    const routesReady = routing === null ? Promise.resolve() : rooter.flush(routing.rooter, rooterOwner(o.layout.root)).then(
      (n) => o.log.info(`routes: the rooter holds no grant of this service${n > 0 ? ` (${n} left by an earlier run removed)` : ''}`),
      (err: Error) => o.log.warn(`routes: could not clear what an earlier run left: ${err.message}`))
    const rs = settings().resultserver
    const resultServer = new ResultServer({
      limits: { uploadMaxSize: rs.uploadMaxSize, taskMaxSize: rs.taskMaxSize },
      log: { info: (m) => o.log.info(`result server: ${m}`), warn: (m) => o.log.warn(`result server: ${m}`) }
    })
    let scheduler: Scheduler | null = null
    const runner = new AnalysisRunner({
      layout: o.layout, tasks: o.tasks, queue, machines: o.machines, guests, timeline: o.timeline, samples: o.samples,
      resultServer, settings, analyzerDir: o.analyzerDir ?? defaultAnalyzerDir(), routesReady,
      driver: (kind) => this.drivers!.get(kind),
      log: o.log,
      consoles: this.consoles,
      runControls: o.runControls ?? new RunControls(),
      consoleRecordCap: o.consoleRecordCap ?? DEFAULT_RECORD_CAP
    }, () => scheduler?.kick())
    scheduler = new Scheduler({
      queue, machines: o.machines, timeline: o.timeline, bus: o.bus,
      maxMachines: () => o.maxMachines ?? settings().maxMachines,
      running: () => runner.running,
      launch: (taskId, machine) => runner.launch(taskId, machine),
      log: o.log
    })
    // Finished analyses become reports; the user's YARA rules live in <data>/yara.
    const yaraDir = o.layout.yaraRules
    const processor = new Processor({
      layout: o.layout, queue, tasks: o.tasks, samples: o.samples, timeline: o.timeline, bus: o.bus,
      detectType: o.detectType, ...(o.hashing ? { hashing: o.hashing } : {}), aviaryVersion: o.aviaryVersion, log: o.log, scores: new TaskScores(o.db), searchIndex: new SearchIndex(o.db),
      yaraRules: () => (existsSync(yaraDir) ? yaraDir : null), suricataDir: o.layout.suricata
    })
    // Reports written before the search index are indexed in the background (search/backfill.ts).
    const backfill = new SearchBackfill({ db: o.db, layout: o.layout, log: o.log })
    this.running = { processor, backfill, scheduler, runner, resultServer }
    // Machines a crashed run left on are powered off before anything uses them again.
    for (const m of recovered.wereLocked) {
      const driver = this.drivers.get(m.driver)
      if (!driver.capabilities.power) continue
      driver.stop({ ...m, options: JSON.parse(m.options) as string[] })
        .catch((err: Error) => o.log.warn(`could not stop ${m.name} after an unclean stop: ${err.message}`))
    }
    watchFile(o.layout.machinesConfig, { interval: o.configPollMs ?? 1000 }, this.onConfigChange)
    scheduler.start()
    processor.start()
    backfill.start()
  }

  /** The routes of machines.json now (null: nothing is routed), for submissions. */
  routing(): RoutingSettings | null {
    return this.settings?.routing ?? null
  }

  /**
   * Looks for completed tasks to process now. Changes made through this service wake the
   * processor by themselves; this is for tasks another process (or a test) marked completed.
   */
  processPending(): void {
    this.running?.processor.kick()
  }

  /** Reads machines.json again; a bad file is reported and the previous fleet kept. */
  reloadConfig(): boolean {
    if (!this.running) return false
    let fleet
    try {
      fleet = loadFleetConfig(this.o.layout.machinesConfig)
    } catch (err) {
      this.o.log.error(`machines.json changed but cannot be used, keeping the previous fleet: ${(err as Error).message}`)
      return false
    }
    this.o.machines.sync(fleet.machines)
    const old = this.settings!
    this.settings = fleet.settings
    if (driverSettingsChanged(old, fleet.settings)) {
      this.retired.push(this.drivers!)
      this.drivers = createDrivers(fleet.settings)
    }
    this.o.log.info(`machines.json reloaded: ${fleet.machines.length} machines`)
    this.running.scheduler.fleetChanged()
    return true
  }

  /** Interrupts running analyses (their tasks are queued again), then closes everything. */
  async stop(): Promise<void> {
    const r = this.running
    if (!r) return
    this.running = null
    unwatchFile(this.o.layout.machinesConfig, this.onConfigChange)
    r.scheduler.stop()
    await this.fleet.idle()
    this.fleet.closeConsoles('the service is stopping')
    await r.runner.stop()
    await r.processor.stop()
    await r.backfill.stop()
    await r.resultServer.stop()
    await Promise.all([this.drivers, ...this.retired.splice(0)].map((d) => d?.close()))
    this.drivers = null
  }
}

/** Aviary's analyzer is built next to the bundle (out/cli/analyzer), or to the Electron main's. */
export function defaultAnalyzerDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const candidates = [path.join(here, 'analyzer'), path.join(here, '..', 'cli', 'analyzer'), path.resolve('out/cli/analyzer')]
  return candidates.find((dir) => existsSync(path.join(dir, 'analyzer.cjs'))) ?? candidates[0]!
}
