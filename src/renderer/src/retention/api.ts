// The Retention page's calls: the local service's /aviary/retention routes (docs/retention.md).
// Retention is about this workstation's disk, so these always go to the local service, whichever
// connection the other pages show.
import { fetchJson, sendJson } from '../api/http'
import { ErrorBody } from '../../../shared/api/schemas'
import { OneRule, Preview, RetentionSettings, RunList, RunRecord, type Rule, type RuleFields, type ScheduleFields } from '../../../shared/api/retention'

export type { Preview, RetentionSettings, Rule, RuleFields, RunRecord }

export const retentionKeys = {
  settings: ['retention', 'settings'] as const,
  runs: ['retention', 'runs'] as const
}

/** What a preview was asked for: a saved rule, every enabled rule, or a draft not saved. */
export type Selection = { kind: 'rule'; id: number; name: string } | { kind: 'all' } | { kind: 'draft'; fields: RuleFields }

export const loadSettings = (signal?: AbortSignal): Promise<RetentionSettings> => fetchJson(null, '/aviary/retention', RetentionSettings, {}, signal)

export const loadRuns = (limit: number, signal?: AbortSignal): Promise<RunRecord[]> =>
  fetchJson(null, `/aviary/retention/runs?limit=${limit}`, RunList, {}, signal).then((r) => r.runs)

export const saveSchedule = (fields: ScheduleFields): Promise<RetentionSettings> => sendJson(null, 'PUT', '/aviary/retention/schedule', RetentionSettings, fields)

export const saveRule = (id: number | null, fields: RuleFields): Promise<Rule> =>
  sendJson(null, id === null ? 'POST' : 'PUT', id === null ? '/aviary/retention/rules' : `/aviary/retention/rules/${id}`, OneRule, fields).then((r) => r.rule)

export const deleteRule = (id: number): Promise<ErrorBody> => sendJson(null, 'DELETE', `/aviary/retention/rules/${id}`, ErrorBody)

export function preview(sel: Selection): Promise<Preview> {
  if (sel.kind === 'draft') return sendJson(null, 'POST', '/aviary/retention/preview', Preview, sel.fields)
  return fetchJson(null, `/aviary/retention/preview${sel.kind === 'rule' ? `?rule=${sel.id}` : ''}`, Preview)
}

/** Deletes, of what the preview listed, what still matches now. */
export const runRetention = (rule: number | undefined, tasks: number[]): Promise<RunRecord> =>
  sendJson(null, 'POST', '/aviary/retention/run', RunRecord, { ...(rule === undefined ? {} : { rule }), tasks })

/** A rule's fields, without its id: what PUT takes to change it. */
export function fieldsOf(rule: Rule): RuleFields {
  const { id: _id, ...fields } = rule
  return fields
}

/** A rule's conditions in words. */
export function describeRule(r: RuleFields): string {
  const parts: string[] = []
  if (r.older_than_days !== undefined) parts.push(`${r.age_of === 'added' ? 'added' : 'finished'} more than ${r.older_than_days} days ago`)
  if (r.statuses) parts.push(`status ${r.statuses.map((s) => s.replace('_', ' ')).join(' or ')}`)
  if (r.score_below !== undefined) parts.push(`score below ${r.score_below}`)
  if (r.score_above !== undefined) parts.push(`score above ${r.score_above}`)
  if (r.tags) parts.push(`tagged ${r.tags.join(' or ')}`)
  if (r.larger_than_mb !== undefined) parts.push(`analysis larger than ${r.larger_than_mb} MiB`)
  if (r.free_until_gb !== undefined) parts.push(`largest first until ${r.free_until_gb} GiB are free`)
  return parts.join(', ')
}
