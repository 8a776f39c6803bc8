// Schemas of the Aviary-only routes under /aviary/ that the UI uses (stats, task search, machine
// controls, doctor, the browser's session). Cuckoo's routes keep theirs in schemas.ts, responses.ts and requests.ts. Like
// there, `x-allowed` says in words what a field accepts: it is what a 400 tells the client.
import { Type, type Static } from 'typebox'
import { allowed } from './schema-words'
import { TASK_STATUSES, Task, type TaskStatus } from './schemas'
import { MachineView } from './responses'
import { BOOLEAN_PATTERN } from './requests'

/** A flag as the query gives it (BOOLEAN_PATTERN): true for 1, true, yes, on. */
export const isTrue = (flag: string | undefined): boolean => flag !== undefined && /^(?:1|true|yes|on)$/i.test(flag)

const Count = Type.Integer({ minimum: 0 })
const Bytes = Type.Integer({ minimum: 0, description: 'bytes' })

// ---- GET /aviary/stats

export const StatsQuery = Type.Object({
  days: Type.Optional(allowed(Type.Integer({ minimum: 1, maximum: 365, default: 30, description: 'days of history, today included' }),
    'a whole number of days from 1 to 365'))
})
export type StatsQuery = Static<typeof StatsQuery>

export const DayCounts = Type.Object({
  date: Type.String({ description: 'local date, YYYY-MM-DD' }),
  added: Count,
  finished: Type.Integer({ minimum: 0, description: 'tasks that reached reported or a failed status (by completion time)' })
})
export type DayCounts = Static<typeof DayCounts>

export const AviaryStats = Type.Object({
  tasks: Type.Object({
    total: Count,
    by_status: Type.Object(Object.fromEntries(TASK_STATUSES.map((s) => [s, Count])) as Record<TaskStatus, typeof Count>,
      { description: 'every status, zeros included' })
  }),
  days: Type.Array(DayCounts, { description: 'one entry per day, oldest first, today last; days without tasks included' }),
  machines: Type.Object({ available: Count, total: Count }),
  disk: Type.Object({ total: Bytes, free: Bytes, used: Bytes }, { description: 'the file system of the data directory' }),
  cpu: Type.Object({
    load: Type.Array(Type.Number(), { description: 'load average over 1, 5 and 15 minutes' }),
    cores: Type.Integer({ minimum: 1 })
  }),
  memory: Type.Object({ total: Bytes, free: Type.Integer({ minimum: 0, description: 'bytes available' }) })
})
export type AviaryStats = Static<typeof AviaryStats>

// ---- GET /aviary/tasks

export const TASK_SEARCH_MAX_LIMIT = 1000
const statusList = `(?:${TASK_STATUSES.join('|')})`
export const TASK_CATEGORIES = ['file', 'url', 'archive'] as const
const categoryList = `(?:${TASK_CATEGORIES.join('|')})`
export const TASK_SORTS = ['id', 'added', 'score'] as const
export type TaskSort = (typeof TASK_SORTS)[number]

export const TaskSearchQuery = Type.Object({
  status: Type.Optional(allowed(Type.String({ pattern: `^${statusList}(?:,${statusList})*$`, maxLength: 512, description: 'comma-separated statuses' }),
    `comma-separated task statuses (${TASK_STATUSES.join(', ')})`)),
  category: Type.Optional(allowed(Type.String({ pattern: `^${categoryList}(?:,${categoryList})*$`, maxLength: 64, description: 'comma-separated categories' }),
    `comma-separated task categories (${TASK_CATEGORIES.join(', ')})`)),
  q: Type.Optional(allowed(Type.String({
    maxLength: 1024,
    description: 'terms that must all match (docs/api.md, "Searching tasks"): plain text matches a task id, a hash of the sample or of a dropped ' +
      'file (or its first 6+ hex digits), part of the file name or URL, a domain (or a parent domain), an IP, a URL, a signature name, a tag or ' +
      'a machine; kind:value matches one kind (domain:, ip:, url:, sig:, hash:, name:, tag:, machine:, id:); "quotes" keep blanks in a term',
    examples: ['domain:evil.com', 'ip:203.0.113.9 sig:antivm', 'invoice.pdf']
  }), 'text of at most 1024 characters: up to 8 terms, plain or kind:value (domain, ip, url, sig, alert, hash, name, file, command, mutex, key, tag, machine, id)')),
  sort: Type.Optional(allowed(Type.String({ enum: [...TASK_SORTS], default: 'id', description: 'id, time added, or score (tasks without a score sort lowest)' }),
    TASK_SORTS.join(', '))),
  offset: Type.Optional(allowed(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'matching tasks to skip' }), 'a whole number from 0')),
  limit: Type.Optional(allowed(Type.Integer({ minimum: 0, maximum: TASK_SEARCH_MAX_LIMIT, default: 100, description: 'tasks to return' }),
    `a whole number from 0 to ${TASK_SEARCH_MAX_LIMIT}`)),
  order: Type.Optional(allowed(Type.String({ enum: ['desc', 'asc'], default: 'desc', description: 'of the sort key (ties by id, in the same direction)' }), 'desc or asc'))
})
export type TaskSearchQuery = Static<typeof TaskSearchQuery>

export const ListedTask = Type.Object({
  ...Task.properties,
  score: Type.Unsafe<number | null>({ type: ['number', 'null'], description: "report.json's info.score; null until the task is reported" })
})
export type ListedTask = Static<typeof ListedTask>

export const TaskSearchResult = Type.Object({
  tasks: Type.Array(ListedTask),
  total: Type.Integer({ minimum: 0, description: 'all the tasks that match, whatever offset and limit' })
})
export type TaskSearchResult = Static<typeof TaskSearchResult>

// ---- machines

/** A machine control's answer: the machine as /machines/view shows it (responses.ts). */
export const MachineAnswer = MachineView
export type MachineAnswer = MachineView

export const Finding = Type.Object({
  check: Type.String(),
  ok: Type.Boolean(),
  detail: Type.String({ description: 'what was seen; on failure, the reason' }),
  fix: Type.Optional(Type.String({ description: 'on failure, what to do' }))
})
export type Finding = Static<typeof Finding>

export const DoctorQuery = Type.Object({
  deep: Type.Optional(allowed(Type.String({ pattern: BOOLEAN_PATTERN, description: 'also revert, start and stop each machine no task uses' }),
    'one of 1/0, true/false, yes/no, on/off (any case)'))
})

export const DoctorAnswer = Type.Object({
  ok: Type.Boolean(),
  config: Finding,
  /** The rooter and each route machines.json offers (docs/network.md). */
  routes: Type.Array(Finding),
  machines: Type.Array(Type.Object({ name: Type.String(), driver: Type.String(), findings: Type.Array(Finding) })),
  /** What a crash left (GET /aviary/machines/leftovers lists it); not part of `ok`. Absent when only some machines were checked. */
  leftovers: Type.Optional(Finding)
}, { description: 'the findings of `aviary doctor` (cached for 30 s)' })
export type DoctorAnswer = Static<typeof DoctorAnswer>

/** GET /aviary/session: whether the service wants a token, and whether this browser is signed in. */
export const SessionState = Type.Object({
  token_required: Type.Boolean({ description: 'whether the service was started with an API token' }),
  signed_in: Type.Boolean({ description: 'whether this request carries a valid session cookie' })
})
export type SessionState = Static<typeof SessionState>

/** GET /aviary/routes: the network routes this host offers tasks. */
export const RoutesAnswer = Type.Object({
  /** false: no routing section in machines.json; tasks' traffic goes wherever their network sends it. */
  routed: Type.Boolean(),
  default: Type.Union([Type.String(), Type.Null()]),
  routes: Type.Array(Type.Object({ name: Type.String(), kind: Type.String(), description: Type.String() })),
  mitm: Type.Object({ available: Type.Boolean(), default: Type.Boolean() })
})
export type RoutesAnswer = Static<typeof RoutesAnswer>
