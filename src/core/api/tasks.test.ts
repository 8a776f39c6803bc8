// Task listing, viewing and management over a real socket, with statuses set directly in the
// database file where the engine (a later issue) would set them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, writeFileSync, unlinkSync } from 'node:fs'
import path from 'node:path'
import { Compile } from 'typebox/compile'
import { Task } from '../../shared/api/schemas'
import { form, startHarness, type Harness } from '../../../test/service-harness'

type T = Record<string, unknown> & { id: number }
let h: Harness
const ids: number[] = []

async function createUrl(u: string, fields: Record<string, string> = {}) {
  const r = await h.post('/tasks/create/url', new URLSearchParams({ url: u, ...fields }))
  expect(r.status).toBe(200)
  return r.body.task_id as number
}
const list = async (p: string) => (await h.json<{ tasks: T[] }>(p)).body.tasks

beforeAll(async () => {
  h = await startHarness()
  for (let i = 0; i < 6; i++) ids.push(await createUrl(`http://example.com/${i}`, { owner: i % 2 ? 'bob' : 'alice' }))
  // ids[0] and ids[3] finished, ids[3] earlier; ids[1] running
  h.sql(`UPDATE tasks SET status='reported', started_on='2026-01-01 10:00:00', completed_on='2026-01-01 10:05:00' WHERE id=?`, ids[0])
  h.sql(`UPDATE tasks SET status='reported', started_on='2026-01-01 09:00:00', completed_on='2026-01-01 09:02:30' WHERE id=?`, ids[3])
  h.sql(`UPDATE tasks SET status='running', started_on='2026-01-01 11:00:00' WHERE id=?`, ids[1])
})
afterAll(async () => h.stop())

describe('GET /tasks/list', () => {
  it('lists unfinished tasks by id, then finished ones by completion', async () => {
    const tasks = await list('/tasks/list')
    expect(tasks.map((t) => t.id)).toEqual([ids[1], ids[2], ids[4], ids[5], ids[3], ids[0]])
    const done = tasks.find((t) => t.id === ids[3])!
    expect(done).toMatchObject({ status: 'reported', completed_on: '2026-01-01 09:02:30', duration: 150 })
    expect(tasks.find((t) => t.id === ids[2])).toMatchObject({ duration: -1, completed_on: null, started_on: null })
    expect(String(tasks[0]!.added_on)).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  })

  it('pages with limit and offset, and the /v1 alias agrees', async () => {
    expect((await list('/tasks/list/2')).map((t) => t.id)).toEqual([ids[1], ids[2]])
    expect((await list('/tasks/list/2/3')).map((t) => t.id)).toEqual([ids[5], ids[3]])
    expect(await list('/tasks/list/0')).toEqual([])
    expect(await list('/v1/tasks/list/2/3')).toEqual(await list('/tasks/list/2/3'))
  })

  it('filters by status, owner and completed_after', async () => {
    expect((await list('/tasks/list?status=reported')).map((t) => t.id)).toEqual([ids[3], ids[0]])
    expect((await list('/tasks/list?owner=bob')).map((t) => t.id)).toEqual([ids[1], ids[5], ids[3]])
    const after = Math.floor(new Date(2026, 0, 1, 9, 30, 0).getTime() / 1000)
    expect((await list(`/tasks/list?completed_after=${after}&status=reported`)).map((t) => t.id)).toEqual([ids[0]])
  })

  // non-digit path integers are no route (404, as Flask's int converter): ids.test.ts
  for (const p of ['/tasks/list/2000000', '/tasks/list?status=bogus', '/tasks/list?completed_after=yesterday']) {
    it(`answers 400 for ${p}`, async () => {
      const { status, body } = await h.json<{ message: string }>(p)
      expect(status).toBe(400)
      expect(body.message).toMatch(/^(limit|offset|status|completed_after): /)
    })
  }
})

describe('the task shape', () => {
  it('serves tasks (built by the database) exactly as the documented schema says', async () => {
    await h.post('/tasks/create/file', form({ tags: 'a', options: 'x=1', clock: '01-02-2026 03:04:05' }, [{ name: 'shape.exe', data: 'shape' }]))
    const check = Compile(Task)
    const tasks = await list('/tasks/list')
    expect(tasks.length).toBeGreaterThan(6)
    for (const t of tasks) {
      expect([...check.Errors(t)], JSON.stringify(t)).toEqual([])
      expect(Object.keys(t).sort()).toEqual(Object.keys(Task.properties).sort())
    }
    const file = tasks.find((t) => t.category === 'file')!
    expect(Object.keys(file.sample as object).sort()).toEqual(['crc32', 'file_size', 'file_type', 'id', 'md5', 'sha1', 'sha256', 'sha512', 'ssdeep'])
  })
})

describe('GET /tasks/view and /tasks/sample', () => {
  it('shows a task, 404s an unknown one or a non-digit id and 400s id 0', async () => {
    const ok = await h.json<{ task: T }>(`/tasks/view/${ids[2]}`)
    expect(ok.status).toBe(200)
    expect(ok.res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(Object.keys(ok.body.task)).toEqual(expect.arrayContaining([
      'id', 'category', 'target', 'sample_id', 'package', 'timeout', 'priority', 'options', 'machine', 'platform',
      'tags', 'custom', 'owner', 'memory', 'enforce_timeout', 'guest', 'errors', 'status', 'added_on', 'completed_on'
    ]))
    expect(await h.json(`/tasks/view/999999`)).toMatchObject({ status: 404, body: { message: 'Task not found' } })
    expect(await h.json(`/tasks/view/x1`)).toMatchObject({ status: 404, body: { message: expect.stringMatching(/id must be decimal digits/) } })
    expect((await h.json(`/tasks/view/0`)).status).toBe(400)
  })

  it('lists the tasks of a sample', async () => {
    const a = await h.post('/tasks/create/file', form({}, [{ name: 's.bin', data: 'sample tasks' }]))
    const b = await h.post('/tasks/create/file', form({}, [{ name: 's2.bin', data: 'sample tasks' }]))
    const sampleId = (await h.json<{ task: T }>(`/tasks/view/${a.body.task_id}`)).body.task.sample_id
    expect((await list(`/tasks/sample/${sampleId}`)).map((t) => t.id)).toEqual([a.body.task_id, b.body.task_id])
    expect(await list('/tasks/sample/999999')).toEqual([])
  })
})

describe('task management', () => {
  it('deletes a task and its analysis folder; refuses a running one', async () => {
    const id = await createUrl('http://example.com/del')
    const dir = h.analysisDir(id)
    writeFileSync(path.join(dir, 'analysis.log'), 'x')
    expect(await h.json(`/tasks/delete/${id}`)).toMatchObject({ status: 200, body: { status: 'OK' } })
    expect(existsSync(dir)).toBe(false)
    expect((await h.json(`/tasks/view/${id}`)).status).toBe(404)
    expect((await h.json(`/tasks/delete/${id}`)).status).toBe(404)
    const running = await h.json(`/tasks/delete/${ids[1]}`)
    expect(running).toMatchObject({ status: 500, body: { message: 'The task is currently being processed, cannot delete' } })
    expect((await h.json(`/tasks/view/${ids[1]}`)).status).toBe(200)
  })

  it('reschedules: the old task becomes recovered, a pending copy is queued', async () => {
    const id = await createUrl('http://example.com/re', { priority: '2', tags: 'a,b', owner: 'carol' })
    const r = await h.json<{ status: string; task_id: number }>(`/tasks/reschedule/${id}`)
    expect(r.status).toBe(200)
    expect(r.body.status).toBe('OK')
    const copy = (await h.json<{ task: T }>(`/tasks/view/${r.body.task_id}`)).body.task
    expect(copy).toMatchObject({ status: 'pending', target: 'http://example.com/re', priority: 2, tags: ['a', 'b'], owner: 'carol' })
    expect((await h.json<{ task: T }>(`/tasks/view/${id}`)).body.task.status).toBe('recovered')
    const withPriority = await h.json<{ task_id: number }>(`/v1/tasks/reschedule/${r.body.task_id}/3`)
    expect((await h.json<{ task: T }>(`/tasks/view/${withPriority.body.task_id}`)).body.task.priority).toBe(3)
    expect(await h.json('/tasks/reschedule/999999')).toMatchObject({ status: 404, body: { message: 'There is no analysis with the specified ID' } })
    expect((await h.json(`/tasks/reschedule/${id}/7`)).status).toBe(400)
  })

  it('reschedules a task any number of times, each call a new copy (Cuckoo 2.0.7); refuses a running one (409) and queues nothing', async () => {
    const id = await createUrl('http://example.com/twice', { priority: '1', options: 'free=yes' })
    const total = async () => (await list('/tasks/list')).length
    const before = await total()
    const copies: number[] = []
    for (const p of [`/tasks/reschedule/${id}`, `/tasks/reschedule/${id}/2`, `/v1/tasks/reschedule/${id}/0`]) {
      const r = await h.json<{ status: string; task_id: number }>(p)
      expect(r, p).toMatchObject({ status: 200, body: { status: 'OK', task_id: expect.any(Number) } })
      copies.push(r.body.task_id)
    }
    expect(new Set(copies).size).toBe(3)
    expect(await total()).toBe(before + 3)
    expect((await h.json<{ task: T }>(`/tasks/view/${id}`)).body.task.status).toBe('recovered')
    const views = await Promise.all(copies.map(async (c) => (await h.json<{ task: T }>(`/tasks/view/${c}`)).body.task))
    // priority 0 keeps the old one, as in Cuckoo
    expect(views.map((t) => [t.status, t.priority, t.options, t.target])).toEqual([
      ['pending', 1, 'free=yes', 'http://example.com/twice'], ['pending', 2, 'free=yes', 'http://example.com/twice'], ['pending', 1, 'free=yes', 'http://example.com/twice']
    ])
    const running = await total()
    expect(await h.json(`/v1/tasks/reschedule/${ids[1]}/2`)).toMatchObject({
      status: 409,
      body: { message: expect.stringMatching(/^id: task \d+ cannot be rescheduled: its analysis is running; .*\(a task cannot go from running to recovered\)$/), code: 'AVIARY_TASK_STATE' }
    })
    expect((await h.json<{ task: T }>(`/tasks/view/${ids[1]}`)).body.task.status).toBe('running')
    expect(await total()).toBe(running)
  })

  it('a copy keeps a clock that was asked for, and takes its own submission time otherwise', async () => {
    const asked = await createUrl('http://example.com/clock', { clock: '01-31-2026 13:45:00' })
    const plain = await createUrl('http://example.com/noclock')
    h.sql("UPDATE tasks SET added_on = '2026-01-01 08:00:00', clock = '2026-01-01 08:00:00' WHERE id = ?", plain)
    const copyOf = async (id: number) => {
      const r = await h.json<{ task_id: number }>(`/tasks/reschedule/${id}`)
      return (await h.json<{ task: T }>(`/tasks/view/${r.body.task_id}`)).body.task
    }
    expect((await copyOf(asked)).clock).toBe('2026-01-31 13:45:00')
    const copy = await copyOf(plain)
    expect(copy.clock).toBe(copy.added_on)
    expect(copy.clock).not.toBe('2026-01-01 08:00:00')
  })

  it('reboots a file task; refuses URL tasks and missing files', async () => {
    const a = await h.post('/tasks/create/file', form({}, [{ name: 'r.exe', data: 'reboot me' }]))
    const id = a.body.task_id as number
    const r = await h.json<{ task_id: number; reboot_id: number }>(`/tasks/reboot/${id}`)
    expect(r.body.task_id).toBe(id)
    const reboot = (await h.json<{ task: T }>(`/tasks/view/${r.body.reboot_id}`)).body.task
    expect(reboot).toMatchObject({ category: 'file', package: 'reboot', custom: String(id), status: 'pending' })
    expect(await h.json(`/tasks/reboot/${ids[2]}`)).toMatchObject({ status: 404, body: { message: 'Error creating reboot task' } })
    const gone = await h.post('/tasks/create/file', form({}, [{ name: 'gone.exe', data: 'will vanish' }]))
    const target = (await h.json<{ task: { target: string } }>(`/tasks/view/${gone.body.task_id}`)).body.task.target
    unlinkSync(target)
    expect((await h.json(`/tasks/reboot/${gone.body.task_id}`)).status).toBe(404)
  })

  it('rereports reported tasks only', async () => {
    const id = await createUrl('http://example.com/rr')
    expect(await h.json(`/tasks/rereport/${id}`)).toMatchObject({ status: 200, body: { success: false } })
    h.sql(`UPDATE tasks SET status='reported', completed_on='2026-01-02 00:00:00' WHERE id=?`, id)
    expect(await h.json(`/tasks/rereport/${id}`)).toMatchObject({ status: 200, body: { success: true } })
    const task = (await h.json<{ task: T }>(`/tasks/view/${id}`)).body.task
    expect(task.status).toBe('completed')
    expect(task.completed_on).not.toBe('2026-01-02 00:00:00')
    expect((await h.json('/tasks/rereport/999999')).status).toBe(404)
  })
})

describe('pages under concurrent load', () => {
  it('sends every page whole and right while many are in flight', async () => {
    // 400 more tasks with long targets, so that pages are tens of KB and their bodies are lent
    // buffers that are reused from one response to the next.
    h.sql(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
      INSERT INTO tasks (category, target, clock, added_on, status)
      SELECT 'url', 'http://load.example/' || i || '/' || printf('%.*c', 400 + i, 'x'), '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'pending' FROM n`)
    const all = (await list('/tasks/list')).map((t) => t.id)
    expect(all.length).toBeGreaterThan(400)
    let seed = 3
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n
    for (let round = 0; round < 5; round++) {
      const pages = Array.from({ length: 40 }, () => ({ limit: 20 + rand(130), offset: rand(all.length) }))
      const got = await Promise.all(pages.map(async (p) => (await list(`/tasks/list/${p.limit}/${p.offset}`)).map((t) => t.id)))
      got.forEach((ids, i) => expect(ids).toEqual(all.slice(pages[i]!.offset, pages[i]!.offset + pages[i]!.limit)))
    }
  })
})
