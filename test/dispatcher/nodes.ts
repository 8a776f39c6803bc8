// Real nodes for the dispatcher's tests: headless Aviary services (engine off) whose "engine" is
// played by the test: it finds each node's pending tasks over the node's own API, writes their
// report.json (naming the node and the sample's sha256, so a mix-up shows) and marks them reported
// by SQL, as a finished run would. Every node task the player sees is recorded, so a test can check
// that each dispatcher task was created once, on one node.
import { createHash } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import path from 'node:path'
import { startHarness, type Harness } from '../service-harness'

export const MACHINES = {
  driver: 'physical',
  machines: [{ name: 'm1', ip: '192.0.2.10', platform: 'linux', tags: ['x64'] }]
}

export interface TestNode {
  name: string
  h: Harness
  /** false: the player leaves this node's tasks alone (they stay pending there). */
  play: boolean
  alive: boolean
  /** The node's API token, when it asks for one. */
  token?: string
}

export async function startNode(name: string, port = 0, token?: string, machines: typeof MACHINES = MACHINES): Promise<TestNode> {
  const h = await startHarness({ machines, port, ...(token ? { apiToken: token } : {}) })
  return { name, h, play: true, alive: true, ...(token ? { token } : {}) }
}

export const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex')

interface NodeTask { id: number; status: string; sample: { sha256?: string } }

export async function nodeTasks(n: TestNode, status?: string): Promise<NodeTask[]> {
  const q = status ? `?status=${status}` : ''
  const headers = n.token ? { authorization: `Bearer ${n.token}` } : undefined
  const res = await n.h.json<{ tasks: NodeTask[] }>(`/tasks/list/100000/0${q}`, headers)
  if (res.status !== 200) throw new Error(`node ${n.name}: /tasks/list answered ${res.status}`)
  return res.body.tasks
}

export interface Seen {
  node: string
  nodeTaskId: number
  sha256: string
}

/** What a finished run leaves: report.json and dump.pcap, status reported (or failed_analysis, bare). */
export function finishNodeTask(n: TestNode, id: number, sha: string, failed = false): void {
  const dir = path.join(n.h.dataDir, 'storage/analyses', String(id))
  if (!failed) {
    mkdirSync(path.join(dir, 'reports'), { recursive: true })
    writeFileSync(path.join(dir, 'reports/report.json'), JSON.stringify({ info: { id }, ran_on: n.name, sha256: sha }))
    writeFileSync(path.join(dir, 'dump.pcap'), `pcap of ${sha}`)
  }
  n.h.sql(
    "UPDATE tasks SET status = ?, started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?",
    failed ? 'failed_analysis' : 'reported', id
  )
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port
      srv.close(() => resolve(port))
    })
  })
}

/**
 * Submits samples through the dispatcher's API (with `fields` besides, e.g. node or tags); returns
 * dispatcher task id → sample sha256.
 */
export async function submitSamples(distUrl: string, count: number, tag: string, fields: Record<string, string> = {}): Promise<Map<number, string>> {
  const out = new Map<number, string>()
  for (let i = 0; i < count; i++) {
    const content = `#!/bin/sh\necho ${tag} ${i}\n`
    const form = new FormData()
    form.append('file', new Blob([content]), `${tag}-${i}.sh`)
    form.append('platform', 'linux')
    for (const [k, v] of Object.entries(fields)) form.append(k, v)
    const res = await fetch(`${distUrl}/api/task`, { method: 'POST', body: form })
    if (res.status !== 200) throw new Error(`POST /api/task: ${res.status} ${await res.text()}`)
    out.set(((await res.json()) as { task_id: number }).task_id, sha256(content))
  }
  return out
}

/**
 * Plays the engines of the nodes: every `ms`, each pending task of a playing node is reported
 * (or, when `fail(sha)` says so, failed_analysis without reports).
 */
export function playEngines(nodes: TestNode[], o: { ms?: number; fail?: (sha: string) => boolean } = {}) {
  const seen: Seen[] = []
  let stopped = false
  let running: Promise<void> = Promise.resolve()
  const round = async (): Promise<void> => {
    for (const n of nodes) {
      if (!n.play || !n.alive) continue
      let tasks: NodeTask[]
      try {
        tasks = await nodeTasks(n, 'pending')
      } catch {
        continue
      }
      for (const t of tasks) {
        const sha = t.sample.sha256 ?? ''
        seen.push({ node: n.name, nodeTaskId: t.id, sha256: sha })
        finishNodeTask(n, t.id, sha, o.fail?.(sha) ?? false)
      }
    }
  }
  const loop = async (): Promise<void> => {
    while (!stopped) {
      running = round()
      await running
      await new Promise((r) => setTimeout(r, o.ms ?? 100))
    }
  }
  void loop()
  return {
    seen,
    async stop() {
      stopped = true
      await running
    }
  }
}

export async function waitFor(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
