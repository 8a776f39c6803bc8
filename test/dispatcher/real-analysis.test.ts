// One real analysis through the dispatcher: a node with its engine on and a network-namespace
// guest (physical driver, `aviary agent`), a shell sample submitted to the dispatcher, run by the
// node, and its real report and pcap fetched back; the node is left empty. Needs root (netns).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { Harness } from '../service-harness'
import { startDispatcher, type Dispatcher } from '../../src/dispatcher/index'
import { startWorker, type DistWorker } from '../../src/dispatcher/worker/index'
import { waitFor } from './nodes'

const SAMPLE = '#!/bin/sh\nwget -O /tmp/page.html http://dist.example.com/hello\necho done > /tmp/done.txt\n'

describe('a real analysis through the dispatcher', () => {
  let guest: NetnsGuest
  let node: Harness
  let dir: string
  let dist: Dispatcher
  let worker: DistWorker
  let taskId: number

  beforeAll(async () => {
    ;({ guest, h: node } = await startNetnsAnalysisNode({ index: 9, prefix: 'avds' }))
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-dist-'))
    dist = await startDispatcher({ dataDir: dir, host: '127.0.0.1', port: 0, worker: false, logLevel: 'warn', reportFormats: ['json', 'html'] })
    const reg = await fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: 'real', url: node.url }) })
    expect(reg.status).toBe(200)
    const form = new FormData()
    form.append('file', new Blob([SAMPLE]), 'fetcher.sh')
    form.append('platform', 'linux')
    form.append('timeout', '30')
    const res = await fetch(`${dist.url}/api/task`, { method: 'POST', body: form })
    taskId = ((await res.json()) as { task_id: number }).task_id
    worker = startWorker(dist.store, {
      reportsDir: dist.config.reportsDir, samplesDir: dist.config.samplesDir, reportFormats: ['json', 'html'],
      // A stuck request holds the worker's stop for its timeout (the default is 60 s, the hook's limit).
      assignIntervalMs: 200, nodeIntervalMs: 500, requestTimeoutMs: 10_000
    })
    await waitFor('the task finished', async () => (await dist.store.getTask(taskId))!.status === 'finished', 150_000)
  }, 240_000)

  afterAll(async () => {
    await worker?.stop()
    await dist?.stop()
    await node?.stop()
    await guest?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 120_000)

  it('fetched the real report, html and pcap of the run', async () => {
    const folder = path.join(dist.config.reportsDir, String(taskId))
    const note = JSON.parse(readFileSync(path.join(folder, 'node-task.json'), 'utf8')) as { status: string; errors: string[] }
    expect(note.status).toBe('reported')
    const report = JSON.parse(readFileSync(path.join(folder, 'report.json'), 'utf8')) as {
      info: { category: string }; target: { file: { name: string } }; network: { dns: { request: string }[] }
    }
    expect(report.info.category).toBe('file')
    expect(report.target.file.name).toBe('fetcher.sh')
    expect(report.network.dns.map((d) => d.request)).toContain('dist.example.com')
    expect(readFileSync(path.join(folder, 'report.html'), 'utf8')).toMatch(/dist\.example\.com/)
    expect(readFileSync(path.join(folder, 'dump.pcap')).readUInt32LE(0)).toBe(0xa1b2c3d4)
    // The dispatcher serves it as Cuckoo's does.
    const served = await fetch(`${dist.url}/api/report/${taskId}/json`)
    expect(served.status).toBe(200)
    expect(((await served.json()) as { target: { file: { name: string } } }).target.file.name).toBe('fetcher.sh')
  })

  it('left the node empty', async () => {
    expect((await node.json<{ tasks: unknown[] }>('/tasks/list')).body.tasks).toEqual([])
  })
})
