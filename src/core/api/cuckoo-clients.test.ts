// Cuckoo clients unchanged (issue 23, item 7): FAME's Cuckoo module and Rapid7's Cuckoo plugin
// replayed against the real service (test/cuckoo-clients.ts: their bytes, the keys they read), on
// a host that offers fewer routes than FAME asks for and on one that routes nothing. The run
// itself (the route that ran, the reason in errors and on the timeline) is test/e2e/route-fallback.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { startHarness, type Harness } from '../../../test/service-harness'
import { fame, rapid7 } from '../../../test/cuckoo-clients'

const run = promisify(execFile)
type View = { task: Record<string, unknown> & { status: string } }
const sample = { name: 'invoice.exe', content: Buffer.from('MZ not really a program') }

describe('a host whose routing offers none, drop and inetsim (no internet)', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startHarness({ machines: { routing: { default: 'none', inetsim: { ip: '192.168.122.1' } }, machines: [] } })
  })
  afterAll(async () => h?.stop())
  const view = async (id: number) => (await h.json<View>(`/tasks/view/${id}`)).body.task

  it('FAME, internet access on (route=internet, not offered): gets a task id; the run will take none', async () => {
    const id = await fame.submitFile(h.url, sample)
    expect(await view(id)).toMatchObject({
      status: 'pending', options: 'route=internet', timeout: 300, enforce_timeout: true, route: null, errors: [], target: expect.stringMatching(/invoice\.exe$/)
    })
    const url = await fame.submitUrl(h.url, 'http://fame.example/landing', { analysisTime: 60 })
    expect(await view(url)).toMatchObject({ category: 'url', target: 'http://fame.example/landing', options: 'route=internet', timeout: 60 })
  })

  it('FAME, internet access off (route=drop, offered): gets a task id', async () => {
    const id = await fame.submitFile(h.url, sample, { allowInternetAccess: false })
    expect((await view(id)).options).toBe('route=drop')
    expect(await fame.submitUrl(h.url, 'http://fame.example/off', { allowInternetAccess: false })).toBeGreaterThan(id)
  })

  it('mitm=1 on a route that will fall back is accepted (dropped at run time); asked for on none it is a 400 naming options', async () => {
    const ok = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://x.example/', options: 'route=tor,mitm=1' }))
    expect(ok.status).toBe(200)
    const bad = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://x.example/', options: 'route=none,mitm=1' }))
    expect(bad).toMatchObject({ status: 400, body: { message: "options: mitm=1 needs a route with traffic to decrypt (internet, inetsim or a VPN), not 'none'" } })
    const garbage = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://x.example/', options: 'route=tor,mitm=perhaps' }))
    expect(garbage).toMatchObject({ status: 400, body: { message: expect.stringMatching(/^options: mitm 'perhaps' is not one of/) } })
  })

  it('GET /aviary/routes lists only the real routes, and aviary submit --route still submits', async () => {
    const routes = (await h.json<{ routed: boolean; routes: { name: string }[] }>('/aviary/routes')).body
    expect(routes.routed).toBe(true)
    expect(routes.routes.map((r) => r.name)).toEqual(['none', 'drop', 'inetsim'])
    const { stdout } = await run(process.execPath, [path.resolve('bin/aviary.js'), 'submit', '--remote', h.url, '--url', '--json', '--route', 'internet',
      'http://cli.example/'])
    const [out] = JSON.parse(stdout) as { task_id: number }[]
    expect((await view(out!.task_id)).options).toBe('route=internet')
  })
})

describe('a host without a routing section', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startHarness({ machines: { machines: [] } })
  })
  afterAll(async () => h?.stop())

  it('FAME with internet access runs unrouted, as every task here (a task id)', async () => {
    const id = await fame.submitFile(h.url, sample)
    expect((await h.json<View>(`/tasks/view/${id}`)).body.task).toMatchObject({ status: 'pending', options: 'route=internet' })
    expect((await h.json<{ routed: boolean }>('/aviary/routes')).body.routed).toBe(false)
  })

  it('containment it cannot give (drop, a fake internet, a VPN) and mitm=1 are refused with a 400 that says why', async () => {
    // FAME with internet access off: refused rather than run unrouted; FAME stops on the missing task_id
    await expect(fame.submitFile(h.url, sample, { allowInternetAccess: false })).rejects.toThrow(/KeyError: 'task_id' \(HTTP 400 .*route 'drop' cannot be honoured/)
    const refused = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://x.example/', options: 'route=drop' }))
    expect(refused).toMatchObject({
      status: 400,
      body: {
        message: "options: route 'drop' cannot be honoured: this host routes no task (machines.json has no routing section), so every guest's " +
          "traffic goes wherever its network sends it; add a routing section (docs/network.md), or submit without route="
      }
    })
    for (const options of ['route=inetsim', 'route=vpn0', 'mitm=1', 'route=internet,mitm=1']) {
      const r = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://x.example/', options }))
      expect(r.status, options).toBe(400)
      expect(String(r.body.message), options).toMatch(/^options: (route '[a-z0-9]+'|mitm=1) cannot be honoured: this host routes no task/)
    }
    expect((await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://x.example/', options: 'route=none,mitm=0' }))).status).toBe(200)
  })
})

describe('Rapid7: reschedule a task, then the same task again with priority 2', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startHarness()
  })
  afterAll(async () => h?.stop())

  it('gets a new copy each time, with the copy\'s task_id', async () => {
    const r = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://r7.example/', options: 'route=none', tags: 'a' }))
    const id = r.body.task_id as number
    h.sql("UPDATE tasks SET status = 'reported', started_on = added_on, completed_on = added_on WHERE id = ?", id)
    const first = await rapid7.rescheduleTask(h.url, id)
    const second = await rapid7.rescheduleTask(h.url, id, 2)
    const third = await rapid7.rescheduleTask(h.url, first.task_id)
    expect(new Set([id, first.task_id, second.task_id, third.task_id]).size).toBe(4)
    const task = async (t: number) => (await h.json<View>(`/tasks/view/${t}`)).body.task
    expect(await task(id)).toMatchObject({ status: 'recovered' })
    expect(await task(first.task_id)).toMatchObject({ status: 'recovered', priority: 1, target: 'http://r7.example/', options: 'route=none', tags: ['a'] })
    expect(await task(second.task_id)).toMatchObject({ status: 'pending', priority: 2, target: 'http://r7.example/', options: 'route=none', tags: ['a'] })
    expect(await task(third.task_id)).toMatchObject({ status: 'pending', priority: 1 })
    // the older generation reads only status; both are in the one answer
    expect((await h.json(`/tasks/reschedule/${id}`)).body).toEqual({ status: 'OK', task_id: expect.any(Number) })
  })
})
