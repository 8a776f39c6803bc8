// What the routes may use: services and read-only repositories, never drivers.
import type { SubmitService } from '../submit/submit.service'
import type { TasksService } from '../tasks/tasks.service'
import type { ResultsService } from '../results/results.service'
import type { StatusService } from '../status/status.service'
import type { SampleStore } from '../samples/sample-store'
import type { SamplesRepository } from '../db/samples.repository'
import type { MachinesRepository } from '../db/machines.repository'
import type { TasksRepository } from '../db/tasks.repository'
import type { TimelineRepository } from '../db/timeline.repository'
import type { EventBus } from '../events/event-bus'
import type { TaskSearch } from '../db/task-search'
import type { AviaryStatsService } from '../status/aviary-stats.service'
import type { Fleet } from '../fleet/fleet.service'
import type { ConnectionsService } from '../connections/connections.service'
import type { RoutingSettings } from '../network/routing-config'
import type { RetentionService } from '../retention/retention.service'
import type { ConsoleService } from '../console/console.service'
import type { MachineBuilds } from '../builder/machine-builds'
import type { MachineUpkeep } from '../builder/upkeep'

export interface ApiContext {
  version: string
  store: SampleStore
  submit: SubmitService
  tasks: TasksService
  results: ResultsService
  status: StatusService
  samples: SamplesRepository
  machines: MachinesRepository
  taskRows: TasksRepository
  timeline: TimelineRepository
  bus: EventBus
  /** Saved remote instances and dispatchers (and the proxy to them). */
  connections: ConnectionsService
  /** The UI's task list: filters, search, paging (GET /aviary/tasks). */
  taskSearch: TaskSearch
  aviaryStats: AviaryStatsService
  /** Machine controls and the doctor, from the running engine; null while it is off. */
  readonly fleet: Fleet | null
  /** Machine builds in the background (/aviary/machines/builds). */
  builds: MachineBuilds
  /** Disk use, delete, leftovers of the machines the builder made. */
  upkeep: MachineUpkeep
  /** Retention rules, their dry run and runs (/aviary/retention). */
  retention: RetentionService
  /** <data>/suricata: the IDS's settings and imported rule sets (/aviary/ids/rules); absent: no such routes. */
  idsDir?: string
  /** The routes of machines.json now; null: this host routes nothing. */
  routing(): RoutingSettings | null
  /** Live consoles of running machines, Extend and Finish now, console recordings. */
  consoles: ConsoleService
  /** Serve consoles to other hosts than this one (`--console-remote`). */
  consoleRemote: boolean
  /** Stops the service (GET /exit in debug mode). */
  requestExit: () => void
}
