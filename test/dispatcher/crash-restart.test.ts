// `aviary dist` killed with -9 in the middle of a 30-task submission, then started again on the same
// data, as a user (or systemd) would, on SQLite and on PostgreSQL: the built command in a child
// process, two real nodes, each behind a real HTTP proxy that decides, submission by submission,
// where the kill lands. On each node, in the order the submissions arrive:
// - 4 answered: the node made the task and the dispatcher got the id and committed it (one group
//   of marks), so the kill falls between tasks;
// - answer held: the node made the task, its answer waits in the proxy until the kill (made, not
//   recorded);
// - request held, late: the request waits in the proxy and reaches the node only after the
//   restarted dispatcher has looked for it and found nothing (the node still busy with the
//   submission when the dispatcher looks);
// - request lost: it never reaches the node (killed before it went out, or lost on the way);
// - the rest (claimed, not yet sent) never left the dispatcher.
// After the restart every task must finish, each sample must have run once: the nodes made 30
// tasks in all, ever (counted at the proxies, and the runs the nodes' engines made), and each of
// them was fetched once, for the one task that took it. The nodes end empty.
//
// What makes it deterministic: the proxy holds answers and requests, so the kill lands with each
// kind in flight, without a hook in the dispatcher.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { usePostgres } from '../postgres'
import { nodeTasks, playEngines, sha256, startNode, waitFor, type TestNode } from './nodes'

const BIN = path.resolve('bin/aviary.js')
const TASKS = 30
/**
 * --transfer-timeout: how long a submission whose answer never came is waited for. The held
 * answers must not time out before the kill: with rounds 1 s apart, the first submission reached
 * the kill 1.6 s after it began, alone and beside other test files. At 12 s, a run with three
 * test files at a time on two busy cores once never had the eight in flight; a held answer that
 * times out is sent again, after which they cannot all be, so 20 s (the wait below says what it
 * saw if that happens again).
 */
const TRANSFER_TIMEOUT_S = 20

type Plan = 'pass' | 'hold-answer' | 'late' | 'lost'

/** What happens to each node's submissions before the kill, in arrival order (then: pass). */
const SCRIPTS: Record<string, Plan[]> = {
  alpha: ['pass', 'pass', 'pass', 'pass', 'hold-answer', 'hold-answer', 'late', 'lost'],
  bravo: ['pass', 'pass', 'pass', 'pass', 'late', 'lost', 'hold-answer', 'late']
}
const IN_FLIGHT = 4

interface Sample { content: string; sha: string }

function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.on('end', () => resolve(Buffer.concat(chunks)))
    stream.on('error', reject)
  })
}

/** A proxy in front of a node that plays its script on create requests and counts what reaches the node. */
class ScriptedProxy {
  /** Create requests that arrived, in order. */
  arrived = 0
  /** Node tasks made through this proxy, with the plan of the request that made each. */
  readonly made: Array<{ id: number; plan: Plan }> = []
  /** Report downloads per node task id. */
  readonly fetched = new Map<number, number>()
  /** Late requests not yet passed on: the sample they carry, and how to pass them on. */
  readonly late: Array<{ sha: string; release: () => Promise<void> }> = []
  /** The answers and requests held, each a socket to drop once the dispatcher is dead. */
  readonly held: Array<{ plan: Plan; res: http.ServerResponse }> = []
  scripted = true
  url = ''
  private server!: http.Server

  constructor(readonly name: string, private readonly target: string, private readonly samples: Sample[]) {}

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()))
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  /** Posts a create request to the node; records the task it made. */
  private async create(url: string, headers: http.IncomingHttpHeaders, body: Buffer, plan: Plan): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const up = http.request(new URL(url, this.target), { method: 'POST', headers }, (answer) => {
        void readAll(answer).then((text) => {
          const id = (JSON.parse(text.toString('utf8')) as { task_id?: number }).task_id
          if (typeof id === 'number') this.made.push({ id, plan })
          resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: text })
        }, reject)
      })
      up.on('error', reject)
      up.end(body)
    })
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = req.url ?? '/'
    if (req.method === 'POST' && url.startsWith('/tasks/create/')) {
      const body = await readAll(req)
      const plan: Plan = this.scripted ? SCRIPTS[this.name]![this.arrived] ?? 'pass' : 'pass'
      this.arrived++
      if (plan === 'late') {
        const sha = this.samples.find((s) => body.includes(s.content))!.sha
        let released = false
        this.late.push({
          sha,
          release: async () => {
            if (released) return
            released = true
            await this.create(url, req.headers, body, plan)
          }
        })
      }
      if (plan === 'late' || plan === 'lost') {
        this.held.push({ plan, res })
        return
      }
      const answer = await this.create(url, req.headers, body, plan)
      if (plan === 'hold-answer') {
        this.held.push({ plan, res })
        return
      }
      res.writeHead(answer.status, answer.headers)
      res.end(answer.body)
      return
    }
    const report = /^\/tasks\/report\/(\d+)\/json$/.exec(url)
    if (report) this.fetched.set(Number(report[1]), (this.fetched.get(Number(report[1])) ?? 0) + 1)
    const lookup = /^\/files\/view\/sha256\/([0-9a-f]{64})$/.exec(url)
    const up = http.request(new URL(url, this.target), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
      // The dispatcher has its answer (no such task yet) before the node gets the late request.
      if (lookup) res.on('finish', () => void this.late.find((l) => l.sha === lookup[1])?.release())
    })
    up.on('error', () => res.destroy())
    req.pipe(up)
  }

  /** The dispatcher is dead: what it was waiting for goes nowhere; the proxy passes everything on from now. */
  afterKill(): void {
    this.scripted = false
    for (const h of this.held.splice(0)) h.res.destroy()
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections()
      this.server.close(() => resolve())
    })
  }
}

interface Dist { child: ChildProcess; url: string; stderr: () => string }

/** Starts `aviary dist` on `data`; resolves with its API address once it listens. */
function startDist(data: string, db: string | undefined): Promise<Dist> {
  // Rounds 1 s apart instead of 10: the same worker, noticing each step sooner.
  const args = [BIN, 'dist', '-H', '127.0.0.1', '-p', '0', '--data', data, '--report-formats', 'json', '--transfer-timeout', String(TRANSFER_TIMEOUT_S),
    '--interval', '1']
  if (db !== undefined) args.push('--db', db)
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] })
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

async function stopDist(d: Dist | undefined): Promise<void> {
  if (!d || d.child.exitCode !== null || d.child.signalCode !== null) return
  const exited = new Promise((resolve) => d.child.once('exit', resolve))
  d.child.kill('SIGTERM')
  await exited
}

interface ApiTask { id: number; status: string; task_id: number | null; node_id: number | null }

async function apiTasks(url: string): Promise<ApiTask[]> {
  const body = (await (await fetch(`${url}/api/task?limit=1000`)).json()) as { tasks: Record<string, ApiTask> }
  return Object.values(body.tasks)
}

function crashScenario(dbName: 'SQLite' | 'PostgreSQL', database: () => Promise<string | undefined>): void {
  describe(`aviary dist on ${dbName} killed with -9 mid-submission, then restarted`, () => {
    const tag = `crash-${dbName.toLowerCase()}`
    const samples: Sample[] = Array.from({ length: TASKS }, (_, i) => {
      const content = `#!/bin/sh\necho ${tag} ${i}\n`
      return { content, sha: sha256(content) }
    })
    let data: string
    let nodes: TestNode[] = []
    let proxies: ScriptedProxy[] = []
    let engines: ReturnType<typeof playEngines> | undefined
    let dist: Dist | undefined
    const shaOf = new Map<number, string>()
    let restartToDone = 0
    let submitToKill = 0
    let fallback: NodeJS.Timeout | undefined

    beforeAll(async () => {
      data = mkdtempSync(path.join(tmpdir(), 'aviary-dist-crash-'))
      const db = await database()
      nodes = [await startNode('alpha'), await startNode('bravo')]
      proxies = nodes.map((n) => new ScriptedProxy(n.name, n.h.url, samples))
      for (const p of proxies) await p.start()
      engines = playEngines(nodes)
      dist = await startDist(data, db)
      for (const p of proxies) {
        const res = await fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: p.name, url: p.url }) })
        expect(res.status, await res.clone().text()).toBe(200)
      }
      const submitted = Date.now()
      for (const [i, s] of samples.entries()) {
        const form = new FormData()
        form.append('file', new Blob([s.content]), `${tag}-${i}.sh`)
        form.append('platform', 'linux')
        const res = await fetch(`${dist.url}/api/task`, { method: 'POST', body: form })
        expect(res.status).toBe(200)
        shaOf.set(((await res.json()) as { task_id: number }).task_id, s.sha)
      }
      // Each node takes 4 submissions at a time: the first 4 are answered and committed, the next
      // 4 are held, the rest wait for a free lane.
      let seen = ''
      await waitFor('every scripted submission in flight', async () => {
        const processing = (await apiTasks(dist!.url)).filter((t) => t.status === 'processing').length
        seen = `${proxies.map((p) => `${p.name}: ${p.arrived} arrived, ${p.held.length} held`).join('; ')}; ${processing} processing`
        return proxies.every((p) => p.arrived === SCRIPTS[p.name]!.length && p.held.length === IN_FLIGHT) && processing === 8
      }, 90_000).catch((err: Error) => { throw new Error(`${err.message} (last seen: ${seen})`) })
      submitToKill = Date.now() - submitted
      dist.child.kill('SIGKILL')
      await new Promise((resolve) => dist!.child.once('exit', resolve))
      for (const p of proxies) p.afterKill()

      const restarted = Date.now()
      dist = await startDist(data, db)
      // A dispatcher that never looks for what it submitted: the late requests reach the nodes all the same.
      fallback = setTimeout(() => void Promise.all(proxies.flatMap((p) => p.late.map((l) => l.release()))).catch(() => undefined), 20_000)
      await waitFor('every task finished', async () => (await apiTasks(dist!.url)).every((t) => t.status === 'finished'), 150_000)
      restartToDone = Date.now() - restarted
    }, 300_000)

    afterAll(async () => {
      clearTimeout(fallback)
      await stopDist(dist)
      await engines?.stop()
      for (const p of proxies) await p.close()
      for (const n of nodes) await n.h.stop()
      rmSync(data, { recursive: true, force: true })
    }, 60_000)

    it('ran each sample once: the nodes made 30 tasks in all, and ran 30', () => {
      const made = proxies.flatMap((p) => p.made.map((m) => ({ ...m, node: p.name })))
      const byPlan = (plan: Plan) => made.filter((m) => m.plan === plan).length
      console.log(`${dbName}: ${made.length} node tasks made (${byPlan('hold-answer')} whose answers were held, ${byPlan('late')} late), ` +
        `${engines!.seen.length} ran; first submission to the kill: ${submitToKill} ms; restart to all finished: ${restartToDone} ms`)
      expect(made).toHaveLength(TASKS)
      expect(engines!.seen).toHaveLength(TASKS)
      expect(new Set(engines!.seen.map((s) => s.sha256))).toEqual(new Set(shaOf.values()))
    })

    it('took over the copies made before it knew them, and fetched every node task once, for one task', async () => {
      const tasks = await apiTasks(dist!.url)
      expect(tasks.map((t) => t.id).sort((a, b) => a - b)).toEqual([...shaOf.keys()].sort((a, b) => a - b))
      const nodeName = new Map(nodes.map((n, i) => [i + 1, n.name]))
      const used = new Set<string>()
      for (const t of tasks) {
        expect(t.status).toBe('finished')
        const report = (await (await fetch(`${dist!.url}/api/report/${t.id}/json`)).json()) as { info: { id: number }; ran_on: string; sha256: string }
        expect(report.sha256, `task ${t.id}`).toBe(shaOf.get(t.id))
        expect(report.info.id).toBe(t.task_id)
        expect(report.ran_on).toBe(nodeName.get(t.node_id!))
        used.add(`${report.ran_on}#${t.task_id}`)
      }
      expect(used.size).toBe(TASKS)
      for (const p of proxies) {
        for (const m of p.made) expect(p.fetched.get(m.id), `${p.name} #${m.id} (${m.plan})`).toBe(1)
        expect([...p.fetched.keys()].sort((a, b) => a - b)).toEqual(p.made.map((m) => m.id).sort((a, b) => a - b))
        // Those made before the restart and never answered to it were taken over.
        for (const m of p.made.filter((x) => x.plan === 'hold-answer' || x.plan === 'late')) expect(used.has(`${p.name}#${m.id}`)).toBe(true)
      }
      expect(dist!.stderr()).toMatch(/took over #\d+ on \w+, the copy an earlier submission made/)
      expect(dist!.stderr()).toMatch(/took back \d+ task\(s\) leased by [^\n]*, a worker of this machine that no longer runs/)
    })

    it('left no task on the nodes', async () => {
      await waitFor('nodes empty', async () => (await nodeTasks(nodes[0]!)).length + (await nodeTasks(nodes[1]!)).length === 0, 40_000)
    })
  })
}

crashScenario('SQLite', async () => undefined)

const pg = usePostgres()
crashScenario('PostgreSQL', () => pg.newDatabase('dist'))
