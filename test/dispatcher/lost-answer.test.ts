// A submission whose answer is lost: the node created the task, but the connection broke before
// the dispatcher read the task id. The dispatcher must not submit it again (a second detonation of
// the sample): it finds the copy on the node by the sample's sha256 and the mark its request
// carried, takes it over, and fetches it like any other; nothing is left on the node.
//
// A real HTTP proxy in front of a real node plays the broken network: it forwards the first two
// file submissions, reads the node's answer, and cuts the dispatcher's connection instead of
// passing the answer on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startDispatcher, type Dispatcher } from '../../src/dispatcher/index'
import { nodeTasks, playEngines, startNode, submitSamples, waitFor, type TestNode } from './nodes'

/** Forwards to `target`; the answers of the first `lose` submissions are read and thrown away. */
async function lossyProxy(target: string, lose: number): Promise<{ url: string; lost: number[]; close(): Promise<void> }> {
  const lost: number[] = []
  const server = http.createServer((req, res) => {
    const upstream = http.request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
      if (req.method === 'POST' && req.url === '/tasks/create/file' && lost.length < lose) {
        const chunks: Buffer[] = []
        answer.on('data', (c: Buffer) => chunks.push(c))
        answer.on('end', () => {
          lost.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { task_id: number }).task_id)
          req.socket.destroy()
        })
        return
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    upstream.on('error', () => req.socket.destroy())
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    lost,
    close: () => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

describe('a submission whose answer is lost', () => {
  let dir: string
  let dist: Dispatcher
  let node: TestNode
  let proxy: Awaited<ReturnType<typeof lossyProxy>>
  let engines: ReturnType<typeof playEngines>
  let tasks: Map<number, string>

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-dist-lost-'))
    node = await startNode('flaky')
    proxy = await lossyProxy(node.h.url, 2)
    dist = await startDispatcher({
      dataDir: dir, host: '127.0.0.1', port: 0, logLevel: 'warn', reportFormats: ['json'],
      workerTuning: {
        assignIntervalMs: 100, nodeIntervalMs: 100, requestTimeoutMs: 2000, leaseSeconds: 1,
        log: { info: () => undefined, warn: () => undefined }
      }
    })
    const res = await fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: 'flaky', url: proxy.url }) })
    expect(res.status).toBe(200)
    engines = playEngines([node])
    tasks = await submitSamples(dist.url, 4, 'lost')
  }, 60_000)

  afterAll(async () => {
    await engines?.stop()
    await dist?.stop()
    await proxy?.close()
    await node?.h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('finishes every task once, the two whose answers were lost from the copies they took over', async () => {
    await waitFor('all finished', async () => (await dist.store.countByStatus()).finished === 4, 30_000)
    expect(proxy.lost).toHaveLength(2)
    const used: number[] = []
    for (const [id, sha] of tasks) {
      const folder = path.join(dist.config.reportsDir, String(id))
      const note = JSON.parse(readFileSync(path.join(folder, 'node-task.json'), 'utf8')) as { node_task_id: number }
      used.push(note.node_task_id)
      expect(JSON.parse(readFileSync(path.join(folder, 'report.json'), 'utf8'))).toEqual(expect.objectContaining({ sha256: sha, info: { id: note.node_task_id } }))
    }
    for (const lost of proxy.lost) expect(used).toContain(lost)
    // The node ran four: one copy per task, none submitted twice.
    expect(engines.seen.map((s) => s.nodeTaskId).sort((a, b) => a - b)).toEqual([1, 2, 3, 4])
  })

  it('leaves nothing on the node, and forgets the notes', async () => {
    await waitFor('the node cleaned', async () => (await nodeTasks(node)).length === 0, 15_000)
    const notes = path.join(dist.config.reportsDir, '.node-uncertain')
    await waitFor('notes removed', () => !existsSync(notes) || readdirSync(notes).length === 0, 5_000)
  })
})
