// /aviary/retention/... on a real service: rules added, changed and deleted; bad input answered
// 400 naming the field (never a 5xx); the preview and the run over HTTP, with the run deleting
// what the preview listed and leaving pending tasks alone; the routes in /openapi.json; and the
// schedule inside the service, driven by a clock the test moves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { startHarness, type Harness } from '../../../../test/service-harness'
import type { Preview, RetentionSettings, Rule, RunRecord } from '../../../shared/api/retention'

let h: Harness
let clock = Date.now()

beforeAll(async () => {
  h = await startHarness({ retentionSchedule: { now: () => clock, checkMs: 10 } })
})
afterAll(async () => h?.stop())

async function call<T = Record<string, unknown>>(method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(h.url + p, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
  })
  return { status: res.status, body: (await res.json()) as T }
}

/** A URL task, finished `days` ago with `score`, and an analysis folder. */
async function finished(days: number, score: number, status = 'reported'): Promise<number> {
  const created = await h.post('/tasks/create/url', new URLSearchParams({ url: `http://t${Math.random()}.example/` }))
  const id = created.body.task_id as number
  const when = new Date(clock - days * 86_400_000)
  const stamp = `${when.getFullYear()}-${String(when.getMonth() + 1).padStart(2, '0')}-${String(when.getDate()).padStart(2, '0')} 10:00:00`
  h.sql('UPDATE tasks SET status = ?, score = ?, added_on = ?, completed_on = ? WHERE id = ?', status, score, stamp, stamp, id)
  writeFileSync(path.join(h.analysisDir(id), 'analysis.log'), 'log\n'.repeat(1000))
  return id
}

describe('/aviary/retention', () => {
  it('adds, lists, replaces and deletes rules', async () => {
    const added = await call<{ rule: Rule }>('POST', '/aviary/retention/rules', { name: 'old low', older_than_days: 30, score_below: 2 })
    expect(added.status).toBe(200)
    expect(added.body.rule).toMatchObject({ id: expect.any(Number), name: 'old low', enabled: true, keep_samples: true, age_of: 'completed' })
    const id = added.body.rule.id
    const replaced = await call<{ rule: Rule }>('PUT', `/aviary/retention/rules/${id}`, { name: 'old low, samples too', older_than_days: 30, score_below: 2, keep_samples: false })
    expect(replaced.body.rule).toMatchObject({ id, keep_samples: false })
    const listed = await call<RetentionSettings>('GET', '/aviary/retention')
    expect(listed.body.rules.find((r) => r.id === id)).toEqual(replaced.body.rule)
    expect(listed.body.schedule).toMatchObject({ enabled: false, interval_minutes: 60, next_run_at: null })
    expect((await call('DELETE', `/aviary/retention/rules/${id}`)).status).toBe(200)
    expect(await call('DELETE', `/aviary/retention/rules/${id}`)).toEqual({ status: 404, body: { message: `Retention rule ${id} not found`, code: 'AVIARY_NOT_FOUND' } })
  })

  it('answers bad input with a 400 that names the field', async () => {
    const cases: [string, string, unknown, RegExp][] = [
      ['POST', '/aviary/retention/rules', { older_than_days: 3 }, /^name: required/],
      ['POST', '/aviary/retention/rules', { name: 'x' }, /^rule: give at least one condition/],
      ['POST', '/aviary/retention/rules', { name: 'x', statuses: ['pending'] }, /^statuses: a list of distinct statuses among reported/],
      ['POST', '/aviary/retention/rules', { name: 'x', statuses: 'reported' }, /^statuses: /],
      ['POST', '/aviary/retention/rules', { name: 'x', score_below: 'low' }, /^score_below: a number from 0 to 1000 \(got 'low'\)/],
      ['POST', '/aviary/retention/rules', '{"name":"x","older_than_days":1e309}', /^older_than_days: a number of days from 0 to 36500/],
      // null and "" are "not given", never 0 ("older than 0 days" would take every finished task).
      ['POST', '/aviary/retention/rules', { name: 'x', older_than_days: null }, /^rule: give at least one condition/],
      ['POST', '/aviary/retention/rules', { name: 'x', older_than_days: '' }, /^rule: give at least one condition/],
      ['POST', '/aviary/retention/rules', '{"name":', /^body: /],
      ['POST', '/aviary/retention/preview', { name: 'x', larger_than_mb: -4 }, /^larger_than_mb: a number of MiB above 0/],
      ['PUT', '/aviary/retention/schedule', { interval_minutes: 0 }, /^interval_minutes: a whole number of minutes from 1 to 525600/],
      ['PUT', '/aviary/retention/schedule', { enabled: 'maybe' }, /^enabled: true or false/],
      ['POST', '/aviary/retention/run', { tasks: ['one'] }, /^tasks: a list of at most 200000 task ids/],
      ['POST', '/aviary/retention/run', { rule: 0 }, /^rule: the id of a rule/],
      ['GET', '/aviary/retention/preview?rule=abc', undefined, /^rule: the id of a rule/],
      ['GET', '/aviary/retention/runs?limit=1000', undefined, /^limit: a whole number from 1 to 100/]
    ]
    for (const [method, url, body, message] of cases) {
      const res = await call<{ message: string }>(method, url, body)
      expect([url, body, res.status]).toEqual([url, body, 400])
      expect(res.body.message).toMatch(message)
    }
    expect((await call('GET', '/aviary/retention/preview?rule=9999')).status).toBe(404)
    expect((await call('POST', '/aviary/retention/run', { rule: 9999 })).status).toBe(404)
    expect((await call('PUT', '/aviary/retention/rules/9999', { name: 'x', older_than_days: 1 })).status).toBe(404)
    expect((await call<RetentionSettings>('GET', '/aviary/retention')).body.rules).toEqual([]) // nothing was added
  })

  it('previews, and the run deletes exactly the listed tasks; pending ones stay', async () => {
    const a = await finished(40, 1)
    const b = await finished(45, 0.5, 'failed_processing')
    const keep = await finished(40, 8)
    const pending = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://pending.example/' }))
    const pendingId = pending.body.task_id as number
    h.sql('UPDATE tasks SET added_on = ?, score = 0 WHERE id = ?', '2001-01-01 00:00:00', pendingId)
    const rule = (await call<{ rule: Rule }>('POST', '/aviary/retention/rules', { name: 'old low', older_than_days: 30, score_below: 2 })).body.rule

    const preview = await call<Preview>('GET', `/aviary/retention/preview?rule=${rule.id}`)
    expect(preview.status).toBe(200)
    expect(preview.body.tasks.map((t) => [t.id, t.status, t.target.startsWith('http://t')])).toEqual([[a, 'reported', true], [b, 'failed_processing', true]])
    expect(preview.body.total.bytes).toBeGreaterThan(4000 * 2)
    expect(preview.body.disk!.free).toBeGreaterThan(0)
    // A draft previews the same without being saved.
    const draft = await call<Preview>('POST', '/aviary/retention/preview', { name: 'draft', older_than_days: 30, score_below: 2 })
    expect(draft.body.tasks.map((t) => t.id)).toEqual([a, b])
    expect(draft.body.rules).toEqual([0])

    const run = await call<RunRecord>('POST', '/aviary/retention/run', { rule: rule.id, tasks: preview.body.tasks.map((t) => t.id) })
    expect(run.status).toBe(200)
    expect(run.body).toMatchObject({ trigger: 'api', rules: [rule.id], skipped: [], freed_bytes: preview.body.total.bytes })
    expect(run.body.deleted.map((t) => t.id)).toEqual([a, b])
    for (const id of [a, b]) {
      expect((await h.get(`/tasks/view/${id}`)).status).toBe(404)
      expect(existsSync(path.join(h.dataDir, 'storage', 'analyses', String(id)))).toBe(false)
    }
    for (const id of [keep, pendingId]) expect((await h.get(`/tasks/view/${id}`)).status).toBe(200)
    const runs = await call<{ runs: RunRecord[] }>('GET', '/aviary/retention/runs?limit=5')
    expect(runs.body.runs[0]).toEqual(run.body)
    // No body at all: every enabled rule, nothing left to delete.
    const empty = await call<RunRecord>('POST', '/aviary/retention/run')
    expect(empty.status).toBe(200)
    expect(empty.body.deleted).toEqual([])
    await call('DELETE', `/aviary/retention/rules/${rule.id}`)
  })

  it('runs on the schedule inside the service', async () => {
    const id = await finished(60, 1)
    const rule = (await call<{ rule: Rule }>('POST', '/aviary/retention/rules', { name: 'scheduled', older_than_days: 50 })).body.rule
    const on = await call<RetentionSettings>('PUT', '/aviary/retention/schedule', { enabled: true, interval_minutes: 60 })
    expect(on.body.schedule.next_run_at).toBe(new Date(clock + 3_600_000).toISOString())
    await new Promise((r) => setTimeout(r, 100))
    expect((await h.get(`/tasks/view/${id}`)).status).toBe(200) // not due yet
    clock += 3_600_000
    // The run is recorded when it ends.
    const scheduled = async () => (await call<{ runs: RunRecord[] }>('GET', '/aviary/retention/runs?limit=1')).body.runs.find((r) => r.trigger === 'schedule')
    for (let i = 0; i < 300 && !(await scheduled()); i++) await new Promise((r) => setTimeout(r, 10))
    expect(await scheduled()).toMatchObject({ trigger: 'schedule', rules: [rule.id], deleted: [{ id }] })
    expect((await h.get(`/tasks/view/${id}`)).status).toBe(404)
    await call('PUT', '/aviary/retention/schedule', { enabled: false })
  })

  it('documents every route in /openapi.json', async () => {
    const doc = (await h.json<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json')).body
    expect(Object.keys(doc.paths['/aviary/retention']!)).toEqual(['get'])
    expect(Object.keys(doc.paths['/aviary/retention/rules']!)).toEqual(['post'])
    expect(Object.keys(doc.paths['/aviary/retention/rules/{id}']!).sort()).toEqual(['delete', 'put'])
    expect(Object.keys(doc.paths['/aviary/retention/preview']!).sort()).toEqual(['get', 'post'])
    for (const p of ['/aviary/retention/run', '/aviary/retention/schedule', '/aviary/retention/runs']) expect(doc.paths[p]).toBeDefined()
  })
})
