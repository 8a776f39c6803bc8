// A task's submission fields, written once: their names, the form a client sends (the schemas
// below, spread into create/file, create/url, create/submit and the dispatcher's POST /api/task),
// what the service makes of them (TaskSettings: parsed by core/submit/task-params.ts, stored by
// core/db/tasks.repository.ts), what a dispatcher keeps and forwards to a node as it was sent
// (TaskFieldsAsSent: dispatcher/store/types.ts, dispatcher/worker/submit.ts) and what the UI's form
// holds (renderer/src/submit/options.ts).
//
// A new field is added to TASK_FIELDS, TaskFormFields and SettingTypes: the compiler refuses a
// field missing from the form or from the settings, and the dispatcher, its worker and the UI's
// form follow from the list. What is left to write by hand is where the field goes: the task's
// column and its JSON (core/db/migrations.ts), the dispatcher's column, analysis.conf.
//
// The network route is not a field: it travels in `options` (route=<name>, mitm=1), as Cuckoo
// carries it; a task's `route` is what its analysis chose.
import { Type, type Static, type TSchema } from 'typebox'
import { allowed, Flag, optionalFields, Text } from './schema-words'

export const TASK_FIELDS = [
  'package', 'timeout', 'priority', 'options', 'machine', 'platform', 'tags', 'custom', 'owner', 'memory', 'enforce_timeout', 'clock'
] as const
export type TaskField = (typeof TASK_FIELDS)[number]

/** Fields that are flags (1/0, true/false, yes/no, on/off); the others are text or numbers. */
export const TASK_FLAGS = ['memory', 'enforce_timeout'] as const satisfies readonly TaskField[]

const FORM = {
  package: allowed(Type.String({ maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$', description: 'analysis package', examples: ['exe'] }),
    'an analysis package name: letters, digits, _ . - (at most 64)'),
  timeout: allowed(Type.Integer({ minimum: 0, maximum: 86400, description: 'analysis timeout in seconds; 0 = default' }),
    'a whole number of seconds from 0 (the configured default) to 86400'),
  priority: allowed(Type.Integer({ minimum: 1, maximum: 3, description: 'task priority' }), 'a whole number from 1 to 3'),
  options: Text('options for the analysis package, comma-separated key=value'),
  machine: allowed(Type.String({ maxLength: 255, description: 'machine name (or id, as older clients send)' }),
    'the name or id of a configured machine'),
  platform: allowed(Type.String({ maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$', description: 'platform to pick a machine from, e.g. windows', examples: ['windows'] }),
    'a platform name such as windows or linux'),
  tags: Text('comma-separated machine tags', 1024),
  custom: Text('custom string for analysis and processing/reporting modules'),
  owner: Text('owner of the task', 255),
  memory: Flag('take a full memory dump of the machine'),
  enforce_timeout: Flag('run for the whole timeout'),
  clock: allowed(Type.String({ pattern: '^\\d{2}-\\d{2}-\\d{4} \\d{2}:\\d{2}:\\d{2}$', description: 'guest clock, %m-%d-%Y %H:%M:%S', examples: ['01-31-2026 13:45:00'] }),
    'a date as MM-DD-YYYY HH:MM:SS')
} satisfies Record<TaskField, TSchema>

/** The form fields, each optional, with the `x-allowed` a 400 quotes. */
export const TaskFormFields = optionalFields(FORM)
export const TaskForm = Type.Object(TaskFormFields)
/** The fields as a validated form holds them: numbers coerced, the rest strings, any absent. */
export type TaskForm = Static<typeof TaskForm>

interface SettingTypes {
  package: string | null
  timeout: number
  priority: number
  options: string | null
  machine: string | null
  platform: string | null
  tags: string[]
  custom: string | null
  owner: string
  memory: boolean
  enforce_timeout: boolean
  clock: string | null
}

/** What a submission decides about how a task runs: the form parsed (core/submit/task-params.ts). */
export type TaskSettings = { [K in TaskField]: SettingTypes[K] }

/** The fields as a dispatcher keeps them and forwards them to a node: as sent, null when absent; priority 1 by default. */
export type TaskFieldsAsSent = { [K in TaskField]-?: K extends 'priority' ? number : Exclude<TaskForm[K], undefined> | null }

export function fieldsAsSent(form: TaskForm): TaskFieldsAsSent {
  const out = Object.fromEntries(TASK_FIELDS.map((k) => [k, form[k] ?? null])) as TaskFieldsAsSent
  out.priority = form.priority ?? 1
  return out
}
