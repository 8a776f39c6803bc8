// Two workers (each with its own connection pool, as two `aviary dist-worker` processes would) on
// one PostgreSQL database, over three real nodes: every task is created once, on exactly one node
// (counted on the nodes' side), fetched once, and the nodes are left empty.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startDispatcher, type Dispatcher } from '../../src/dispatcher/index'
import { openStore } from '../../src/dispatcher/store/index'
import type { DistStore } from '../../src/dispatcher/store/types'
import { startWorker, type DistWorker } from '../../src/dispatcher/worker/index'
import { usePostgres } from '../postgres'
import { nodeTasks, playEngines, startNode, submitSamples, waitFor, type TestNode } from './nodes'

const TASKS = 50

describe('two workers on one PostgreSQL', () => {
  const pg = usePostgres()
  let dir: string
  let dist: Dispatcher
  let nodes: TestNode[]
  const stores: DistStore[] = []
  const workers: DistWorker[] = []
  let engines: ReturnType<typeof playEngines>
  let tasks: Map<number, string>

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-dist-'))
    const db = await pg.newDatabase('dist')
    nodes = [await startNode('alpha'), await startNode('bravo'), await startNode('charlie')]
    dist = await startDispatcher({ dataDir: dir, db, host: '127.0.0.1', port: 0, worker: false, logLevel: 'warn' })
    for (const n of nodes) {
      const res = await fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: n.name, url: n.h.url }) })
      expect(res.status).toBe(200)
    }
    tasks = await submitSamples(dist.url, TASKS, 'pg')
    engines = playEngines(nodes, { ms: 50 })
    for (const id of ['w1', 'w2']) {
      const store = await openStore(db, dir)
      stores.push(store)
      // Small batches and short pauses: the two workers contend on every step.
      workers.push(startWorker(store, {
        reportsDir: dist.config.reportsDir, samplesDir: dist.config.samplesDir, workerId: id,
        threshold: 4, assignIntervalMs: 20, nodeIntervalMs: 20, requestTimeoutMs: 2000, log: { info: () => undefined, warn: () => undefined }
      }))
    }
    await waitFor('all finished', async () => (await dist.store.countByStatus()).finished === TASKS, 90_000)
  }, 180_000)

  afterAll(async () => {
    await engines?.stop()
    for (const w of workers) await w.stop()
    for (const s of stores) await s.close()
    await dist?.stop()
    for (const n of nodes ?? []) await n.h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('created each task once, on exactly one node', () => {
    const shas = engines.seen.map((s) => s.sha256)
    expect(shas).toHaveLength(TASKS)
    expect(new Set(shas)).toEqual(new Set(tasks.values()))
    // Spread over the nodes, not all on one.
    for (const n of nodes) expect(engines.seen.filter((s) => s.node === n.name).length).toBeGreaterThan(5)
  })

  it('fetched each report once, from the node that ran it, and cleaned every node', async () => {
    for (const [id, sha] of tasks) {
      const t = await dist.store.getTask(id)
      expect(t!.status).toBe('finished')
      const ran = engines.seen.find((s) => s.sha256 === sha)!
      expect(t!.node_task_id).toBe(ran.nodeTaskId)
      const report = JSON.parse(readFileSync(path.join(dist.config.reportsDir, String(id), 'report.json'), 'utf8')) as { ran_on: string; sha256: string }
      expect(report).toEqual(expect.objectContaining({ ran_on: ran.node, sha256: sha }))
    }
    await waitFor('nodes cleaned', async () => {
      let left = 0
      for (const n of nodes) left += (await nodeTasks(n)).length
      return left === 0
    }, 10_000)
  })
})
