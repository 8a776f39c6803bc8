// The live console's API (docs/api.md, "The live console"): its state for the Live tab, moving a
// running analysis's end, and the recordings of a task's sessions. The console itself is a
// websocket carrying RFB: /aviary/tasks/<id>/console/ws, or /aviary/machines/<name>/console/ws
// for a machine's console outside a task (prepare mode).
import { Type, type Static } from 'typebox'
import { allowed } from './schema-words'

export const CONSOLE_PROTOCOLS = { interactive: 'aviary.console.interactive', view: 'aviary.console.view' } as const

export const ConsoleSessionInfo = Type.Object({
  id: Type.Integer(),
  role: Type.Union([Type.Literal('interactive'), Type.Literal('view')]),
  opened_at: Type.Integer({ description: 'ms since the epoch' }),
  keys: Type.Integer({ description: 'keys pressed so far' }),
  clicks: Type.Integer({ description: 'mouse button presses so far' })
})

export const ConsoleState = Type.Object({
  available: Type.Boolean({ description: 'whether a client may connect now' }),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'why not, when not available' }),
  task: Type.Union([Type.Integer(), Type.Null()]),
  machine: Type.Union([Type.String(), Type.Null()]),
  driver: Type.Union([Type.String(), Type.Null()]),
  interactive_option: Type.Boolean({ description: 'the task asked for interactive=1: the machine is kept until the end or Finish now' }),
  started_at: Type.Union([Type.Integer(), Type.Null()], { description: 'when the analysis (its timeout) started, ms since the epoch' }),
  ends_at: Type.Union([Type.Integer(), Type.Null()], { description: 'when the analysis ends as things stand, ms since the epoch' }),
  now: Type.Integer({ description: "the service's clock, for the countdown" }),
  extended_by: Type.Integer({ description: 'seconds added by Extend' }),
  finishing: Type.Boolean(),
  interactive_taken: Type.Boolean({ description: 'a client has control: a new one would be view-only' }),
  sessions: Type.Array(ConsoleSessionInfo),
  recording_bytes: Type.Integer(),
  recording_cap: Type.Integer()
})
export type ConsoleState = Static<typeof ConsoleState>

/** GET /aviary/machines/<name>/console: a machine's console (a running task's, or prepare mode's). */
export const MachineConsoleState = Type.Object({
  available: Type.Boolean({ description: 'whether a client may connect now' }),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'why not, when not available' }),
  task: Type.Union([Type.Integer(), Type.Null()], { description: 'the task whose run holds the machine; null in prepare mode' }),
  interactive_taken: Type.Boolean({ description: 'a client has control: a new one would be view-only' }),
  sessions: Type.Array(ConsoleSessionInfo)
})

export const ExtendBody = Type.Object({
  seconds: allowed(Type.Integer({ minimum: 1, maximum: 3600, description: 'seconds to add to the analysis', examples: [60] }), 'a whole number of seconds from 1 to 3600')
})

export const RunEnd = Type.Object({
  ends_at: Type.Integer({ description: 'the new end, ms since the epoch' }),
  remaining: Type.Integer({ description: 'seconds left' }),
  finishing: Type.Boolean()
})
export type RunEnd = Static<typeof RunEnd>

export const RecordingInfo = Type.Object({
  name: Type.String({ description: 'NNNN.vncrec' }),
  bytes: Type.Integer(),
  session: Type.Integer()
})
export const RecordingList = Type.Object({
  recordings: Type.Array(RecordingInfo),
  total_bytes: Type.Integer()
})
export type RecordingList = Static<typeof RecordingList>
