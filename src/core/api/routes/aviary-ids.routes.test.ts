// The IDS in a running service: a rule set imported through POST /aviary/ids/rules (a .rules file
// as the body) is listed and removed; a task whose real capture (tcpdump on a loopback address of
// this test's own, 127.91.27.1: a dynamic-DNS lookup and an HTTP request) is processed by the
// engine has the `suricata` section in its report (/tasks/report), with the imported rule's alert
// and Aviary's own, and is found by `alert:` (sid, the signature's text and its start).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { finishRun, startHarness, type Harness } from '../../../../test/service-harness'
import { submitFile, waitForTask } from '../../../../test/e2e/e2e-helpers'
import { captureLoopback } from '../../../../test/loopback-capture'
import type { TaskSearchResult } from '../../../shared/api/ui-schemas'

const RULE = 'alert http any any -> any any (msg:"LOCAL TEST gate request"; http.uri; content:"/gate.php"; classtype:trojan-activity; sid:3100001; rev:1;)\n'

describe('/aviary/ids/rules and the suricata section', () => {
  let h: Harness
  let pcap: Buffer
  const send = (query: string, body: string | Buffer, type = 'application/octet-stream') =>
    fetch(`${h.url}/aviary/ids/rules?${query}`, { method: 'POST', headers: { 'content-type': type }, body })

  beforeAll(async () => {
    pcap = await captureLoopback('127.91.27.1', { resolve: ['c2-gate.duckdns.org'], answer: '203.0.113.80', fetch: ['http://c2-gate.duckdns.org/gate.php?id=3'] })
    h = await startHarness({ engine: true, machines: { machines: [] } })
  }, 60_000)
  afterAll(async () => { await h?.stop() })

  it('imports, lists and removes a rule set; bad input is a 400 naming the field', async () => {
    const ok = await send('filename=local.rules', RULE)
    expect(ok.status).toBe(200)
    expect(await ok.json()).toMatchObject({ ruleset: { name: 'local', kind: 'imported', rules: 1, files: 1, source: 'local.rules' }, replaced: false })
    const list = await h.json<{ rulesets: { name: string; rules: number }[] }>('/aviary/ids/rules')
    expect(list.body.rulesets.map((s) => s.name)).toEqual(['bundled', 'aviary', 'local'])
    expect((await send('filename=local.rules', RULE)).status).toBe(400)
    const again = await send('filename=local.rules&replace=true', RULE)
    expect(await again.json()).toMatchObject({ replaced: true })
    const notRules = await send('filename=x.zip', 'PK\x03\x04')
    expect(notRules.status).toBe(400)
    expect(((await notRules.json()) as { message: string }).message).toBe('body: neither a .tar.gz/.tar of rules nor a .rules file')
    const badName = await send('filename=x.rules&name=../etc', RULE)
    expect(((await badName.json()) as { message: string }).message).toMatch(/^name: '\.\.\/etc' is not a rule set name/)
    expect((await send('', RULE)).status).toBe(400)
    const tmp = await send('filename=tmp.rules', RULE)
    expect(tmp.status).toBe(200)
    expect((await fetch(`${h.url}/aviary/ids/rules/tmp`, { method: 'DELETE' })).status).toBe(200)
    expect((await fetch(`${h.url}/aviary/ids/rules/tmp`, { method: 'DELETE' })).status).toBe(404)
    expect((await fetch(`${h.url}/aviary/ids/rules/bundled`, { method: 'DELETE' })).status).toBe(400)
  })

  it('a processed task\'s report carries the section, and alert: finds the task', async () => {
    const id = await submitFile(h, 'ids.sh', '#!/bin/sh\necho ids\n')
    finishRun(h, id, { 'dump.pcap': pcap })
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 60_000)).toBe('reported')
    const report = await h.json<{ suricata: { skipped: string | null; alerts: { sid: number; signature: string }[]; rulesets: { name: string }[] } }>(`/tasks/report/${id}`)
    expect(report.status).toBe(200)
    expect(report.body.suricata.skipped).toBeNull()
    expect(report.body.suricata.rulesets.map((s) => s.name)).toEqual(['bundled', 'aviary', 'local'])
    expect(report.body.suricata.alerts.map((a) => a.sid).sort()).toEqual([1100003, 3100001])
    const found = async (q: string): Promise<number[]> => {
      const { status, body } = await h.json<TaskSearchResult>(`/aviary/tasks?q=${encodeURIComponent(q)}`)
      expect(status, q).toBe(200)
      return body.tasks.map((t) => t.id)
    }
    expect(await found('alert:3100001')).toEqual([id])
    expect(await found('alert:"local test gate request"')).toEqual([id])
    expect(await found('alert:"AVIARY DNS"')).toEqual([id])
    expect(await found('alert:aviary')).toEqual([id])
    expect(await found('alert:"AVIARY HTTP"')).toEqual([])
    expect(await found('alert:2200074')).toEqual([])
    expect((await h.json(`/aviary/tasks?q=${encodeURIComponent('alert:"\u0001"')}`)).status).toBe(400)
  }, 90_000)
})
