// A route the host does not offer, at run time, with real parts (issue 23, item 7):
// - on a routed host (test/guests/routed-lab.ts, lab 6: the rooter as root, `aviary serve` as
//   nobody, guests on its bridge, an upstream playing the internet), tasks that asked for
//   `internet` after machines.json stopped offering it, and FAME's own submission, run on `none`:
//   their `route` says so, the reason is in `errors`, on the timeline and in analysis.log, mitm=1
//   is dropped with its own reason, and the upstream hears nothing from them;
// - on a host without routing (a netns guest, physical driver), FAME's route=internet runs
//   unrouted with the reason noted, and its traffic goes where the guest's network sends it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createRoutedLab, type RoutedLab } from '../guests/routed-lab'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { NetnsGuest } from '../guests/netns-guest'
import type { Harness } from '../service-harness'
import { fame } from '../cuckoo-clients'
import { stages, submitFile, waitForTask } from './e2e-helpers'

const FINAL = ['reported', 'failed_analysis', 'failed_processing']

interface TaskView { status: string; route: string | null; errors: string[] }
const viewOf = async (base: string, id: number): Promise<TaskView> =>
  ((await (await fetch(`${base}/tasks/view/${id}`)).json()) as { task: TaskView }).task
const timelineOf = async (base: string, id: number): Promise<{ stage: string; message: string | null }[]> =>
  ((await (await fetch(`${base}/tasks/timeline/${id}`)).json()) as { timeline: { stage: string; message: string | null }[] }).timeline

/**
 * A Python sample that tries the upstream by address and by name, side by side, and writes what it
 * got to /tmp/probe-<tag>.json.
 */
function probe(lab: RoutedLab, tag: string): string {
  return `import json, socket, threading, urllib.request
R = {}
def tcp():
    try:
        socket.create_connection(('${lab.upstreamIp}', 80), timeout=2).close(); R['tcp'] = True
    except Exception:
        R['tcp'] = False
def dns():
    try:
        R['dns'] = socket.gethostbyname('${tag}.example')
    except Exception:
        R['dns'] = None
def http():
    try:
        R['http'] = urllib.request.urlopen('http://${lab.upstreamIp}/from-${tag}', timeout=3).status
    except Exception:
        R['http'] = None
ts = [threading.Thread(target=f) for f in (tcp, dns, http)]
for t in ts: t.start()
for t in ts: t.join()
json.dump(R, open('/tmp/probe-${tag}.json', 'w'))
`
}

describe('a routed host: a route it does not offer runs on none', () => {
  let lab: RoutedLab
  let s: { proc: import('node:child_process').ChildProcess; url: string }
  let dataDir: string
  const machinesJson = (internet: boolean): unknown => ({
    driver: 'physical',
    tcpdump: lab.tcpdump,
    resultserver: { port: 0 },
    screenshots: { interval: 0 },
    timeouts: { critical: 60 },
    routing: { default: 'none', rooter: path.join(lab.dir, 'rooter.sock'), inetsim: { ip: lab.bridgeIp }, ...(internet ? { internet: { interface: 'up0' } } : {}) },
    machines: lab.guests.map((g, i) => ({ name: `lab${i}`, ip: g.ip, platform: 'linux', interface: g.hostIf, resultserver_ip: lab.bridgeIp }))
  })

  beforeAll(async () => {
    lab = await createRoutedLab({ index: 6, guests: 2 })
    for (const g of lab.guests) await g.startAgent()
    await lab.startRooter()
    dataDir = lab.dataDir(machinesJson(true))
    s = await lab.serve(dataDir)
  }, 120_000)

  afterAll(async () => {
    await lab?.close()
  }, 60_000)

  const probeResult = (id: number, tag: string): Record<string, unknown> => {
    const dir = path.join(dataDir, 'storage', 'analyses', String(id), 'files')
    const f = existsSync(dir) ? readdirSync(dir).find((n) => n.endsWith(`_probe-${tag}.json`)) : undefined
    if (!f) throw new Error(`task ${id} uploaded no probe result`)
    return JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as Record<string, unknown>
  }

  it('tasks queued while internet was offered, and FAME\'s own submission after it was withdrawn: none, with the reason', async () => {
    // lab0 held by a task until the test lets it end, so the next two wait in the queue
    const hold = await submitFile(s, 'hold.sh', '#!/bin/sh\nwhile [ ! -e /tmp/go ]; do sleep 0.2; done\n', { machine: 'lab0', timeout: '150' })
    const deadline = Date.now() + 60_000
    while (!(await stages(s, hold)).includes('sample_running')) {
      if (Date.now() > deadline) throw new Error(`task ${hold} did not start`)
      await sleep(200)
    }
    const late = await submitFile(s, 'probe-late.py', probe(lab, 'late'), { machine: 'lab0', options: 'route=internet', timeout: '40' })
    const mitm = await submitFile(s, 'probe-mitm.py', probe(lab, 'mitm'), { machine: 'lab0', options: 'route=internet,mitm=1', timeout: '40' })
    for (const id of [late, mitm]) expect(await viewOf(s.url, id)).toMatchObject({ status: 'pending', route: null })

    // machines.json stops offering internet (the service follows the file)
    writeFileSync(path.join(dataDir, 'machines.json'), JSON.stringify(machinesJson(false)))
    const until = Date.now() + 20_000
    for (;;) {
      const routes = (await (await fetch(`${s.url}/aviary/routes`)).json()) as { routes: { name: string }[] }
      if (!routes.routes.some((r) => r.name === 'internet')) break
      if (Date.now() > until) throw new Error('machines.json was not reloaded')
      await sleep(200)
    }
    // FAME, as it submits by default (internet access on); lab1 is free, so it runs at once
    const fameId = await fame.submitFile(s.url, { name: 'fame-sample.py', content: Buffer.from(probe(lab, 'fame')) }, { analysisTime: 20 })
    writeFileSync(path.join(lab.guests[0]!.tmpDir, 'go'), '')

    await fame.waitForAnalysis(s.url, fameId, { waitTimeoutMs: 180_000, waitStepMs: 1000 })
    const report = await fame.processReport(s.url, fameId)
    expect(typeof report.score).toBe('number')
    expect(Array.isArray(report.signatures)).toBe(true)
    for (const id of [hold, late, mitm]) expect(await waitForTask(s, id, FINAL, 180_000)).toBe('reported')

    const fallback = "route 'internet' is not offered by this host (it offers none, drop, inetsim): the analysis runs on route none instead, " +
      "which lets no traffic out (Cuckoo's fallback)"
    const upstream = lab.seen('upstream')
    for (const [id, tag] of [[late, 'late'], [mitm, 'mitm'], [fameId, 'fame']] as const) {
      const t = await viewOf(s.url, id)
      expect(t.route, tag).toBe('none')
      expect(t.errors, tag).toContain(fallback)
      expect(await timelineOf(s.url, id), tag).toContainEqual(expect.objectContaining({ stage: 'error', message: fallback }))
      await expect.poll(() => readFileSync(path.join(dataDir, 'storage', 'analyses', String(id), 'analysis.log'), 'utf8'), { timeout: 10_000 })
        .toContain(fallback)
      // contained, judged from outside: the upstream heard nothing of it, and the guest got nothing
      expect(upstream.filter((e) => e.name === `${tag}.example` || e.path === `/from-${tag}`), tag).toEqual([])
      expect(probeResult(id, tag), tag).toEqual({ tcp: false, dns: null, http: null })
    }
    const m = await viewOf(s.url, mitm)
    expect(m.errors).toContain("mitm=1 dropped: route 'internet' fell back to none, which lets no traffic out to decrypt")
    expect((await viewOf(s.url, late)).errors).toEqual([fallback])
    expect(await viewOf(s.url, hold)).toMatchObject({ route: 'none', errors: [] })
  }, 300_000)
})

describe('a host without routing: FAME\'s route=internet runs unrouted, with the reason', () => {
  let guest: NetnsGuest
  let h: Harness

  beforeAll(async () => {
    ;({ guest, h } = await startNetnsAnalysisNode({ index: 59, prefix: 'avrf' }))
  }, 120_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
  })

  it('runs it, notes why, and the guest\'s traffic goes where its network sends it; route=drop is refused', async () => {
    const sample = '#!/bin/sh\nwget -q -O /tmp/page.html http://unrouted.example/from-unrouted || true\n'
    const id = await fame.submitFile(h.url, { name: 'unrouted.sh', content: Buffer.from(sample) }, { analysisTime: 15 })
    await fame.waitForAnalysis(h.url, id, { waitTimeoutMs: 120_000, waitStepMs: 500 })
    const note = "route 'internet' is not applied: this host routes no task (machines.json has no routing section), so the guest's traffic " +
      'goes wherever its network sends it, as for every task here'
    const t = await viewOf(h.url, id)
    expect(t.route).toBeNull()
    expect(t.errors).toEqual([note])
    expect(await timelineOf(h.url, id)).toContainEqual(expect.objectContaining({ stage: 'error', message: note }))
    expect(guest.dns.queries).toContain('unrouted.example')
    expect(guest.http.requests.some((r) => r.url === '/from-unrouted')).toBe(true)
    await expect(fame.submitFile(h.url, { name: 'x.sh', content: Buffer.from('#!/bin/sh\n') }, { allowInternetAccess: false }))
      .rejects.toThrow(/KeyError: 'task_id' \(HTTP 400 .*options: route 'drop' cannot be honoured: this host routes no task/)
  }, 150_000)
})
