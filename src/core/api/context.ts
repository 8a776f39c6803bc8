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
  /** Stops the service (GET /exit in debug mode). */
  requestExit: () => void
}
