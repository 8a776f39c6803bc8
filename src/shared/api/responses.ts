// The analysis API's answers that are not a single object of schemas.ts: what the create routes,
// the task actions, the sample and machine views, the timeline and the saved connections send.
// Written once, here: the routes document their answers with them (/openapi.json; the answers are
// serialized by JSON.stringify, and client-answers.test.ts checks each against its schema), and
// the shared client (client.ts) types what it returns with them.
import { Type, type Static } from 'typebox'
import { Machine, Sample, Task, TimelineEntry } from './schemas'

// ---- tasks

/** POST /tasks/create/file and /tasks/create/url. */
export const TaskCreated = Type.Object({ task_id: Type.Integer() })
export type TaskCreated = Static<typeof TaskCreated>

/** POST /tasks/create/submit: one task per file, archive member, URL or hash; what could not become a task is in `errors`. */
export const SubmitResult = Type.Object({ errors: Type.Array(Type.String()), submit_id: Type.Integer(), task_ids: Type.Array(Type.Integer()) })
export type SubmitResult = Static<typeof SubmitResult>

/** GET /tasks/view/{id}. */
export const TaskView = Type.Object({ task: Task })
export type TaskView = Static<typeof TaskView>

/** GET /tasks/list[/{limit}[/{offset}]] and /tasks/sample/{id}. */
export const TaskList = Type.Object({ tasks: Type.Array(Task) })
export type TaskList = Static<typeof TaskList>

/** GET /tasks/delete/{id}: `OK`. */
export const TaskDeleted = Type.Object({ status: Type.String() })
export type TaskDeleted = Static<typeof TaskDeleted>

/** GET /tasks/reschedule/{id}: the copy's id. */
export const TaskRescheduled = Type.Object({ status: Type.String(), task_id: Type.Integer() })
export type TaskRescheduled = Static<typeof TaskRescheduled>

/** GET /tasks/reboot/{id}: the new task's id (reboot_id) and the old one's. */
export const TaskRebooted = Type.Object({ reboot_id: Type.Integer(), task_id: Type.Integer() })
export type TaskRebooted = Static<typeof TaskRebooted>

/** GET /tasks/rereport/{id}: false when the task was not reported. */
export const TaskRereported = Type.Object({ success: Type.Boolean() })
export type TaskRereported = Static<typeof TaskRereported>

/** GET /tasks/timeline/{id}. */
export const Timeline = Type.Object({ timeline: Type.Array(TimelineEntry) })
export type Timeline = Static<typeof Timeline>

// ---- samples, results, machines

/** GET /files/view/{md5|sha256|id}/…: the sample and the ids of the tasks that analyze it. */
export const SampleView = Type.Object({ sample: Type.Object({ ...Sample.properties, tasks: Type.Array(Type.Integer()) }) })
export type SampleView = Static<typeof SampleView>

/** GET /memory/list/{id}. */
export const MemoryList = Type.Object({ dump_files: Type.Array(Type.String()) })
export type MemoryList = Static<typeof MemoryList>

/** GET /machines/list. */
export const MachineList = Type.Object({ machines: Type.Array(Machine) })
export type MachineList = Static<typeof MachineList>

/** GET /machines/view/{name}, and the machine controls' answers. */
export const MachineView = Type.Object({ machine: Machine })
export type MachineView = Static<typeof MachineView>

/** GET /vpn/status. */
export const VpnStatus = Type.Object({ vpns: Type.Record(Type.String(), Type.Boolean()), message: Type.String() })
export type VpnStatus = Static<typeof VpnStatus>

// ---- /aviary/connections

export const CONNECTION_KINDS = ['analysis', 'dispatcher'] as const
export type ConnectionKind = (typeof CONNECTION_KINDS)[number]

/** A saved remote server; its token is never sent back, only whether there is one. */
export const Connection = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  url: Type.String({ description: 'base URL of the remote API' }),
  kind: Type.String({ enum: [...CONNECTION_KINDS] }),
  has_token: Type.Boolean({ description: 'whether a token is saved (the token itself is never returned)' }),
  created_on: Type.String()
})
export type Connection = Static<typeof Connection>

export const ConnectionList = Type.Object({ connections: Type.Array(Connection) })
export type ConnectionList = Static<typeof ConnectionList>

export const ConnectionView = Type.Object({ connection: Connection })
export type ConnectionView = Static<typeof ConnectionView>
