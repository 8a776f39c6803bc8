// Submission with shared samples against a real node: many tasks naming one sample file (read once
// per chunk) each reach the node once with that sample's bytes, the marks written in groups leave
// every task processing with its own node task id, and a missing sample drops only its own task.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { nodeTasks, sha256, startNode, waitFor, type TestNode } from '../../../test/dispatcher/nodes'
import { openStore } from '../store/index'
import type { DistStore, NewDistTask } from '../store/types'
import { startWorker, type DistWorker } from './index'

const fields = {
  package: null, timeout: null, priority: 1, options: null, machine: null, platform: 'linux', tags: null, custom: null,
  owner: null, memory: null, clock: null, enforce_timeout: null
} satisfies Partial<NewDistTask>

describe('submitting tasks that share samples', () => {
  let dir: string
  let node: TestNode
  let store: DistStore
  let worker: DistWorker
  const ids = { a: [] as number[], b: [] as number[], missing: 0 }
  const content = { a: '#!/bin/sh\necho shared a\n', b: '#!/bin/sh\necho shared b\n' }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-dist-share-'))
    node = await startNode('solo')
    node.play = false
    store = await openStore(path.join(dir, 'dist.db'), dir)
    await store.addNode({ name: 'solo', url: node.h.url, machines: [{ name: 'm1', platform: 'linux', tags: [] }] })
    const samples = path.join(dir, 'samples')
    mkdirSync(samples)
    writeFileSync(path.join(samples, 'a.sh'), content.a)
    writeFileSync(path.join(samples, 'b.sh'), content.b)
    // Interleaved, so one chunk holds tasks of both samples and the missing one sits among them.
    for (let i = 0; i < 60; i++) {
      const which = i % 6 === 5 ? 'b' : 'a'
      ids[which].push(await store.createTask({ ...fields, category: 'file', path: path.join(samples, `${which}.sh`), filename: `${which}-${i}.sh`, url: null }))
      if (i === 20) ids.missing = await store.createTask({ ...fields, category: 'file', path: path.join(samples, 'gone.sh'), filename: 'gone.sh', url: null })
    }
    worker = startWorker(store, {
      reportsDir: path.join(dir, 'reports'), samplesDir: samples, threshold: 100, concurrency: 4, assignIntervalMs: 100, nodeIntervalMs: 100,
      log: { info: () => undefined, warn: () => undefined }
    })
    await waitFor('all submitted', async () => (await store.countByStatus()).processing === 60, 30_000)
  }, 60_000)

  afterAll(async () => {
    await worker?.stop()
    await store?.close()
    await node?.h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('creates each task once on the node, with its own sample', async () => {
    const onNode = await nodeTasks(node)
    expect(onNode.length).toBe(60)
    const rows = await store.listTasks({ status: 'processing' })
    expect(new Set(rows.map((r) => r.node_task_id)).size).toBe(60)
    const shaOf = new Map(onNode.map((t) => [t.id, t.sample.sha256]))
    for (const r of rows) {
      expect(shaOf.get(r.node_task_id!), `task ${r.id}`).toBe(sha256(ids.a.includes(r.id) ? content.a : content.b))
      expect(r.delegated).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    }
    expect(rows.filter((r) => ids.b.includes(r.id)).length).toBe(10)
  })

  it('drops only the task whose sample is missing, saying why', async () => {
    expect(await store.getTask(ids.missing)).toMatchObject({ status: 'finished', node_task_id: 0 })
    const note = JSON.parse(readFileSync(path.join(dir, 'reports', String(ids.missing), 'node-task.json'), 'utf8')) as { status: string; errors: string[] }
    expect(note.status).toBe('failed_dispatch')
    expect(note.errors[0]).toMatch(/sample file missing: gone\.sh/)
  })
})
