// `aviary dist` killed with -9 while it submits, then started again on the same data, as a user
// (or systemd) would: the built command in a child process, two real nodes, 30 tasks. A real HTTP
// proxy in front of each node holds the node's answers to submissions for a while, so the kill
// lands while copies exist on the nodes that the dispatcher never learned of (and while it holds
// leases on every task it was submitting). After the restart every task must finish exactly once,
// without waiting for the dead process's leases (300 s, the default), and the nodes must end with
// no task left: the copies nobody knows deleted, never fetched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { nodeTasks, playEngines, startNode, submitSamples, waitFor, type TestNode } from './nodes'

const BIN = path.resolve('bin/aviary.js')
const TASKS = 30
const HOLD_MS = 1500

/** A node task created through the proxy, and whether its id was passed on to the dispatcher. */
interface Created { node: string; id: number; passedOn: boolean }

/** Forwards to `target`; while `hold` is set, a submission's answer waits HOLD_MS before it is passed on. */
async function holdingProxy(name: string, target: string, created: Created[]) {
  const state = { hold: true }
  const server = http.createServer((req, res) => {
    const upstream = http.request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
      if (req.method !== 'POST' || !req.url?.startsWith('/tasks/create/')) {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        return void answer.pipe(res)
      }
      const chunks: Buffer[] = []
      answer.on('data', (c: Buffer) => chunks.push(c))
      answer.on('end', () => {
        const body = Buffer.concat(chunks)
        const rec: Created = { node: name, id: (JSON.parse(body.toString('utf8')) as { task_id: number }).task_id, passedOn: false }
        created.push(rec)
        const passOn = (): void => {
          if (res.destroyed) return // the dispatcher is gone
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          res.end(body)
          rec.passedOn = true
        }
        if (state.hold) setTimeout(passOn, HOLD_MS)
        else passOn()
      })
    })
    upstream.on('error', () => req.socket.destroy())
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

/** Starts `aviary dist` on `data`; resolves with its API address once it listens. */
function startDist(data: string): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'dist', '-H', '127.0.0.1', '-p', '0', '--data', data, '--report-formats', 'json'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString()
      const m = /dispatcher API on (http:\/\/127\.0\.0\.1:\d+)/.exec(err)
      if (m) resolve({ child, url: m[1]!, stderr: () => err })
    })
    child.once('exit', (code) => reject(new Error(`aviary dist exited ${code} before listening: ${err}`)))
  })
}

interface ApiTask { id: number; status: string; task_id: number | null; node_id: number | null }

async function apiTasks(url: string): Promise<ApiTask[]> {
  const body = (await (await fetch(`${url}/api/task?limit=1000`)).json()) as { tasks: Record<string, ApiTask> }
  return Object.values(body.tasks)
}

describe('aviary dist killed with -9 while it submits, then restarted', () => {
  let data: string
  let nodes: TestNode[]
  let proxies: Array<Awaited<ReturnType<typeof holdingProxy>>>
  let engines: ReturnType<typeof playEngines>
  let dist: Awaited<ReturnType<typeof startDist>> | undefined
  let shaOf: Map<number, string>
  const created: Created[] = []
  /** Copies on the nodes whose ids the killed dispatcher never received. */
  let unknownToIt: Created[] = []
  let restartToDone = 0
  let beforeKill = 0

  beforeAll(async () => {
    data = mkdtempSync(path.join(tmpdir(), 'aviary-dist-crash-'))
    nodes = [await startNode('alpha'), await startNode('bravo')]
    proxies = await Promise.all(nodes.map((n) => holdingProxy(n.name, n.h.url, created)))
    engines = playEngines(nodes)
    dist = await startDist(data)
    for (const [i, n] of nodes.entries()) {
      const res = await fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: n.name, url: proxies[i]!.url }) })
      expect(res.status, await res.clone().text()).toBe(200)
    }
    shaOf = await submitSamples(dist.url, TASKS, 'crash')
    // The worker assigns within its 10 s round; each node then takes 4 submissions at a time. Kill
    // once the second wave is on the nodes: its answers are held, the first wave's were passed on.
    await waitFor('submissions under way', () => created.length >= 12 && created.some((c) => !c.passedOn), 60_000)
    dist.child.kill('SIGKILL')
    await new Promise((resolve) => dist!.child.once('exit', resolve))
    unknownToIt = created.filter((c) => !c.passedOn)
    beforeKill = created.length
    for (const p of proxies) p.state.hold = false

    const restarted = Date.now()
    dist = await startDist(data)
    await waitFor('every task finished', async () => (await apiTasks(dist!.url)).every((t) => t.status === 'finished'), 120_000)
    restartToDone = Date.now() - restarted
  }, 200_000)

  afterAll(async () => {
    if (dist && dist.child.exitCode === null) {
      const exited = new Promise((resolve) => dist!.child.once('exit', resolve))
      dist.child.kill('SIGTERM')
      await exited
    }
    await engines?.stop()
    for (const p of proxies ?? []) await p.close()
    for (const n of nodes ?? []) await n.h.stop()
    rmSync(data, { recursive: true, force: true })
  })

  it('was killed with copies on the nodes it never learned of, and took back the dead process\'s leases at once', () => {
    expect(unknownToIt.length).toBeGreaterThanOrEqual(1)
    expect(dist!.stderr()).toMatch(/took back \d+ task\(s\) leased by [^\n]*, a worker of this machine that no longer runs/)
    // With the default 300 s lease, waiting for it would take minutes.
    expect(restartToDone).toBeLessThan(120_000)
    console.log(`crash: ${beforeKill} copies made before the kill (${created.length} in all), ${unknownToIt.length} unknown to the dispatcher; restart to all finished: ${restartToDone} ms`)
  })

  it('finished every task exactly once, each with the report of the copy it knows', async () => {
    const tasks = await apiTasks(dist!.url)
    expect(tasks.map((t) => t.id).sort((a, b) => a - b)).toEqual([...shaOf.keys()].sort((a, b) => a - b))
    const copies = new Set<string>()
    for (const t of tasks) {
      expect(t.status).toBe('finished')
      const report = (await (await fetch(`${dist!.url}/api/report/${t.id}/json`)).json()) as { info: { id: number }; ran_on: string; sha256: string }
      expect(report.sha256, `task ${t.id}`).toBe(shaOf.get(t.id))
      // The report is the run of the copy the task knows, never one the killed process lost.
      expect(report.info.id).toBe(t.task_id)
      expect(unknownToIt.some((c) => c.node === report.ran_on && c.id === t.task_id)).toBe(false)
      copies.add(`${report.ran_on}#${t.task_id}`)
    }
    // No two tasks share a copy.
    expect(copies.size).toBe(TASKS)
  })

  it('left no task on the nodes: the copies nobody knows were deleted there', async () => {
    await waitFor('nodes empty', async () => (await nodeTasks(nodes[0]!)).length + (await nodeTasks(nodes[1]!)).length === 0, 40_000)
    // They had run (the nodes' engines played them), so they were there to delete.
    for (const c of unknownToIt) expect(engines.seen.some((s) => s.node === c.node && s.nodeTaskId === c.id), `${c.node} #${c.id}`).toBe(true)
  })
})
