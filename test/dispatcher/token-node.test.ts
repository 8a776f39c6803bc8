// A node whose API asks for a Bearer token (Cuckoo 2.0.7 makes one on install; `aviary serve
// --api-token`). Registering it without its token, or with a wrong one, is refused naming `token`;
// registered with it, every call the dispatcher makes carries it (status, machines, submission,
// listing, report and pcap downloads, deletion), and the token is never shown back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startDispatcher, type Dispatcher } from '../../src/dispatcher/index'
import { nodeTasks, playEngines, startNode, submitSamples, waitFor, type TestNode } from './nodes'

const TOKEN = 'node-secret-4f1c9a'

describe('a node that asks for an API token', () => {
  let dir: string
  let dist: Dispatcher
  let node: TestNode

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-dist-token-'))
    node = await startNode('locked', 0, TOKEN)
    dist = await startDispatcher({
      dataDir: dir, host: '127.0.0.1', port: 0, logLevel: 'warn', reportFormats: ['json'],
      workerTuning: { assignIntervalMs: 100, nodeIntervalMs: 100, requestTimeoutMs: 2000, log: { info: () => undefined, warn: () => undefined } }
    })
  }, 60_000)

  afterAll(async () => {
    await dist?.stop()
    await node?.h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const register = (fields: Record<string, string>) =>
    fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: 'locked', url: node.h.url, ...fields }) })

  it('is refused without its token, or with a wrong one, naming the field', async () => {
    const none = await register({})
    expect(none.status).toBe(400)
    expect(((await none.json()) as { message: string }).message).toMatch(/^token: .*asks for an API token/)
    const wrong = await register({ token: 'not-the-token' })
    expect(wrong.status).toBe(400)
    expect(((await wrong.json()) as { message: string }).message).toMatch(/^token: .*refused this token/)
    const spaced = await register({ token: 'has a space' })
    expect(spaced.status).toBe(400)
    const spacedMessage = ((await spaced.json()) as { message: string }).message
    expect(spacedMessage).toMatch(/^token: /)
    expect(spacedMessage).not.toContain('has a space') // a secret is not repeated back
    expect(await dist.store.listNodes()).toHaveLength(0)
  })

  it('registers with it, and never shows it back', async () => {
    const res = await register({ token: TOKEN })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { machines: Array<{ name: string }> }).machines.map((m) => m.name)).toEqual(['m1'])
    for (const p of ['/api/node', '/api/node/locked', '/node', '/node/locked']) {
      const text = await (await fetch(dist.url + p)).text()
      expect(text).not.toContain(TOKEN)
      expect(text).toMatch(/"token": ?true/)
    }
  })

  it('runs tasks on it: submitted, fetched and cleaned with the token', async () => {
    const engines = playEngines([node])
    try {
      const tasks = await submitSamples(dist.url, 5, 'token')
      await waitFor('all finished', async () => (await dist.store.countByStatus()).finished === 5, 60_000)
      for (const [id, sha] of tasks) {
        const report = JSON.parse(readFileSync(path.join(dist.config.reportsDir, String(id), 'report.json'), 'utf8')) as { ran_on: string; sha256: string }
        expect(report).toEqual(expect.objectContaining({ ran_on: 'locked', sha256: sha }))
        expect(readFileSync(path.join(dist.config.reportsDir, String(id), 'dump.pcap'), 'utf8')).toBe(`pcap of ${sha}`)
      }
      await waitFor('the node cleaned', async () => (await nodeTasks(node)).length === 0, 10_000)
    } finally {
      await engines.stop()
    }
  })

  it('a token changed with PUT is the one used from then on', async () => {
    const put = await fetch(`${dist.url}/api/node/locked`, { method: 'PUT', body: new URLSearchParams({ token: 'stale' }) })
    expect(put.status).toBe(200)
    await waitFor('the node refuses the stale token', async () => ((await dist.store.getNode('locked'))?.failures ?? 0) >= 1, 10_000)
    await fetch(`${dist.url}/api/node/locked`, { method: 'PUT', body: new URLSearchParams({ token: TOKEN }) })
    await waitFor('the node answers again', async () => (await dist.store.getNode('locked'))?.failures === 0, 10_000)
    const refresh = await fetch(`${dist.url}/api/node/locked/refresh`, { method: 'POST' })
    expect(refresh.status).toBe(200)
  })
})
