// Retention (/aviary/retention/...): rules that delete old analyses, their dry run (the preview)
// and the record of each run. Written once: Fastify validates with these, /openapi.json is made
// from them, the service checks retention.json with them, and the CLI and the UI get their types.
// `x-allowed` says in words what a field accepts: it is what a 400 tells the client.
import { Type, type Static, type TSchema } from 'typebox'
import { allowed } from './schema-words'

const Bytes = Type.Integer({ minimum: 0, description: 'bytes' })
const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/**
 * The statuses a rule may delete: the ends of a task's life. `pending`, `running` and `completed`
 * (waiting for, or in, processing) are never deleted by retention.
 */
export const RETENTION_STATUSES = ['reported', 'failed_analysis', 'failed_processing', 'failed_reporting', 'recovered'] as const
export type RetentionStatus = (typeof RETENTION_STATUSES)[number]

export const MAX_RULES = 100
export const MAX_RUN_TASKS = 200_000
const SCORE_TEXT = 'a number from 0 to 1000'
const STATUSES_TEXT = `a list of distinct statuses among ${RETENTION_STATUSES.join(', ')} (pending, running and completed tasks are never deleted)`
const TAGS_TEXT = 'a list of 1 to 20 tags of 1 to 255 characters'

/** What a rule is made of, as the API takes it (POST and PUT replace every field). */
export const RuleFields = Type.Object({
  name: allowed(Type.String({ minLength: 1, maxLength: 100, description: 'a name for the rule' }), 'text of 1 to 100 characters'),
  enabled: Type.Optional(allowed(Type.Boolean({ default: true, description: 'part of the scheduled run and of "all rules"' }), 'true or false')),
  older_than_days: Type.Optional(allowed(Type.Number({ minimum: 0, maximum: 36500, description: 'only tasks older than this many days (fractions allowed)' }),
    'a number of days from 0 to 36500')),
  age_of: Type.Optional(allowed(Type.String({ enum: ['completed', 'added'], default: 'completed', description: 'which time older_than_days counts from' }),
    'completed or added')),
  statuses: Type.Optional(allowed(Type.Array(allowed(Type.String({ enum: [...RETENTION_STATUSES] }), STATUSES_TEXT), { minItems: 1, maxItems: RETENTION_STATUSES.length, uniqueItems: true, description: 'only tasks in these statuses (default: all of them)' }),
    STATUSES_TEXT)),
  score_below: Type.Optional(allowed(Type.Number({ minimum: 0, maximum: 1000, description: 'only tasks whose score is below this (tasks without a score never match)' }), SCORE_TEXT)),
  score_above: Type.Optional(allowed(Type.Number({ minimum: 0, maximum: 1000, description: 'only tasks whose score is above this (tasks without a score never match)' }), SCORE_TEXT)),
  tags: Type.Optional(allowed(Type.Array(allowed(Type.String({ minLength: 1, maxLength: 255 }), TAGS_TEXT), { minItems: 1, maxItems: 20, description: 'only tasks with at least one of these tags' }),
    TAGS_TEXT)),
  larger_than_mb: Type.Optional(allowed(Type.Number({ exclusiveMinimum: 0, maximum: 1e9, description: 'only tasks whose analysis folder is larger than this many MiB' }),
    'a number of MiB above 0')),
  free_until_gb: Type.Optional(allowed(Type.Number({ exclusiveMinimum: 0, maximum: 1e6, description: 'largest analyses first, only until this many GiB are free on the analyses\' disk' }),
    'a number of GiB above 0')),
  keep_samples: Type.Optional(allowed(Type.Boolean({ default: true, description: 'keep the stored sample (storage/binaries) even when no task uses it any more' }),
    'true or false'))
}, { additionalProperties: false })
export type RuleFields = Static<typeof RuleFields>

export const Rule = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  ...RuleFields.properties,
  enabled: Type.Boolean(),
  age_of: Type.String({ enum: ['completed', 'added'] }),
  keep_samples: Type.Boolean()
}, { additionalProperties: false })
export type Rule = Static<typeof Rule>

/** POST /aviary/retention/rules and PUT /aviary/retention/rules/{id}: the rule as saved. */
export const OneRule = Type.Object({ rule: Rule })

export const ScheduleFields = Type.Object({
  enabled: Type.Optional(allowed(Type.Boolean({ description: 'run the enabled rules on a schedule' }), 'true or false')),
  interval_minutes: Type.Optional(allowed(Type.Integer({ minimum: 1, maximum: 525600, description: 'minutes between scheduled runs' }),
    'a whole number of minutes from 1 to 525600'))
}, { additionalProperties: false })
export type ScheduleFields = Static<typeof ScheduleFields>

/** retention.json in the data directory. */
export const RetentionFile = Type.Object({
  schedule: Type.Object({
    enabled: Type.Boolean(),
    interval_minutes: Type.Integer({ minimum: 1, maximum: 525600 }),
    /** When the schedule was last turned on (epoch ms): the first run is one interval after it. */
    enabled_at: nullable(Type.Number())
  }),
  next_id: Type.Integer({ minimum: 1 }),
  rules: Type.Array(Rule, { maxItems: MAX_RULES })
})
export type RetentionFile = Static<typeof RetentionFile>

export const Schedule = Type.Object({
  enabled: Type.Boolean(),
  interval_minutes: Type.Integer(),
  next_run_at: nullable(Type.String({ description: 'ISO 8601; null while the schedule is off' })),
  last_run_at: nullable(Type.String({ description: 'ISO 8601 start of the last scheduled run' }))
})
export type Schedule = Static<typeof Schedule>

export const RetentionSettings = Type.Object({ schedule: Schedule, rules: Type.Array(Rule) })
export type RetentionSettings = Static<typeof RetentionSettings>

export const PlannedTask = Type.Object({
  id: Type.Integer(),
  target: Type.String({ description: 'the file name or URL (not the server path)' }),
  category: Type.String(),
  status: Type.String(),
  score: nullable(Type.Number()),
  added_on: Type.String(),
  completed_on: nullable(Type.String()),
  age_days: Type.Number({ description: 'days since completion (since it was added when it never completed)' }),
  bytes: Type.Integer({ minimum: 0, description: 'disk used by the analysis folder' }),
  recording_bytes: Type.Integer({ minimum: 0, description: 'of which its live console recordings (console/)' }),
  sample_id: nullable(Type.Integer()),
  rules: Type.Array(Type.Integer(), { description: 'the rules that select it' })
})
export type PlannedTask = Static<typeof PlannedTask>

export const PlannedSample = Type.Object({
  id: Type.Integer(),
  sha256: Type.String(),
  bytes: Type.Integer({ minimum: 0, description: 'disk used by storage/binaries/<sha256> and its uploads' })
})
export type PlannedSample = Static<typeof PlannedSample>

export const PlannedRecordings = Type.Object({
  id: Type.Integer({ description: 'the task, which stays' }),
  target: Type.String(),
  bytes: Type.Integer({ minimum: 0, description: 'disk used by its console recordings' })
})
export type PlannedRecordings = Static<typeof PlannedRecordings>

export const Preview = Type.Object({
  generated_at: Type.String({ description: 'ISO 8601' }),
  rules: Type.Array(Type.Integer(), { description: 'the rules applied' }),
  tasks: Type.Array(PlannedTask, { description: 'every task the run would delete, by id' }),
  samples: Type.Array(PlannedSample, { description: 'stored samples removed with them (rules without keep_samples; no other task uses them)' }),
  recordings: Type.Array(PlannedRecordings, {
    description: 'tasks that stay but whose console recordings go: a free_until_gb rule deletes recordings (largest first) before any task'
  }),
  total: Type.Object({ tasks: Type.Integer(), bytes: Bytes, sample_bytes: Bytes, recording_bytes: Bytes }),
  disk: nullable(Type.Object({ free: Bytes, total: Bytes }, { description: "the analyses' file system now" }))
})
export type Preview = Static<typeof Preview>

export const RunBody = Type.Object({
  rule: Type.Optional(allowed(Type.Integer({ minimum: 1, description: 'one rule (enabled or not); default: every enabled rule' }), 'the id of a rule')),
  tasks: Type.Optional(allowed(Type.Array(allowed(Type.Integer({ minimum: 1 }), `a list of at most ${MAX_RUN_TASKS} task ids`), { maxItems: MAX_RUN_TASKS, description: 'the task ids the preview listed: only these are deleted, if they still match' }),
    `a list of at most ${MAX_RUN_TASKS} task ids`))
}, { additionalProperties: false })
export type RunBody = Static<typeof RunBody>

export const DeletedTask = Type.Object({
  id: Type.Integer(), target: Type.String(), status: Type.String(), score: nullable(Type.Number()), bytes: Bytes,
  warning: Type.Optional(Type.String({ description: 'deleted, but something of it could not be removed' }))
})
export const SkippedTask = Type.Object({ id: Type.Integer(), reason: Type.String() })

export const RunRecord = Type.Object({
  started_at: Type.String({ description: 'ISO 8601' }),
  finished_at: Type.String({ description: 'ISO 8601' }),
  trigger: Type.String({ enum: ['api', 'schedule', 'cli'] }),
  rules: Type.Array(Type.Integer()),
  deleted: Type.Array(DeletedTask),
  skipped: Type.Array(SkippedTask, { description: 'listed by the preview, left alone: why' }),
  samples: Type.Array(PlannedSample, { description: 'stored samples removed' }),
  recordings: Type.Optional(Type.Array(PlannedRecordings, { description: 'console recordings removed from tasks that stay (absent in records of older versions)' })),
  freed_bytes: Type.Integer({ minimum: 0, description: 'analysis folders, recordings and samples removed' }),
  disk_free_before: nullable(Type.Integer()),
  disk_free_after: nullable(Type.Integer())
})
export type RunRecord = Static<typeof RunRecord>

/** GET /aviary/retention/runs: the latest runs, newest first. */
export const RunList = Type.Object({ runs: Type.Array(RunRecord) })

export const RunsQuery = Type.Object({
  limit: Type.Optional(allowed(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'runs to return, newest first' }), 'a whole number from 1 to 100'))
})
export const PreviewQuery = Type.Object({
  rule: Type.Optional(allowed(Type.Integer({ minimum: 1, description: 'one rule (enabled or not); default: every enabled rule' }), 'the id of a rule'))
})
export const RuleIdParams = Type.Object({ id: Type.Integer({ minimum: 1, description: 'rule id' }) })
