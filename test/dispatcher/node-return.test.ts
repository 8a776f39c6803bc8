// A node that stops answering while holding tasks, finishes them "in the dark", and comes back on
// the same address with the same data. Its tasks were requeued and finished on the other node; its
// own copies must not be fetched (a second, conflicting set of reports) nor lost from view (left
// on it forever): the worker deletes them there. Then it gets new work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startDispatcher, type Dispatcher } from '../../src/dispatcher/index'
import { startWorker, type DistWorker } from '../../src/dispatcher/worker/index'
import { finishNodeTask, freePort, nodeTasks, playEngines, startNode, submitSamples, waitFor, type TestNode } from './nodes'

describe('a node that goes away and comes back', () => {
  let dir: string
  let dist: Dispatcher
  let alpha: TestNode
  let delta: TestNode
  let worker: DistWorker
  let engines: ReturnType<typeof playEngines>
  let first: Map<number, string>
  /** Node task ids delta held (and finished while unreachable). */
  let held: Array<{ id: number; sha: string }>

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-dist-'))
    alpha = await startNode('alpha')
    delta = await startNode('delta', await freePort())
    alpha.play = false
    delta.play = false
    dist = await startDispatcher({ dataDir: dir, host: '127.0.0.1', port: 0, worker: false, logLevel: 'warn' })
    for (const n of [alpha, delta]) {
      const res = await fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: n.name, url: n.h.url }) })
      expect(res.status).toBe(200)
    }
    first = await submitSamples(dist.url, 10, 'first')
    engines = playEngines([alpha, delta])
    worker = startWorker(dist.store, {
      reportsDir: dist.config.reportsDir, samplesDir: dist.config.samplesDir,
      threshold: 20, assignIntervalMs: 100, nodeIntervalMs: 100, requestTimeoutMs: 2000, log: { info: () => undefined, warn: () => undefined }
    })
    await waitFor('all submitted', async () => (await dist.store.countByStatus()).processing === 10)
    held = (await nodeTasks(delta)).map((t) => ({ id: t.id, sha: t.sample.sha256 ?? '' }))
    expect(held.length).toBeGreaterThanOrEqual(3)
    // delta drops off the network, and its engine finishes every task meanwhile.
    await delta.h.service.stop()
    for (const t of held) finishNodeTask(delta, t.id, t.sha)
    await waitFor('delta unreachable and its tasks requeued', async () => {
      const node = await dist.store.getNode('delta')
      return node!.failures >= 3 && !(await dist.store.queueByNode()).get(node!.id)
    })
    alpha.play = true
    await waitFor('first tasks finished on alpha', async () => (await dist.store.countByStatus()).finished === 10)
    await delta.h.service.start()
    delta.play = true
  }, 120_000)

  afterAll(async () => {
    await engines?.stop()
    await worker?.stop()
    await dist?.stop()
    await alpha?.h.stop()
    await delta?.h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('deletes the copies it finished while unreachable, without fetching them', async () => {
    await waitFor('delta cleaned', async () => (await nodeTasks(delta)).length === 0, 10_000)
    for (const [id, sha] of first) {
      const folder = path.join(dist.config.reportsDir, String(id))
      const note = JSON.parse(readFileSync(path.join(folder, 'node-task.json'), 'utf8')) as { node: string }
      const report = JSON.parse(readFileSync(path.join(folder, 'report.json'), 'utf8')) as { ran_on: string; sha256: string }
      // The requeued copy's reports, untouched by delta's late ones.
      expect(note.node).toBe('alpha')
      expect(report).toEqual(expect.objectContaining({ ran_on: 'alpha', sha256: sha }))
    }
    const ledger = path.join(dist.config.reportsDir, '.node-cleanup')
    await waitFor('ledger emptied', () => !existsSync(ledger) || readdirSync(ledger).length === 0, 5_000)
  })

  it('gives it new work once it answers', async () => {
    const second = await submitSamples(dist.url, 8, 'second')
    await waitFor('second tasks finished', async () => (await dist.store.countByStatus()).finished === 18)
    const ranOnDelta = new Set(engines.seen.filter((s) => s.node === 'delta').map((s) => s.sha256))
    expect([...second.values()].filter((sha) => ranOnDelta.has(sha)).length).toBeGreaterThan(0)
    for (const id of second.keys()) expect((await dist.store.getTask(id))!.status).toBe('finished')
    await waitFor('both nodes empty', async () => (await nodeTasks(alpha)).length + (await nodeTasks(delta)).length === 0, 10_000)
  })
})
