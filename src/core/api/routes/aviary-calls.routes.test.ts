// GET /aviary/tasks/{id}/calls and /calls/{pid} on a real service: tasks inserted by SQL, their
// analysis folders processed by the behaviour module from an strace log of 20,000 calls (the calls
// store and report.json as processing writes them). Pages, filters and totals are checked against
// the same calls computed here; bad parameters get the 400 that names them, missing things a 404.
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { writeJsonReport } from '../../reporting/json-writer'
import { analyzeBehaviorDetailed } from '../../processing/behavior/index'
import type { CallsListing, CallsPage } from '../../../shared/api/schemas'

const N = 20_000
const PID = 4242

/** Call i of pid PID, as strace prints it; every 7th a connect, every 50th reads a passwd file. */
function line(i: number): string {
  const t = `1700000000.${String(i).padStart(6, '0')}`
  if (i === 0) return `${PID} ${t} execve("/tmp/s", ["/tmp/s"], NULL) = 0`
  if (i % 7 === 0) return `${PID} ${t} connect(3<TCP:[1]>, {sa_family=AF_INET, sin_port=htons(${1000 + (i % 5)}), sin_addr=inet_addr("203.0.113.${i % 200}")}, 16) = -1 ECONNREFUSED (Connection refused)`
  if (i % 50 === 0) return `${PID} ${t} openat(AT_FDCWD</tmp>, "/etc/PassWD-${i}", O_RDONLY) = 3</etc/PassWD-${i}>`
  return `${PID} ${t} openat(AT_FDCWD</tmp>, "f${i}", O_RDONLY) = -1 ENOENT (No such file or directory)`
}
const isConnect = (i: number) => i !== 0 && i % 7 === 0
const isPasswd = (i: number) => i !== 0 && !isConnect(i) && i % 50 === 0
const all = Array.from({ length: N }, (_, i) => i)

describe('GET /aviary/tasks/{id}/calls', () => {
  let h: Harness
  const listing = (id: number) => h.json<CallsListing & { message?: string }>(`/aviary/tasks/${id}/calls`)
  const page = (q: string, pid = PID) => h.json<CallsPage & { message?: string }>(`/aviary/tasks/1/calls/${pid}?${q}`)
  const expectIndexes = async (q: string, match: (i: number) => boolean, offset = 0, limit = 200) => {
    // Positions of the process's calls: 0..N (the fork adds one).
    const want = Array.from({ length: N + 1 }, (_, k) => k).filter(match)
    const { status, body } = await page(q)
    expect(status, JSON.stringify(body).slice(0, 300)).toBe(200)
    expect(body.total).toBe(want.length)
    expect(body.offset).toBe(offset)
    expect(body.calls.map((c) => c.index)).toEqual(want.slice(offset, offset + limit))
    return body
  }

  beforeAll(async () => {
    h = await startHarness()
    for (const id of [1, 2]) {
      h.sql(`INSERT INTO tasks (id, category, target, clock, added_on, status) VALUES (?, 'file', '/x', '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'reported')`, id)
    }
    // Task 1: calls; task 2: a report without calls.
    for (const id of [1, 2]) {
      const dir = h.analysisDir(id)
      mkdirSync(path.join(dir, 'logs'), { recursive: true })
      mkdirSync(path.join(dir, 'reports'), { recursive: true })
      if (id === 1) {
        // The execve, a fork (at position 1), the other calls, and one call of the forked child.
        const lines = [line(0), `${PID} 1700000000.000000 clone(child_stack=NULL, flags=SIGCHLD) = ${PID + 1}`, ...all.slice(1).map(line)]
        lines.push(`${PID + 1} 1700000001.000000 clone(child_stack=NULL, flags=SIGCHLD) = ${PID + 2}`)
        writeFileSync(path.join(dir, 'logs', 'strace.log'), `${lines.join('\n')}\n`)
      }
      const b = await analyzeBehaviorDetailed(dir)
      await writeJsonReport(path.join(dir, 'reports', 'report.json'), { behavior: b.behavior })
    }
  }, 120_000)

  afterAll(async () => {
    await h?.stop()
  })

  it('lists the processes with calls: kept, dropped, per category and API', async () => {
    const { status, body } = await listing(1)
    expect(status).toBe(200)
    const connects = all.filter(isConnect).length
    expect(body).toEqual({
      task_id: 1,
      processes: [
        { pid: PID, process_name: 's', calls: N + 1, dropped: 0, categories: { process: 2, network: connects, file: N - 1 - connects }, apis: { execve: 1, clone: 1, connect: connects, openat: N - 1 - connects } },
        { pid: PID + 1, process_name: 's', calls: 1, dropped: 0, categories: { process: 1 }, apis: { clone: 1 } }
      ]
    })
  })

  it('pages a process\'s calls in order, 200 by default, at most 1000', async () => {
    // Position 0 is the execve, 1 the fork of PID + 1; call i >= 1 of line() is at i + 1.
    const first = await page('')
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ task_id: 1, pid: PID, total: N + 1, offset: 0 })
    expect(first.body.calls).toHaveLength(200)
    expect(first.body.calls[1]).toEqual({
      index: 1, category: 'process', api: 'clone', arguments: { child_stack: null, clone_flags: 'SIGCHLD' }, return_value: PID + 1, status: 1,
      time: 1700000000, tid: PID
    })
    expect(first.body.calls[8]).toEqual({
      index: 8, category: 'network', api: 'connect', arguments: { socket: 3, ip_address: '203.0.113.7', port: 1002, addrlen: 16 },
      return_value: -1, status: 0, time: 1700000000.000007, tid: PID, errno: 'ECONNREFUSED'
    })
    const far = await page('offset=19900&limit=1000')
    expect(far.body.calls.map((c) => c.index)).toEqual(Array.from({ length: 101 }, (_, k) => 19_900 + k))
    const past = await page('offset=50000')
    expect(past.body).toMatchObject({ total: N + 1, offset: 50_000, calls: [] })
  })

  it('filters by category and API (comma lists), and pages the matches', async () => {
    const pos = (match: (i: number) => boolean) => (k: number) => k >= 2 && match(k - 1)
    await expectIndexes('category=network', pos(isConnect))
    await expectIndexes('category=network&offset=100&limit=50', pos(isConnect), 100, 50)
    await expectIndexes('category=process', (k) => k === 0 || k === 1)
    await expectIndexes('api=execve,connect&limit=1000', (k) => k === 0 || pos(isConnect)(k), 0, 1000)
    await expectIndexes('category=file&api=connect', () => false)
    await expectIndexes('category=nothing', () => false)
  })

  it('searches text in any case in the API, argument values and return value, not in key names', async () => {
    const pos = (match: (i: number) => boolean) => (k: number) => k >= 2 && match(k - 1)
    await expectIndexes('q=passwd', pos(isPasswd))
    await expectIndexes('q=PASSWD&category=file&offset=10&limit=5', pos(isPasswd), 10, 5)
    await expectIndexes('q=203.0.113.19&api=connect', (k) => pos(isConnect)(k) && String((k - 1) % 200).startsWith('19'))
    await expectIndexes('q=filepath', () => false)
    await expectIndexes('q=ECONNREFUSED', () => false)
    await expectIndexes('q=execve', (k) => k === 0)
    await expectIndexes('q=%22%5C', () => false)
    const passwd = await page('q=passwd&limit=1')
    expect(passwd.body.calls[0]?.arguments).toMatchObject({ filepath: '/etc/PassWD-50' })
  })

  it('answers 400 naming the parameter for bad values', async () => {
    for (const [q, field] of [
      ['limit=0', 'limit'], ['limit=1001', 'limit'], ['limit=x', 'limit'], ['limit=1.5', 'limit'], ['offset=-1', 'offset'], ['offset=1e3', 'offset'],
      ['category=a%20b', 'category'], ['category=,', 'category'], ['api=a;b', 'api'], [`q=${'x'.repeat(201)}`, 'q']
    ] as const) {
      const { status, body } = await page(q)
      expect(status, q).toBe(400)
      expect(body.message, q).toMatch(new RegExp(`^(querystring/)?${field}\\b`))
    }
  })

  it('answers 404 for an unknown task, pid, a task without calls, and once the task is gone', async () => {
    expect((await listing(99)).status).toBe(404)
    expect((await listing(99)).body.message).toBe('Task not found')
    expect((await listing(2)).status).toBe(404)
    expect((await listing(2)).body.message).toBe('This task has no processed calls')
    expect((await page('', 1)).status).toBe(404)
    expect((await page('', 1)).body.message).toBe(`Task 1 has no calls of pid 1`)
    expect((await h.get(`/aviary/tasks/1/calls/abc`)).status).toBe(404)
    expect((await h.get(`/aviary/tasks/1/calls/${PID}`)).status).toBe(200)
    h.sql('DELETE FROM tasks WHERE id = 1')
    expect((await listing(1)).status).toBe(404)
    expect((await page('')).status).toBe(404)
  })

  it('is documented in /openapi.json', async () => {
    const { body } = await h.json<{ paths: Record<string, unknown> }>('/openapi.json')
    expect(Object.keys(body.paths)).toEqual(expect.arrayContaining(['/aviary/tasks/{id}/calls', '/aviary/tasks/{id}/calls/{pid}']))
  })
})
