// The shared client (src/shared/api/client.ts) against a real service: each route's answer is what
// its response schema (src/shared/api/responses.ts, schemas.ts) says, exactly, and the client's
// check of that answer passes, so the client and the routes cannot drift apart unseen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { AnalysisClient, ANSWERS, type AnswerShape } from '../../shared/api/client'
import {
  ConnectionList, MachineList, MachineView, MemoryList, SampleView, SubmitResult, TaskCreated, TaskDeleted, TaskList, TaskRebooted,
  TaskRereported, TaskRescheduled, TaskView, Timeline, VpnStatus
} from '../../shared/api/responses'
import { ARTIFACTS } from '../storage/layout'
import { form, startHarness, type Harness } from '../../../test/service-harness'

let h: Harness
let client: AnalysisClient
let fileTask: number
const machines = { driver: 'kvm', resultserver: { ip: '192.168.122.1', port: 2042 }, machines: [{ name: 'win7', label: 'cuckoo1', ip: '192.168.122.101' }] }

beforeAll(async () => {
  h = await startHarness({ machines })
  client = new AnalysisClient(h.url)
  fileTask = (await client.createFile(new Blob(['MZ sample']), 'sample.exe', { tags: 'x64', memory: true })).task_id
  mkdirSync(path.join(h.analysisDir(fileTask), ARTIFACTS.processDumps))
  writeFileSync(path.join(h.analysisDir(fileTask), ARTIFACTS.processDumps, '1234-1.dmp'), 'dump')
})
afterAll(async () => h?.stop())

/** The exact shape (additional properties refused) of a response schema, as a test of what was served. */
function exactly(schema: TSchema): (value: unknown) => string | null {
  const strict = (s: unknown): unknown => {
    if (Array.isArray(s)) return s.map(strict)
    if (s === null || typeof s !== 'object') return s
    const o = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, strict(v)]))
    return o.type === 'object' && o.properties !== undefined && o.additionalProperties === undefined ? { ...o, additionalProperties: false } : o
  }
  const v = Compile(strict(schema) as TSchema)
  return (value) => (v.Check(value) ? null : JSON.stringify(v.Errors(value)[0]))
}

async function served(method: 'GET' | 'POST', path: string, body?: FormData): Promise<unknown> {
  const res = await fetch(h.url + path, { method, body })
  expect(res.status, path).toBe(200)
  return res.json()
}

describe('the response schemas and the shared client', () => {
  it('each answer is its schema exactly, and passes the client check where the client reads it', async () => {
    const url = (await served('POST', '/tasks/create/url', form({ url: 'http://example.com/' }))) as { task_id: number }
    const cases: Array<[string, TSchema, unknown, AnswerShape<TSchema> | null]> = [
      ['create/url', TaskCreated, url, ANSWERS.created],
      ['create/submit', SubmitResult, await served('POST', '/tasks/create/submit', form({ strings: 'http://example.org/' })), ANSWERS.submitted],
      ['view', TaskView, await served('GET', `/tasks/view/${fileTask}`), ANSWERS.task],
      ['list', TaskList, await served('GET', '/tasks/list'), ANSWERS.tasks],
      ['sample', SampleView, await served('GET', '/files/view/id/1'), ANSWERS.sample],
      ['timeline', Timeline, await served('GET', `/tasks/timeline/${fileTask}`), ANSWERS.timeline],
      ['machines', MachineList, await served('GET', '/machines/list'), ANSWERS.machines],
      ['machine', MachineView, await served('GET', '/machines/view/win7'), null],
      ['memory', MemoryList, await served('GET', `/memory/list/${fileTask}`), null],
      ['vpn', VpnStatus, await served('GET', '/vpn/status'), null],
      ['connections', ConnectionList, await served('GET', '/aviary/connections'), null],
      ['rereport', TaskRereported, await served('GET', `/tasks/rereport/${fileTask}`), ANSWERS.rereported],
      ['reboot', TaskRebooted, await served('GET', `/tasks/reboot/${fileTask}`), ANSWERS.rebooted],
      ['reschedule', TaskRescheduled, await served('GET', `/tasks/reschedule/${url.task_id}`), ANSWERS.rescheduled],
      ['delete', TaskDeleted, await served('GET', `/tasks/delete/${url.task_id}`), ANSWERS.deleted]
    ]
    for (const [name, schema, body, check] of cases) {
      expect(exactly(schema)(body), name).toBeNull()
      if (check) expect(check.problem(body), name).toBeNull()
    }
  })

  it('the client reaches each route by its path and returns what the route answered', async () => {
    const { task } = await client.task(fileTask)
    expect(task).toMatchObject({ id: fileTask, tags: ['x64'], memory: true, category: 'file' })
    expect((await client.tasks(10, 0, { status: 'pending' })).tasks.map((t) => t.id)).toContain(fileTask)
    expect((await client.sampleById(task.sample_id!)).sample.tasks).toContain(fileTask)
    expect((await client.timeline(fileTask)).timeline.map((e) => e.stage)).toContain('queued')
    expect((await client.machines()).machines.map((m) => m.name)).toEqual(['win7'])
    expect(await client.rereport(fileTask)).toEqual({ success: false })
    const copy = await client.reschedule(fileTask)
    expect(copy.task_id).toBeGreaterThan(fileTask)
    expect((await client.task(fileTask)).task.status).toBe('recovered')
    expect(await client.deleteTask(copy.task_id!)).toEqual({ status: 'OK' })
  })

  it('a cancelled call ends with the caller\'s abort, not as an unreachable server', async () => {
    const ac = new AbortController()
    ac.abort()
    await expect(client.task(fileTask, { signal: ac.signal })).rejects.toMatchObject({ name: 'AbortError' })
  })
})
