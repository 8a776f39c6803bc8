// The guest is hostile: a real service runs one task on each of 14 network-namespace guests whose
// "agent" misbehaves in one way (test/guests/hostile-agent.mjs: endless, 1 GiB, dripping, stalled,
// garbage, redirecting, flapping answers, and a guest that floods the result server), while a 15th
// guest with the real agent analyses a real sample. What a user sees through the API is checked:
// each hostile task ends within its limit (timeout + critical timeout) with a reason that names
// what the agent did (in errors, on the timeline and in analysis.log), the honest task is reported
// clean, the service still answers, and its memory stays where it was.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { createNetnsGuest, type NetnsGuest } from '../guests/netns-guest'
import { startHarness, type Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'

const TIMEOUT = 10
const CRITICAL = 10
const LIMIT_S = TIMEOUT + CRITICAL
const MiB = 1024 * 1024

interface Scenario {
  route: string
  behaviour: string
  status: 'failed_analysis' | 'reported'
  reason: RegExp
}

export const SCENARIOS: Scenario[] = [
  { route: '/', behaviour: 'huge', status: 'failed_analysis', reason: /^the agent misbehaved: asking the agent what it is \(GET \/ on .*announced an answer of 1073741824 bytes/ },
  { route: '/', behaviour: 'endless', status: 'failed_analysis', reason: /^the agent misbehaved: asking the agent what it is \(GET \/ on .*longer than the 65536 bytes/ },
  { route: '/', behaviour: 'drip', status: 'failed_analysis', reason: /^the agent misbehaved: asking the agent what it is \(GET \/ on .*still sending its answer to GET \// },
  { route: '/', behaviour: 'html', status: 'failed_analysis', reason: /not a Cuckoo-compatible agent \(GET \/ gave HTTP 200, not JSON\)/ },
  { route: '/status', behaviour: 'endless', status: 'failed_analysis', reason: /^the agent misbehaved: 3 status polls .*longer than the 65536 bytes/ },
  { route: '/status', behaviour: 'drip', status: 'failed_analysis', reason: /still sending its answer to GET \/status/ },
  { route: '/status', behaviour: 'stall', status: 'failed_analysis', reason: /^critical timeout: .*the last status poll failed: .*did not answer within 5 s/ },
  { route: '/status', behaviour: 'flap', status: 'failed_analysis', reason: /^critical timeout: .*the agent's status changed \d+ times/ },
  { route: '/status', behaviour: 'garbage', status: 'failed_analysis', reason: /^the agent misbehaved: 3 status polls .*not a JSON object/ },
  { route: '/status', behaviour: 'redirect', status: 'failed_analysis', reason: /^the agent misbehaved: 3 status polls .*HTTP 302/ },
  { route: '/status', behaviour: 'badstatus', status: 'failed_analysis', reason: /^the agent misbehaved: 3 status polls .*not a string/ },
  { route: '/store', behaviour: 'drip', status: 'failed_analysis', reason: /^critical timeout: .*still sending its answer to POST \/store/ },
  { route: '/extract', behaviour: 'huge', status: 'failed_analysis', reason: /^the agent misbehaved: uploading the analyzer .*1073741824 bytes/ },
  { route: '/status', behaviour: 'cap', status: 'reported', reason: /sent more than the task's limit of 8388608 bytes \(task_max_size\)/ }
]

const HOSTILE = path.resolve('test/guests/hostile-agent.mjs')
const AGENT = [process.execPath, path.resolve('bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000']
const FIRST_INDEX = 30

interface TaskView { status: string; errors: string[]; started_on: string | null; completed_on: string | null }

describe('a hostile agent reaches no further than its own task', () => {
  const guests: NetnsGuest[] = []
  let h: Harness
  let honest: NetnsGuest

  beforeAll(async () => {
    for (let i = 0; i <= SCENARIOS.length; i++) guests.push(await createNetnsGuest({ index: FIRST_INDEX + i, prefix: 'avha' }))
    honest = guests[SCENARIOS.length]!
    await Promise.all(SCENARIOS.map((s, i) => guests[i]!.startAgent([process.execPath, HOSTILE, s.route, s.behaviour])))
    await honest.startAgent(AGENT)
    h = await startHarness({
      engine: true,
      machines: {
        driver: 'physical',
        resultserver: { port: 0, task_max_size: 8 * MiB },
        timeouts: { critical: CRITICAL },
        screenshots: { interval: 0 },
        machines: guests.map((g, i) => ({
          name: `hostile${i}`, ip: g.guestIp, platform: 'linux', interface: g.hostIf, resultserver_ip: g.hostIp
        }))
      }
    })
  }, 120_000)

  afterAll(async () => {
    await h?.stop()
    for (const g of guests) await g.close()
  }, 120_000)

  it('each hostile task ends within its limit with the reason; the honest one is reported; memory stays', async () => {
    const rss: number[] = [process.memoryUsage().rss]
    const sampler = setInterval(() => rss.push(process.memoryUsage().rss), 250)
    const ids = await Promise.all(SCENARIOS.map((_s, i) =>
      submitFile(h, 'sample.sh', '#!/bin/sh\necho hostile\n', { machine: `hostile${i}`, timeout: String(TIMEOUT) })))
    const honestId = await submitFile(h, 'honest.sh', '#!/bin/sh\necho honest > /tmp/honest.txt\n', { machine: `hostile${SCENARIOS.length}`, timeout: String(TIMEOUT) })
    const finals = ['reported', 'failed_analysis', 'failed_processing']
    await Promise.all([...ids, honestId].map((id) => waitForTask(h, id, finals, 120_000)))
    clearInterval(sampler)
    rss.push(process.memoryUsage().rss)

    const view = async (id: number): Promise<TaskView> => (await h.json<{ task: TaskView }>(`/tasks/view/${id}`)).body.task
    for (const [i, s] of SCENARIOS.entries()) {
      const id = ids[i]!
      const t = await view(id)
      const label = `${s.route} ${s.behaviour} (task ${id}): ${JSON.stringify(t.errors)}`
      expect(t.status, label).toBe(s.status)
      expect(t.errors.some((e) => s.reason.test(e)), label).toBe(true)
      // Within the limit (generous: teardown and a loaded machine), never "still running at 75 s of 30".
      const held = (Date.parse(`${t.completed_on!.replace(' ', 'T')}Z`) - Date.parse(`${t.started_on!.replace(' ', 'T')}Z`)) / 1000
      expect(held, label).toBeLessThanOrEqual(LIMIT_S + 15)
      const timeline = (await h.json<{ timeline: { stage: string; message: string | null }[] }>(`/tasks/timeline/${id}`)).body.timeline
      const log = readFileSync(path.join(h.dataDir, 'storage', 'analyses', String(id), 'analysis.log'), 'utf8')
      const said = t.errors.find((e) => s.reason.test(e))!
      if (s.status === 'failed_analysis') {
        expect(timeline.find((e) => e.stage === 'failed')?.message, label).toBe(said)
        expect(log, label).toContain(said)
      } else {
        expect(timeline.some((e) => e.stage === 'error' && e.message === said), label).toBe(true)
        expect(timeline.find((e) => e.stage === 'finished')?.message, label).toMatch(/ended early/)
      }
    }

    const ok = await view(honestId)
    expect(ok).toMatchObject({ status: 'reported', errors: [] })
    expect(honest.tmpDir && readFileSync(path.join(honest.tmpDir, 'honest.txt'), 'utf8')).toBe('honest\n')
    expect((await h.get('/cuckoo/status')).status).toBe(200)
    // The service's memory stays within tens of MB of where it was (it reached 2.29 GB before).
    const peak = Math.max(...rss) - rss[0]!
    expect(peak / MiB, `RSS grew by ${Math.round(peak / MiB)} MiB at its peak`).toBeLessThan(200)
  }, 240_000)
})
