// GET /aviary/tasks on a real service with 100,000 tasks inserted by SQL (another connection, as a
// maintenance script would), search terms as processing writes them for the reported ones, and
// scores: filters, every kind of search, sorting, paging and totals against the same data computed
// here; 400s naming the field.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { finishRun, startHarness, type Harness } from '../../../../test/service-harness'
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
// Reported tasks (i % 8 == 3) have a score and terms: every one the domain shared.example (with its
// parent example), one in 1000 a domain under bad.example, an address 198.51.100.<i % 200>, a
// signature network_http (i % 16 == 3) or antivm_disk (i % 16 == 11).
const reported = (i: number) => i % 8 === 3
const scoreOf = (i: number) => (reported(i) ? (i % 101) / 10 : null)
const categoryOf = (i: number) => (i % 10 === 0 ? 'url' : 'file')
/** By score, highest first, no score last; ties by id, the same way. */
const byScore = (a: number, b: number) => ((scoreOf(b) ?? -1) - (scoreOf(a) ?? -1)) || b - a

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
    h.sql("UPDATE tasks SET score = (id % 101) / 10.0 WHERE status = 'reported'")
    h.sql(`INSERT INTO task_terms (task_id, kind, term)
           SELECT id, 'domain', 'shared.example' FROM tasks WHERE status = 'reported'
           UNION ALL SELECT id, 'domain', 'example' FROM tasks WHERE status = 'reported'
           UNION ALL SELECT id, 'domain', 'evil-' || id || '.bad.example' FROM tasks WHERE status = 'reported' AND id % 1000 = 3
           UNION ALL SELECT id, 'domain', 'bad.example' FROM tasks WHERE status = 'reported' AND id % 1000 = 3
           UNION ALL SELECT id, 'ip', '198.51.100.' || (id % 200) FROM tasks WHERE status = 'reported'
           UNION ALL SELECT id, 'sig', CASE id % 16 WHEN 3 THEN 'network_http' ELSE 'antivm_disk' END FROM tasks WHERE status = 'reported'
           UNION ALL SELECT id, 'sig', CASE id % 16 WHEN 3 THEN 'network' ELSE 'antivm' END FROM tasks WHERE status = 'reported'`)
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

  /** The expected answer of a sorted query: matching ids sorted by `cmp`, then the page. */
  const expectSorted = async (query: string, match: (i: number) => boolean, cmp: (a: number, b: number) => number, offset = 0, limit = 100) => {
    const ids = all.filter(match).sort(cmp)
    const { status, body } = await get(query)
    expect(status, query).toBe(200)
    expect(body.total, query).toBe(ids.length)
    expect(body.tasks.map((t) => t.id), query).toEqual(ids.slice(offset, offset + limit))
    return body
  }

  it('finds tasks by the terms of their reports: domains with their parents, addresses, signatures, plain or by kind', async () => {
    await expectPage('q=domain:shared.example', reported)
    await expectPage('q=domain:example&order=asc&offset=12000&limit=1000', reported, 12_000, 1000, true)
    await expectPage('q=domain:bad.example&limit=1000', (i) => reported(i) && i % 1000 === 3, 0, 1000)
    await expectPage('q=domain:evil-7003.bad.example', (i) => i === 7003)
    await expectPage('q=evil-7003.bad.example', (i) => i === 7003)
    await expectPage('q=shared.example&offset=500', reported, 500)
    await expectPage('q=ip:198.51.100.7', (i) => reported(i) && i % 200 === 7)
    await expectPage('q=sig:network', (i) => reported(i) && i % 16 === 3)
    await expectPage('q=sig:antivm_disk sig:antivm&status=reported&order=asc&offset=3000&limit=50', (i) => reported(i) && i % 16 === 11, 3000, 50, true)
    expect((await get('q=domain:nowhere.example')).body).toEqual({ tasks: [], total: 0 })
    expect((await get('q=sig:network sig:antivm')).body.total).toBe(0)
  })

  it('sorts by score (no score last), by time added or by id, and filters by category', async () => {
    await expectSorted('sort=score', () => true, byScore)
    await expectSorted('sort=score&offset=12400&limit=300', () => true, byScore, 12_400, 300)
    await expectSorted('sort=score&order=asc&limit=50', () => true, (a, b) => byScore(b, a), 0, 50)
    await expectSorted('sort=added&order=asc&offset=7&limit=20', () => true, (a, b) => a - b, 7, 20) // all added at once: by id
    await expectPage('category=url', (i) => categoryOf(i) === 'url')
    await expectPage('category=file,archive&offset=80000', (i) => categoryOf(i) === 'file', 80_000)
    await expectSorted('q=ip:198.51.100.7&sort=score', (i) => reported(i) && i % 200 === 7, byScore)
    await expectSorted('q=domain:shared.example&sort=score&offset=100', reported, byScore, 100)
    await expectSorted('q=sig:network&status=reported&category=file&sort=score&order=asc&offset=10&limit=30',
      (i) => reported(i) && i % 16 === 3 && categoryOf(i) === 'file', (a, b) => byScore(b, a), 10, 30)
    await expectSorted('q=.exe&status=reported,pending&sort=score&offset=9000',
      (i) => nameOf(i).includes('.exe') && ['reported', 'pending'].includes(statusOf(i)), byScore, 9000)
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
      ['order=up', 'order'], ['limit=ten', 'limit'], [`q=${'x'.repeat(1025)}`, 'q'], ['category=exe', 'category'], ['category=file,', 'category'],
      ['sort=size', 'sort'], ['q=hash:zz1234', 'q'], ['q=ip:1.2.3', 'q'], ['q=id:x', 'q'], ['q=domain:1.2.3.4', 'q'], ['q=tag:', 'q'],
      [`q=${'a%20'.repeat(9)}`, 'q']] as const) {
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
    finishRun(h, id)
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    const report = JSON.parse(readFileSync(path.join(h.analysisDir(id), 'reports/report.json'), 'utf8')) as { info: { score: number } }
    expect(typeof report.info.score).toBe('number')
    expect((await h.json<TaskSearchResult>('/aviary/tasks?q=scored')).body.tasks[0]).toMatchObject({ id, score: report.info.score, status: 'reported' })
  })
})
