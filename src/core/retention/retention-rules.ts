// The retention rules and the schedule, kept in retention.json in the data directory: a small
// file an administrator can read, back up or edit by hand. It is checked against the shared schema
// every time it is read (a hand edit that breaks it stops retention with a message naming the
// field, and nothing is deleted), and written whole through a temporary file and a rename, so a
// crash never leaves half a file.
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createLayout, DATA_FILES } from '../storage/layout'
import { Compile } from 'typebox/compile'
import type { Static, TSchema } from 'typebox'
import { ApiError, badRequest, notFound } from '../errors'
import { ErrorCodes } from '../../shared/errors'
import {
  MAX_RULES, RetentionFile, RuleFields, ScheduleFields,
  type Rule, type RuleFields as RuleFieldsT, type ScheduleFields as ScheduleFieldsT
} from '../../shared/api/retention'

/** The rules' file name in the data directory, for messages (storage/layout.ts names it). */
export const RULES_FILE = DATA_FILES.retentionRules

export const DEFAULT_INTERVAL_MINUTES = 60

const compiled = new Map<TSchema, ReturnType<typeof Compile>>()
/** Null when `value` fits `schema`, else "field: what is wrong" (the first field at fault). */
export function problemOf(schema: TSchema, value: unknown): { field: string; message: string } | null {
  let check = compiled.get(schema)
  if (!check) {
    check = Compile(schema)
    compiled.set(schema, check)
  }
  if (check.Check(value)) return null
  const first = check.Errors(value)[0]
  const parts = (first?.instancePath ?? '').split('/').filter(Boolean)
  // The sentence a client reads is the x-allowed of the deepest schema on the path that has one.
  let at: SchemaNode | undefined = schema as SchemaNode
  let allowedText: string | undefined
  for (const part of parts) {
    at = at?.properties?.[part] ?? at?.items
    allowedText = at?.['x-allowed'] ?? allowedText
  }
  return { field: parts.join('.') || 'body', message: allowedText ?? first?.message ?? 'not valid' }
}

interface SchemaNode { properties?: Record<string, SchemaNode>; items?: SchemaNode; 'x-allowed'?: string }

/** A rule as the API takes it, checked: the schema, then what the schema cannot say. */
export function checkRule(input: unknown): RuleFieldsT {
  const wrong = problemOf(RuleFields, input)
  if (wrong) throw badRequest(wrong.field, wrong.message)
  const r = input as RuleFieldsT
  const conditions = [r.older_than_days, r.statuses, r.score_below, r.score_above, r.tags, r.larger_than_mb, r.free_until_gb]
  if (conditions.every((c) => c === undefined)) {
    throw badRequest('rule', 'give at least one condition: older_than_days, statuses, score_below, score_above, tags, larger_than_mb or free_until_gb')
  }
  if (r.score_below !== undefined && r.score_above !== undefined && r.score_below <= r.score_above) {
    throw badRequest('score_below', `must be above score_above (${r.score_above}): no score is below ${r.score_below} and above ${r.score_above}`)
  }
  return r
}

export function toRule(id: number, f: RuleFieldsT): Rule {
  const rule: Rule = { id, name: f.name, enabled: f.enabled ?? true, age_of: f.age_of ?? 'completed', keep_samples: f.keep_samples ?? true }
  for (const key of ['older_than_days', 'statuses', 'score_below', 'score_above', 'tags', 'larger_than_mb', 'free_until_gb'] as const) {
    if (f[key] !== undefined) (rule as Record<string, unknown>)[key] = f[key]
  }
  return rule
}

export class RuleStore {
  readonly file: string

  constructor(dataRoot: string) {
    this.file = createLayout(dataRoot).retentionRules
  }

  /** The file now; its defaults (no rules, schedule off) when there is none. */
  read(): Static<typeof RetentionFile> {
    let text: string
    try {
      text = readFileSync(this.file, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { schedule: { enabled: false, interval_minutes: DEFAULT_INTERVAL_MINUTES, enabled_at: null }, next_id: 1, rules: [] }
      throw broken(`cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
    }
    let data: unknown
    try {
      data = JSON.parse(text)
    } catch {
      throw broken('is not JSON')
    }
    const wrong = problemOf(RetentionFile, data)
    if (wrong) throw broken(`${wrong.field}: ${wrong.message}`)
    const file = data as Static<typeof RetentionFile>
    const ids = new Set(file.rules.map((r) => r.id))
    if (ids.size !== file.rules.length || file.rules.some((r) => r.id >= file.next_id)) throw broken('rules: ids must be distinct and below next_id')
    return file
  }

  rule(id: number): Rule {
    const rule = this.read().rules.find((r) => r.id === id)
    if (!rule) throw notFound(`Retention rule ${id} not found`)
    return rule
  }

  add(input: unknown): Rule {
    const fields = checkRule(input)
    const file = this.read()
    if (file.rules.length >= MAX_RULES) throw badRequest('rule', `at most ${MAX_RULES} rules; delete one first`)
    const rule = toRule(file.next_id, fields)
    this.write({ ...file, next_id: file.next_id + 1, rules: [...file.rules, rule] })
    return rule
  }

  replace(id: number, input: unknown): Rule {
    const fields = checkRule(input)
    const file = this.read()
    const at = file.rules.findIndex((r) => r.id === id)
    if (at < 0) throw notFound(`Retention rule ${id} not found`)
    const rule = toRule(id, fields)
    this.write({ ...file, rules: file.rules.map((r, i) => (i === at ? rule : r)) })
    return rule
  }

  remove(id: number): void {
    const file = this.read()
    if (!file.rules.some((r) => r.id === id)) throw notFound(`Retention rule ${id} not found`)
    this.write({ ...file, rules: file.rules.filter((r) => r.id !== id) })
  }

  /** Changes the schedule; turning it on starts the wait for its first run (`now`, epoch ms). */
  setSchedule(input: unknown, now: number): Static<typeof RetentionFile>['schedule'] {
    const wrong = problemOf(ScheduleFields, input)
    if (wrong) throw badRequest(wrong.field, wrong.message)
    const fields = input as ScheduleFieldsT
    const file = this.read()
    const enabled = fields.enabled ?? file.schedule.enabled
    const schedule = {
      enabled,
      interval_minutes: fields.interval_minutes ?? file.schedule.interval_minutes,
      enabled_at: enabled ? (file.schedule.enabled ? file.schedule.enabled_at : now) : null
    }
    this.write({ ...file, schedule })
    return schedule
  }

  private write(file: Static<typeof RetentionFile>): void {
    const tmp = `${this.file}.${process.pid}.tmp`
    writeFileSync(tmp, JSON.stringify(file, null, 2) + '\n')
    renameSync(tmp, this.file)
  }
}

/** retention.json is the administrator's file, not a client's input: a 500 that says what to fix. */
function broken(what: string): ApiError {
  return new ApiError(500, `${RULES_FILE} in the data directory ${what}; fix or remove it (nothing is deleted until then)`, ErrorCodes.INTERNAL)
}
