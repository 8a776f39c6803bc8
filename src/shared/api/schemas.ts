// The analysis API's objects (a task, a sample, a machine, the status…), written once: the routes
// declare them as their response schemas, the OpenAPI description is generated from them, and
// clients get their types. They do not serialize: the app sends JSON.stringify's output (tasks come
// pre-serialized from the database), and src/core/api/client-answers.test.ts checks that every
// answer has exactly the shape its schema says. The answers that wrap them are in responses.ts, request schemas in requests.ts.
import { Type, type Static, type TSchema } from 'typebox'
import { DriverKindSchema } from './drivers'

const nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [(schema as { type?: string }).type ?? 'string', 'null'] })

export const Datetime = Type.String({ description: 'local time, YYYY-MM-DD HH:MM:SS', example: '2026-11-22 10:00:00' })

export const TASK_STATUSES = [
  'pending',
  'running',
  'completed',
  'reported',
  'recovered',
  'failed_analysis',
  'failed_processing',
  'failed_reporting'
] as const
export type TaskStatus = (typeof TASK_STATUSES)[number]

export const Sample = Type.Object({
  crc32: Type.String({ description: '8 upper-case hex digits' }),
  file_size: Type.Integer(),
  file_type: nullable(Type.String({ description: 'libmagic description' })),
  id: Type.Integer(),
  md5: Type.String(),
  sha1: Type.String(),
  sha256: Type.String(),
  sha512: Type.String(),
  ssdeep: nullable(Type.String())
})
export type Sample = Static<typeof Sample>

export const Guest = Type.Object({
  id: Type.Integer(),
  label: Type.String({ description: "the hypervisor's name for the VM" }),
  manager: Type.String({ description: 'the machinery driver: kvm, virtualbox or physical' }),
  name: Type.String({ description: 'the machine' }),
  shutdown_on: nullable(Datetime),
  started_on: Datetime,
  status: Type.String({ description: 'init, starting, running, stopping, stopped or failed' }),
  task_id: Type.Integer()
}, { description: 'the latest run of the task on a machine' })
export type Guest = Static<typeof Guest>

export const Task = Type.Object({
  added_on: Datetime,
  category: Type.String({ description: 'file, url or archive' }),
  clock: Datetime,
  completed_on: nullable(Datetime),
  custom: nullable(Type.String()),
  duration: Type.Integer({ description: 'seconds from start to completion; -1 until both are known' }),
  enforce_timeout: Type.Boolean(),
  errors: Type.Array(Type.String()),
  guest: Type.Union([Guest, Type.Object({})], { description: 'the machine run, {} before the task starts' }),
  id: Type.Integer(),
  machine: nullable(Type.String()),
  memory: Type.Boolean(),
  options: nullable(Type.String({ description: 'comma-separated key=value pairs for the analysis package' })),
  owner: Type.String(),
  package: nullable(Type.String()),
  platform: nullable(Type.String()),
  priority: Type.Integer({ minimum: 1, maximum: 3 }),
  processing: nullable(Type.String()),
  route: nullable(Type.String()),
  sample: Type.Union([Sample, Type.Object({})], { description: 'the sample, {} for URL tasks' }),
  sample_id: nullable(Type.Integer()),
  started_on: nullable(Datetime),
  status: Type.String({ enum: [...TASK_STATUSES] }),
  submit_id: nullable(Type.Integer()),
  tags: Type.Array(Type.String()),
  target: Type.String({ description: 'the URL, or the stored path of the file' }),
  timeout: Type.Integer({ description: 'seconds; 0 means the configured default' })
})
export type Task = Static<typeof Task>

export const Machine = Type.Object({
  driver: DriverKindSchema,
  id: Type.Integer(),
  interface: nullable(Type.String()),
  ip: Type.String(),
  label: Type.String(),
  locked: Type.Boolean(),
  locked_changed_on: nullable(Datetime),
  name: Type.String(),
  options: Type.Array(Type.String()),
  platform: Type.String(),
  rcparams: Type.Object({}, { additionalProperties: true }),
  resultserver_ip: Type.String(),
  resultserver_port: Type.String(),
  snapshot: nullable(Type.String()),
  status: nullable(Type.String()),
  status_changed_on: nullable(Datetime),
  tags: Type.Array(Type.String())
})
export type Machine = Static<typeof Machine>

const Disk = Type.Object({ free: Type.Integer(), total: Type.Integer(), used: Type.Integer() })

export const ServiceStatus = Type.Object({
  cpu_count: Type.Integer(),
  cpuload: Type.Array(Type.Number(), { description: 'load average over 1, 5 and 15 minutes' }),
  diskspace: Type.Object({ analyses: Disk, binaries: Disk, temporary: Disk }),
  hostname: Type.String(),
  machines: Type.Object({ available: Type.Integer(), total: Type.Integer() }),
  memavail: nullable(Type.Integer({ description: 'kB' })),
  memory: nullable(Type.Number({ description: 'percent of memory in use' })),
  memtotal: nullable(Type.Integer({ description: 'kB' })),
  processes: Type.Record(Type.String(), Type.Integer()),
  protocol_version: Type.Integer(),
  tasks: Type.Object({
    completed: Type.Integer(),
    pending: Type.Integer(),
    reported: Type.Integer(),
    running: Type.Integer(),
    total: Type.Integer()
  }),
  tools: Type.Array(Type.String(), { description: 'analysis tools found on the host' }),
  version: Type.String()
})
export type ServiceStatus = Static<typeof ServiceStatus>

export const TIMELINE_STAGES = [
  'queued', 'unschedulable', 'machine_locked', 'reverting', 'started', 'agent_answered', 'analyzer_started',
  'sample_running', 'finished', 'timed_out', 'memory_dumped', 'machine_stopped', 'completed', 'failed',
  'interrupted', 'recovered', 'processing', 'reported', 'error',
  // The live console (docs/engine.md): a client came or went, what the analyst typed and clicked
  // (counts, never the keys), the end moved from the Live tab.
  'console_opened', 'console_input', 'console_closed', 'extended', 'finish_requested'
] as const
export type TimelineStage = (typeof TIMELINE_STAGES)[number]

export const TimelineEntry = Type.Object({
  stage: Type.String({ enum: [...TIMELINE_STAGES] }),
  at: Datetime,
  time: Type.Integer({ description: 'milliseconds since the Unix epoch' }),
  message: nullable(Type.String())
})
export type TimelineEntry = Static<typeof TimelineEntry>

export const ErrorBody = Type.Object({ message: Type.String() })
export type ErrorBody = Static<typeof ErrorBody>

/** A process with calls (GET /aviary/tasks/{id}/calls). Counts per category and API are of its kept calls. */
export const CallsProcess = Type.Object({
  pid: Type.Integer(),
  process_name: Type.String(),
  calls: Type.Integer({ minimum: 0, description: 'calls kept, and so pageable' }),
  dropped: Type.Integer({ minimum: 0, description: 'calls seen beyond the per-process cap: counted, not kept' }),
  categories: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'category → kept calls' }),
  apis: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'API → kept calls' })
})
export type CallsProcess = Static<typeof CallsProcess>

export const CallsListing = Type.Object({ task_id: Type.Integer(), processes: Type.Array(CallsProcess) })
export type CallsListing = Static<typeof CallsListing>

/** One call of a page, Cuckoo's keys plus its position among the process's kept calls. */
export const CallItem = Type.Object({
  index: Type.Integer({ minimum: 0, description: 'position among the process\'s kept calls' }),
  category: Type.String(),
  api: Type.String(),
  arguments: Type.Record(Type.String(), Type.Unknown()),
  return_value: Type.Unknown(),
  status: Type.Unknown({ description: '1/0 (or a boolean): whether the call succeeded' }),
  time: Type.Number({ description: 'epoch seconds' }),
  tid: Type.Integer(),
  errno: Type.Optional(Type.String({ description: 'Linux: the error of a failed system call, such as ENOENT' }))
})
export type CallItem = Static<typeof CallItem>

export const CallsPage = Type.Object({
  task_id: Type.Integer(),
  pid: Type.Integer(),
  total: Type.Integer({ minimum: 0, description: 'calls matching the filter' }),
  offset: Type.Integer({ minimum: 0 }),
  calls: Type.Array(CallItem)
})
export type CallsPage = Static<typeof CallsPage>
