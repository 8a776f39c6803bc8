// What one analysis run needs from the engine: repositories, the result server, the drivers and
// the settings of the moment (machines.json may change between runs).
import type { StorageLayout } from '../storage/layout'
import type { TasksRepository } from '../db/tasks.repository'
import type { QueueRepository } from '../db/queue.repository'
import type { MachinesRepository } from '../db/machines.repository'
import type { GuestsRepository } from '../db/guests.repository'
import type { TimelineRepository } from '../db/timeline.repository'
import type { SamplesRepository } from '../db/samples.repository'
import type { DriverKind } from '../../shared/api/drivers'
import type { EngineSettings } from '../machinery/machines-config'
import type { MachineDriver } from '../machinery/driver'
import type { ResultServer } from '../resultserver/result-server'
import type { ConsoleHub } from '../console/console-hub'
import type { RunControls } from './run-clock'

export interface RunnerDeps {
  layout: StorageLayout
  tasks: TasksRepository
  queue: QueueRepository
  machines: MachinesRepository
  guests: GuestsRepository
  timeline: TimelineRepository
  samples: SamplesRepository
  resultServer: ResultServer
  driver(kind: DriverKind): MachineDriver
  settings(): EngineSettings
  /** Aviary's analyzer folder (analyzer.cjs), for platforms without an analyzer in machines.json. */
  analyzerDir: string
  /** Resolves once the routes a previous process left are removed (the engine's start). */
  routesReady: Promise<void>
  log: { info(msg: string): void; error(msg: string): void }
  /** Live consoles: a run opens its machine's when the machine runs, and closes it at teardown. */
  consoles: ConsoleHub
  /** The runs' clocks, which the API moves (Extend, Finish now). */
  runControls: RunControls
  /** The bytes one run's console recordings may take together. */
  consoleRecordCap: number
}
