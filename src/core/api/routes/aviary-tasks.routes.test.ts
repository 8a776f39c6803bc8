// GET /aviary/tasks on a real service with 100,000 tasks inserted by SQL (another connection, as a
// maintenance script would): filters, search, paging and totals against the same data computed here.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { waitForTask } from '../../../../test/e2e/e2e-helpers'
import { TASK_STATUSES } from '../../../shared/api/schemas'
import type { ListedTask, TaskSearchResult } from '../../../shared/api/ui-schemas'

const N = 100_000
const MD5 = '0123456789abcdef0123456789abcdef'
const SHA256 = 'fedcba9876543210'.repeat(4)

// Task i: status TASK_STATUSES[i % 8]; a URL task when i % 10 == 0, else a file task named
// sample-<i>.exe; every 1000th file task has the sample; task 4321 is "Invoice-Q3.PDF".
const statusOf = (i: number) => TASK_STATUSES[i % 8]!
const nameOf = (i: number) => (i === 4321 ? 'invoice-q3.pdf' : i % 10 === 0 ? `http://host-${i}.example/x` : `sample-${i}.exe`)
const hasSample = (i: number) => i % 1000 === 1
const all = Array.from({ length: N }, (_, k) => k + 1)

describe('GET /aviary/tasks with 100,000 tasks', () => {
  let h: Harness
  const get = async (query: string) => h.json<TaskSearchResult>(`/aviary/tasks?${query}`)
  /** The expected answer: matching ids in order, then the page. */
  const expectPage = async (query: string, match: (i: number) => boolean, offset = 0, limit = 100, asc = false) => {
    const ids = all.filter(match)
    if (!asc) ids.reverse()
    const { status, body } = await get(query)
    expect(status).toBe(200)
    expect(body.total).toBe(ids.length)
    expect(body.tasks.map((t) => t.id)).toEqual(ids.slice(offset, offset + limit))
    return body
  }

  beforeAll(async () => {
    h = await startHarness()
    h.sql(`INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
           VALUES (10, 'data', ?, '00000000', ?, ?, ?, NULL, '2026-01-01 00:00:00')`, MD5, 'a'.repeat(40), SHA256, 'b'.repeat(128))
    h.sql(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${N})
           INSERT INTO tasks (category, target, sample_id, clock, added_on, status)
           SELECT CASE WHEN i % 10 = 0 THEN 'url' ELSE 'file' END,
                  CASE WHEN i = 4321 THEN '/data/storage/uploads/${SHA256}/Invoice-Q3.PDF'
                       WHEN i % 10 = 0 THEN 'http://host-' || i || '.example/x'
                       ELSE '/data/storage/uploads/${SHA256}/sample-' || i || '.exe' END,
                  CASE WHEN i % 1000 = 1 THEN 1 END,
                  '2026-01-01 00:00:00', '2026-01-01 00:00:00',
                  ${`CASE i % 8 ${TASK_STATUSES.map((s, k) => `WHEN ${k} THEN '${s}'`).join(' ')} END`}
           FROM n`)
  }, 120_000)

  afterAll(async () => {
    await h?.stop()
  })

  it('pages the whole list by id, newest first by default, oldest first with order=asc', async () => {
    const first = await expectPage('', () => true)
    expect(first.tasks[0]!.id).toBe(N)
    await expectPage('offset=99950&limit=1000', () => true, 99_950, 1000)
    await expectPage('order=asc&offset=500&limit=3', () => true, 500, 3, true)
    await expectPage('offset=200000', () => true, 200_000)
    expect((await get('limit=0')).body).toEqual({ tasks: [], total: N })
  })

  it('filters by one or several statuses, with the total of all that match', async () => {
    await expectPage('status=reported', (i) => statusOf(i) === 'reported')
    await expectPage('status=pending,failed_analysis&offset=20000&limit=250',
      (i) => ['pending', 'failed_analysis'].includes(statusOf(i)), 20_000, 250)
    await expectPage('status=running&order=asc&offset=12499&limit=10', (i) => statusOf(i) === 'running', 12_499, 10, true)
  })

  it('searches a task id, and the same digits in names and URLs', async () => {
    const body = await expectPage('q=4242&limit=1000', (i) => i === 4242 || nameOf(i).includes('4242'), 0, 1000)
    expect(body.tasks.map((t) => t.id)).toContain(4242)
    await expectPage('q=99999', (i) => i === 99_999 || nameOf(i).includes('99999'))
  })

  it('searches a sample by md5, sha256 or a prefix of 6 hex digits; 5 digits are only text', async () => {
    await expectPage(`q=${MD5}`, hasSample)
    await expectPage(`q=${MD5.toUpperCase()}`, hasSample)
    await expectPage(`q=${SHA256.slice(0, 6)}`, hasSample)
    await expectPage(`q=${'b'.repeat(128)}`, hasSample)
    expect((await get(`q=${SHA256.slice(0, 5)}`)).body.total).toBe(0)
    expect((await get('q=0123456789abcdef0123456789abcdee')).body.total).toBe(0)
  })

  it('searches file names and URLs in any case, not the folders of the stored path', async () => {
    await expectPage('q=INVOICE-q3', (i) => i === 4321)
    await expectPage('q=host-1234', (i) => nameOf(i).includes('host-1234'))
    await expectPage('q=.exe&status=completed&offset=5000&limit=50', (i) => nameOf(i).includes('.exe') && statusOf(i) === 'completed', 5000, 50)
    expect((await get('q=uploads')).body.total).toBe(0)
    expect((await get('q=%20%20')).body.total).toBe(N) // blank search: no filter
  })

  it('answers tasks in /tasks/view shape with the score, and follows changes', async () => {
    const { body } = await get('q=invoice')
    const task = body.tasks[0] as ListedTask
    const view = (await h.json<{ task: Record<string, unknown> }>('/tasks/view/4321')).body.task
    expect(task).toEqual({ ...view, score: null })
    h.sql(`UPDATE tasks SET score = 7.5, status = 'reported' WHERE id = 4321`)
    expect((await get('q=invoice')).body.tasks[0]).toMatchObject({ id: 4321, score: 7.5, status: 'reported' })
    // A task added through the API (this service's own connection) is found at once.
    const created = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://Fresh-Site.example/' }))
    expect(created.status).toBe(200)
    const found = (await get('q=fresh-site')).body
    expect(found.tasks.map((t) => t.id)).toEqual([created.body.task_id])
    expect((await get('')).body.total).toBe(N + 1)
    h.sql('DELETE FROM tasks WHERE id = 4321')
    expect((await get('q=invoice')).body.total).toBe(0)
  })

  it('refuses bad parameters with a 400 naming the field', async () => {
    for (const [query, field] of [['status=reported,bogus', 'status'], ['limit=1001', 'limit'], ['offset=-1', 'offset'],
      ['order=up', 'order'], ['limit=ten', 'limit'], [`q=${'x'.repeat(1025)}`, 'q']] as const) {
      const { status, body } = await h.json<{ message: string }>(`/aviary/tasks?${query}`)
      expect(status, query).toBe(400)
      expect(body.message.startsWith(`${field}: `), body.message).toBe(true)
    }
  })

  it('is in the OpenAPI description', async () => {
    const { body } = await h.json<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json')
    expect(body.paths['/aviary/tasks']?.get).toBeDefined()
    expect(body.paths['/aviary/stats']?.get).toBeDefined()
  })
})

describe('the score in the task list', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startHarness({ engine: true, machines: { machines: [] } })
  })
  afterAll(async () => h?.stop())

  it("is report.json's info.score once processing has written the report", async () => {
    const created = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://scored.example/' }))
    const id = created.body.task_id as number
    expect((await h.json<TaskSearchResult>('/aviary/tasks?q=scored')).body.tasks[0]).toMatchObject({ id, score: null })
    h.analysisDir(id)
    h.sql("UPDATE tasks SET status = 'completed', started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?", id)
    h.service.engine!.processPending()
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    const report = JSON.parse(readFileSync(path.join(h.analysisDir(id), 'reports/report.json'), 'utf8')) as { info: { score: number } }
    expect(typeof report.info.score).toBe('number')
    expect((await h.json<TaskSearchResult>('/aviary/tasks?q=scored')).body.tasks[0]).toMatchObject({ id, score: report.info.score, status: 'reported' })
  })
})
