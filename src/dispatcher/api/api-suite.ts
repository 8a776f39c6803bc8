// The dispatcher API tests, run once on SQLite (api.test.ts) and once on PostgreSQL
// (api.postgres.test.ts): a real dispatcher on a free port (worker off, so task states are set
// by the test through the store, as the worker would) and a real Aviary node to register.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/service-harness'
import { startDispatcher, type Dispatcher } from '../index'

type Json = Record<string, unknown>

export function dispatcherApiSuite(name: string, db: () => Promise<string | undefined>): void {
  describe(`dispatcher API (${name})`, () => {
    let node: Harness
    let d: Dispatcher
    let dataDir: string

    const call = async (method: string, p: string, body?: FormData | URLSearchParams | string, headers: Record<string, string> = {}) => {
      const res = await fetch(d.url + p, { method, body, headers })
      const text = await res.text()
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      return { status: res.status, body: json as Json, text, res }
    }
    const form = (fields: Record<string, string>, file?: { name: string; data: string }) => {
      const f = new FormData()
      for (const [k, v] of Object.entries(fields)) f.append(k, v)
      if (file) f.append('file', new Blob([file.data]), file.name)
      return f
    }
    const samples = () => (existsSync(d.config.samplesDir) ? readdirSync(d.config.samplesDir) : [])
    /** Moves a task assigned to `nodeId` through submission to finished, as the worker does. */
    const finish = async (taskId: number, nodeId: number, nodeTaskId: number) => {
      const claimed = await d.store.claimForSubmit(nodeId, 100, 'test', 60)
      expect(claimed.map((t) => t.id)).toContain(taskId)
      for (const t of claimed) if (t.id !== taskId) await d.store.releaseClaim(t.id)
      await d.store.markSubmitted(taskId, nodeTaskId)
      expect(await d.store.claimForFetch(nodeId, nodeTaskId, 'test', 60)).not.toBeNull()
      await d.store.markFinished(taskId, '2026-01-02 03:04:05')
    }

    beforeAll(async () => {
      dataDir = mkdtempSync(path.join(tmpdir(), 'aviary-dist-api-'))
      const url = await db()
      ;[node, d] = await Promise.all([
        startHarness({ machines: { machines: [{ name: 'win7', ip: '192.168.56.101', platform: 'windows', tags: ['x64'] }] } }),
        startDispatcher({ dataDir, host: '127.0.0.1', port: 0, worker: false, logLevel: 'warn', nodeTimeoutMs: 5000, ...(url ? { db: url } : {}) })
      ])
    })
    afterAll(async () => {
      await d?.stop()
      await node?.stop()
      rmSync(dataDir, { recursive: true, force: true })
    })

    describe('nodes', () => {
      it('registers a node that answers, with its machines (newer: success + raw machines)', async () => {
        const r = await call('POST', '/api/node', new URLSearchParams({ name: 'n1', url: node.url }))
        expect(r.status).toBe(200)
        expect(r.body.success).toBe(true)
        expect(r.body.machines).toEqual([expect.objectContaining({ name: 'win7', platform: 'windows', tags: ['x64'] })])
        const stored = await d.store.getNode('n1')
        expect(stored?.machines).toEqual([{ name: 'win7', platform: 'windows', tags: ['x64'] }])
        expect(stored?.status).toMatchObject({ tasks: expect.any(Object) })
      })

      it('older POST /node answers {name, machines}; a duplicate name is 409', async () => {
        const r = await call('POST', '/node', form({ name: 'n2', url: `${node.url}/` }))
        expect(r.status).toBe(200)
        expect(r.body).toEqual({ name: 'n2', machines: [{ name: 'win7', platform: 'windows', tags: ['x64'] }] })
        const dup = await call('POST', '/api/node', new URLSearchParams({ name: 'n2', url: node.url }))
        expect(dup.status).toBe(409)
        expect(dup.body).toEqual({ success: false, message: 'There is already a node with this name' })
        expect((await call('POST', '/node', new URLSearchParams({ name: 'n2', url: node.url }))).body).toEqual({ message: 'There is already a node with this name' })
      })

      it('refuses a node that does not answer, and bad fields, with 400 naming the field', async () => {
        const dead = await call('POST', '/api/node', new URLSearchParams({ name: 'dead', url: 'http://127.0.0.1:1' }))
        expect(dead.status).toBe(400)
        expect(dead.body.success).toBe(false)
        expect(dead.body.message).toMatch(/^url: the node at http:\/\/127\.0\.0\.1:1 does not answer/)
        expect(await d.store.getNode('dead')).toBeNull()
        const cases: [URLSearchParams, RegExp][] = [
          [new URLSearchParams({ url: node.url }), /^name: required/],
          [new URLSearchParams({ name: 'x' }), /^url: required/],
          [new URLSearchParams({ name: 'x', url: 'ftp://h/' }), /^url: an http or https URL/],
          [new URLSearchParams({ name: 'a b', url: node.url }), /^name: /],
          [new URLSearchParams({ name: 'x', ip: 'bad ip!' }), /^ip: /]
        ]
        for (const [body, message] of cases) {
          const r = await call('POST', '/api/node', body)
          expect(r.status, body.toString()).toBe(400)
          expect(r.body.message).toMatch(message)
        }
        const older = await call('POST', '/node', new URLSearchParams({ url: node.url }))
        expect(older.status).toBe(400)
        expect(older.body).toEqual({ message: expect.stringMatching(/^name: required/) })
      })

      it('lists the nodes (newer with success; older bare) and ?mode=workers as text', async () => {
        const newer = await call('GET', '/api/node')
        expect(newer.body.success).toBe(true)
        const nodes = newer.body.nodes as Record<string, Json>
        expect(Object.keys(nodes).sort()).toEqual(['n1', 'n2'])
        expect(nodes.n1).toMatchObject({ name: 'n1', url: node.url, enabled: true, machines: [{ name: 'win7', platform: 'windows', tags: ['x64'] }] })
        // Its id, which tasks' node_id refers to.
        expect(nodes.n1!.id).toBe((await d.store.getNode('n1'))?.id)
        const older = await call('GET', '/node')
        expect(older.body).not.toHaveProperty('success')
        expect(Object.keys(older.body.nodes as Json).sort()).toEqual(['n1', 'n2'])
        const v1 = await call('GET', '/api/v1/node')
        expect(v1.body).toEqual(newer.body)
        const workers = await call('GET', '/api/node?mode=workers')
        expect(workers.res.headers.get('content-type')).toMatch(/^text\/plain/)
        expect(workers.text).toBe('n1 n2')
        expect((await call('GET', '/api/node?mode=other')).status).toBe(400)
      })

      it('views one node (newer: a one-element array; older: the object); unknown is 404', async () => {
        const newer = await call('GET', '/api/node/n1')
        expect(newer.body).toMatchObject({ success: true, nodes: [{ name: 'n1', url: node.url, machines: [{ name: 'win7' }] }] })
        const older = await call('GET', '/node/n1')
        expect(older.body).toMatchObject({ name: 'n1', url: node.url })
        expect(await call('GET', '/api/node/nope')).toMatchObject({ status: 404, body: { success: false, message: 'No such node' } })
        expect(await call('GET', '/node/nope')).toMatchObject({ status: 404, body: { message: 'No such node' } })
      })

      it('updates a node (newer {success}; older null), refuses a rename onto another name', async () => {
        const r = await call('PUT', '/api/node/n2', new URLSearchParams({ name: 'n2b', url: node.url + '/' }))
        expect(r.body).toEqual({ success: true })
        expect((await d.store.getNode('n2b'))?.url).toBe(node.url)
        const older = await call('PUT', '/node/n2b', new URLSearchParams({ name: 'n2' }))
        expect(older.status).toBe(200)
        expect(older.text).toBe('null')
        expect((await call('PUT', '/api/node/n2', new URLSearchParams({ name: 'n1' })))).toMatchObject({ status: 409, body: { success: false } })
        expect((await call('PUT', '/api/node/nope', new URLSearchParams({ name: 'x' }))).status).toBe(404)
        const bad = await call('PUT', '/api/node/n2', new URLSearchParams({ enabled: 'maybe' }))
        expect(bad.status).toBe(400)
        expect(bad.body.message).toMatch(/^enabled: one of 1\/0, true\/false/)
      })

      it('refreshes the machines (newer only); an unknown node is 404', async () => {
        await d.store.setMachines((await d.store.getNode('n1'))!.id, [])
        const r = await call('POST', '/api/node/n1/refresh')
        expect(r.body).toMatchObject({ success: true, machines: [{ name: 'win7', platform: 'windows' }] })
        expect((await d.store.getNode('n1'))?.machines).toEqual([{ name: 'win7', platform: 'windows', tags: ['x64'] }])
        expect((await call('POST', '/api/v1/node/nope/refresh')).status).toBe(404)
        expect((await call('POST', '/node/n1/refresh')).status).toBe(404)
      })

      it('disables with DELETE: no longer listed in either generation, still viewable by name; PUT enabled=1 enables again', async () => {
        const listed = async (): Promise<Record<string, string[]>> => {
          const out: Record<string, string[]> = {}
          for (const p of ['/api/node', '/api/v1/node', '/node']) out[p] = Object.keys((await call('GET', p)).body.nodes as Json).sort()
          out.workers = [(await call('GET', '/api/node?mode=workers')).text]
          return out
        }
        const both = { '/api/node': ['n1', 'n2'], '/api/v1/node': ['n1', 'n2'], '/node': ['n1', 'n2'], workers: ['n1 n2'] }
        const onlyN1 = { '/api/node': ['n1'], '/api/v1/node': ['n1'], '/node': ['n1'], workers: ['n1'] }
        expect(await listed()).toEqual(both)
        expect((await call('DELETE', '/api/node/n2')).body).toEqual({ success: true })
        expect((await d.store.getNode('n2'))?.enabled).toBe(false)
        expect(await listed()).toEqual(onlyN1)
        // Its history is kept: viewable by name, and PUT finds it by name.
        expect((await call('GET', '/api/node/n2')).body).toMatchObject({ success: true, nodes: [{ name: 'n2', enabled: false }] })
        expect((await call('GET', '/node/n2')).body).toMatchObject({ name: 'n2', enabled: false })
        expect((await call('PUT', '/node/n2', new URLSearchParams({ enabled: '1' }))).text).toBe('null')
        expect((await d.store.getNode('n2'))?.enabled).toBe(true)
        expect(await listed()).toEqual(both)
        const older = await call('DELETE', '/node/n2')
        expect(older.text).toBe('null')
        expect((await d.store.getNode('n2'))?.enabled).toBe(false)
        expect(await listed()).toEqual(onlyN1)
        expect((await call('DELETE', '/api/node/nope')).status).toBe(404)
      })
    })

    describe('tasks', () => {
      let fileTask: number
      let assignedTask: number

      it("accepts Cuckoo's dispatcher client form: every field a string, enforce_timeout=\"False\"", async () => {
        const fields = {
          package: 'exe', timeout: '120', priority: '2', options: 'procmemdump=yes', machine: '', platform: 'windows',
          tags: 'x64', custom: 'c', owner: 'alice', memory: 'False', clock: '', enforce_timeout: 'False'
        }
        const r = await call('POST', '/api/task', form(fields, { name: 'sample.exe', data: 'MZ sample bytes' }))
        expect(r.status).toBe(200)
        expect(r.body).toEqual({ success: true, task_id: expect.any(Number) })
        fileTask = r.body.task_id as number
        const t = (await d.store.getTask(fileTask))!
        expect(t).toMatchObject({ category: 'file', filename: 'sample.exe', package: 'exe', timeout: 120, priority: 2, options: 'procmemdump=yes',
          machine: null, platform: 'windows', tags: 'x64', custom: 'c', owner: 'alice', memory: 'False', enforce_timeout: 'False', status: 'pending' })
        expect(path.dirname(t.path!)).toBe(d.config.samplesDir)
        expect(samples()).toContain(path.basename(t.path!))
      })

      it('older POST /task answers a bare {task_id}; priority defaults to 1', async () => {
        const r = await call('POST', '/task', form({ package: 'exe' }, { name: 'b.bin', data: 'bytes' }))
        expect(r.body).toEqual({ task_id: expect.any(Number) })
        expect((await d.store.getTask(r.body.task_id as number))?.priority).toBe(1)
      })

      it('takes a URL (Aviary extension, field `url`), and node= assigns straight to that node', async () => {
        const r = await call('POST', '/api/task', new URLSearchParams({ url: 'example.com/x', node: 'n1', owner: 'bob' }))
        expect(r.status).toBe(200)
        assignedTask = r.body.task_id as number
        const t = (await d.store.getTask(assignedTask))!
        expect(t).toMatchObject({ category: 'url', url: 'http://example.com/x', path: null, status: 'assigned', node_id: (await d.store.getNode('n1'))!.id })
      })

      it('refuses bad submissions with 400 naming the field, and keeps no file', async () => {
        const before = samples().length
        const file = { name: 'x.exe', data: 'MZ' }
        const cases: [FormData | URLSearchParams, RegExp][] = [
          [form({ priority: '9' }, file), /^priority: a whole number from 1 to 3/],
          [form({ priority: 'high' }, file), /^priority: /],
          [form({ timeout: '-1' }, file), /^timeout: /],
          [form({ enforce_timeout: 'maybe' }, file), /^enforce_timeout: one of 1\/0/],
          [form({ memory: '2' }, file), /^memory: /],
          [form({ clock: 'yesterday' }, file), /^clock: /],
          [form({ node: 'nope' }, file), /^node: no enabled node is named 'nope'/],
          [form({ node: 'n2' }, file), /^node: no enabled node/],
          [form({ url: 'http://a/' }, file), /^url: send either a file or a url/],
          [form({ package: 'exe' }), /^file: required/],
          [form({ file: 'not a file part' }), /^file: must be a file part/],
          [form({}, { name: 'empty.exe', data: '' }), /^file: the file is empty/],
          [new URLSearchParams({ url: 'ftp://example.com/' }), /^url: an http or https URL/],
          // The dispatcher's own mark on the node's copy (worker/marker.ts), and the room it takes.
          [form({ options: 'route=none, aviary_dist=1-x' }, file), /^options: aviary_dist is set by the dispatcher/],
          [new URLSearchParams({ url: 'http://a/', options: 'aviary_dist=' }), /^options: aviary_dist is set by the dispatcher/],
          [form({ options: 'x'.repeat(4033) }, file), /^options: text of at most 4032 characters/]
        ]
        for (const [body, message] of cases) {
          const r = await call('POST', '/api/task', body)
          expect(r.status, message.source).toBe(400)
          expect(r.body).toEqual({ success: false, message: expect.stringMatching(message) })
        }
        const older = await call('POST', '/task', form({ priority: '0' }, file))
        // The refused value is quoted, as the analysis API does (one wording, src/shared/api/request-errors.ts).
        expect(older).toMatchObject({ status: 400, body: { message: expect.stringMatching(/^priority: .*\(got '0'\)$/) } })
        expect(older.body).not.toHaveProperty('success')
        expect(samples().length).toBe(before)
      })

      it('lists tasks keyed by id with offset, limit, finished, status, owner', async () => {
        const all = await call('GET', '/api/task')
        expect(all.body.success).toBe(true)
        const tasks = all.body.tasks as Record<string, Json>
        expect(Object.keys(tasks).map(Number)).toEqual([fileTask, fileTask + 1, assignedTask])
        expect(tasks[String(fileTask)]).toMatchObject({ id: fileTask, task_id: null, node_id: null, owner: 'alice', priority: 2, status: 'pending', finished: false })
        expect(tasks[String(fileTask + 1)]).toMatchObject({ owner: '' })
        const page = await call('GET', '/api/task?offset=1&limit=1')
        expect(Object.keys(page.body.tasks as Json)).toEqual([String(fileTask + 1)])
        expect(Object.keys((await call('GET', '/api/task?owner=bob')).body.tasks as Json)).toEqual([String(assignedTask)])
        expect(Object.keys((await call('GET', '/api/task?status=assigned')).body.tasks as Json)).toEqual([String(assignedTask)])
        expect(Object.keys((await call('GET', '/api/task?finished=1')).body.tasks as Json)).toEqual([])
        expect(Object.keys((await call('GET', '/api/task?finished=0')).body.tasks as Json)).toHaveLength(3)
        const older = await call('GET', '/task?limit=2')
        expect(older.body).not.toHaveProperty('success')
        expect(Object.keys(older.body.tasks as Json)).toHaveLength(2)
        const both = await call('GET', '/api/task?finished=1&status=pending')
        expect(both).toMatchObject({ status: 400, body: { success: false, message: expect.stringMatching(/^finished: do not combine finished and status/) } })
        for (const q of ['limit=abc', 'offset=-1', 'status=done', 'finished=2']) {
          const r = await call('GET', `/api/task?${q}`)
          expect(r.status, q).toBe(400)
          expect(r.body.message).toMatch(new RegExp(`^${q.split('=')[0]}: `))
        }
      })

      it('views one task (newer: single form; older: task_id is the dispatcher id); non-digit ids are 404', async () => {
        const newer = await call('GET', `/api/task/${assignedTask}`)
        expect(newer.body).toMatchObject({ success: true, tasks: { [String(assignedTask)]: { id: assignedTask, status: 'assigned', finished: false, url: 'http://example.com/x' } } })
        const older = await call('GET', `/task/${fileTask}`)
        expect(older.body).toMatchObject({ tasks: { [String(fileTask)]: { task_id: fileTask, package: 'exe' } } })
        expect(await call('GET', '/api/task/99999')).toMatchObject({ status: 404, body: { success: false, message: 'Task not found' } })
        expect(await call('GET', '/task/99999')).toMatchObject({ status: 404, body: { message: 'Task not found' } })
        for (const id of ['abc', '-1', '1e3', '0x10', '99999999999999999999']) expect((await call('GET', `/api/task/${id}`)).status, id).toBe(404)
      })

      it('serves reports: 420 (newer) / 404 (older) while unfinished, then the files', async () => {
        expect(await call('GET', `/api/report/${assignedTask}`)).toMatchObject({ status: 420, body: { success: false, message: 'Task not finished yet' } })
        expect(await call('GET', `/api/v1/report/${assignedTask}/json`)).toMatchObject({ status: 420 })
        expect(await call('GET', `/report/${assignedTask}`)).toMatchObject({ status: 404, body: { message: 'Task not finished yet' } })
        expect(await call('GET', `/api/pcap/${assignedTask}`)).toMatchObject({ status: 420 })
        await finish(assignedTask, (await d.store.getNode('n1'))!.id, 41)
        const dir = path.join(d.config.reportsDir, String(assignedTask))
        mkdirSync(dir, { recursive: true })
        writeFileSync(path.join(dir, 'report.json'), JSON.stringify({ info: { id: 41 } }))
        writeFileSync(path.join(dir, 'report.html'), '<html><script>alert(1)</script></html>')
        writeFileSync(path.join(dir, 'dump.pcap'), Buffer.from([0xd4, 0xc3, 0xb2, 0xa1]))
        const json = await call('GET', `/api/report/${assignedTask}`)
        expect(json.status).toBe(200)
        expect(json.res.headers.get('content-type')).toMatch(/^application\/json/)
        expect(json.body).toEqual({ info: { id: 41 } })
        expect((await call('GET', `/report/${assignedTask}/json`)).body).toEqual({ info: { id: 41 } })
        const html = await call('GET', `/api/report/${assignedTask}/html`)
        expect(html.res.headers.get('content-type')).toMatch(/^text\/html/)
        expect(html.res.headers.get('content-security-policy')).toMatch(/^sandbox/)
        expect(await call('GET', `/api/report/${assignedTask}/maec`)).toMatchObject({ status: 404, body: { success: false, message: 'Report format not found' } })
        expect(await call('GET', `/api/report/${assignedTask}/a.b`)).toMatchObject({ status: 400, body: { message: expect.stringMatching(/^format: /) } })
        const pcap = await fetch(`${d.url}/api/pcap/${assignedTask}`)
        expect(pcap.status).toBe(200)
        expect([...new Uint8Array(await pcap.arrayBuffer())]).toEqual([0xd4, 0xc3, 0xb2, 0xa1])
        expect((await call('GET', `/pcap/${assignedTask}`)).status).toBe(404)
        expect((await call('GET', '/api/report/99999')).body).toEqual({ success: false, message: 'Task not found' })
        const listed = (await call('GET', '/api/task?finished=1')).body.tasks as Record<string, Json>
        expect(listed[String(assignedTask)]).toMatchObject({ task_id: 41, status: 'finished', finished: true, started: expect.any(String) })
      })

      it('deletes a task with its sample, reports and pcap; a second newer delete says so', async () => {
        const dir = path.join(d.config.reportsDir, String(assignedTask))
        const r = await call('DELETE', `/api/task/${assignedTask}`)
        expect(r.body).toEqual({ success: true })
        expect(existsSync(dir)).toBe(false)
        const again = await call('DELETE', `/api/task/${assignedTask}`)
        expect(again).toMatchObject({ status: 200, body: { success: false, message: 'Task already deleted' } })
        expect(await call('GET', `/api/report/${assignedTask}`)).toMatchObject({ status: 404, body: { message: 'Task report has been deleted' } })
        expect((await call('GET', `/api/pcap/${assignedTask}`)).body).toMatchObject({ message: 'Task files has been deleted' })
        const samplePath = (await d.store.getTask(fileTask))!.path!
        const older = await call('DELETE', `/task/${fileTask}`)
        expect(older.status).toBe(200)
        expect(older.text).toBe('null')
        expect(existsSync(samplePath)).toBe(false)
        // A pending task is removed outright.
        expect((await call('GET', `/api/task/${fileTask}`)).status).toBe(404)
        expect((await call('DELETE', '/task/99999')).status).toBe(404)
        expect((await call('DELETE', '/api/task/abc')).status).toBe(404)
      })

      it('deleting a task its node is running leaves the node copy in the cleanup ledger for the worker', async () => {
        const id = (await call('POST', '/api/task', new URLSearchParams({ url: 'example.com/running', node: 'n1' }))).body.task_id as number
        const nodeId = (await d.store.getTask(id))!.node_id!
        const claimed = await d.store.claimForSubmit(nodeId, 100, 'test', 60)
        for (const t of claimed) if (t.id !== id) await d.store.releaseClaim(t.id)
        await d.store.markSubmitted(id, 77)
        expect((await call('DELETE', `/api/task/${id}`)).body).toEqual({ success: true })
        expect(existsSync(path.join(d.config.reportsDir, '.node-cleanup', `${nodeId}-77`))).toBe(true)
      })

      it('DELETE /api/tasks deletes several (unknown ids skipped); bad ids are a 400', async () => {
        const ids: number[] = []
        for (let i = 0; i < 2; i++) ids.push((await call('POST', '/api/task', form({}, { name: `s${i}`, data: `data ${i}` }))).body.task_id as number)
        const bad = await call('DELETE', '/api/tasks', new URLSearchParams({ task_ids: `${ids[0]} x` }))
        expect(bad).toMatchObject({ status: 400, body: { success: false, message: expect.stringMatching(/^task_ids: /) } })
        expect(await d.store.getTask(ids[0]!)).not.toBeNull()
        const r = await call('DELETE', '/api/tasks', new URLSearchParams({ task_ids: `${ids.join(' ')} 99999` }))
        expect(r.body).toEqual({ success: true, deleted: ids })
        for (const id of ids) expect(await d.store.getTask(id)).toBeNull()
        expect((await call('DELETE', '/tasks', new URLSearchParams({ task_ids: '1' }))).status).toBe(404)
      })
    })

    describe('status, OpenAPI and the edges', () => {
      it('GET /api/status (newer) and /status (older)', async () => {
        const newer = await call('GET', '/api/status')
        expect(newer.body).toMatchObject({
          success: true,
          dist: { diskspace: { reports: { total: expect.any(Number) }, samples: { free: expect.any(Number) } } },
          nodes: { n1: { tasks: expect.any(Object) } },
          tasks: { all: expect.objectContaining({ pending: expect.any(Number) }) },
          timestamp: expect.any(Number)
        })
        const older = await call('GET', '/status')
        expect(older.body).toEqual({ nodes: { n1: expect.any(Object) }, tasks: { pending: expect.any(Number), processing: expect.any(Number), processed: expect.any(Number) } })
      })

      it('/openapi.json documents every route of both generations', async () => {
        const doc = (await call('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> }
        const routes: [string, string][] = []
        const older: [string, string][] = [['get', '/node'], ['post', '/node'], ['get', '/node/{name}'], ['put', '/node/{name}'], ['delete', '/node/{name}'],
          ['get', '/task'], ['post', '/task'], ['get', '/task/{id}'], ['delete', '/task/{id}'], ['get', '/report/{id}'], ['get', '/report/{id}/{format}'], ['get', '/status']]
        routes.push(...older)
        for (const prefix of ['/api', '/api/v1']) {
          for (const [m, p] of [...older, ['post', '/node/{name}/refresh'], ['delete', '/tasks'], ['get', '/pcap/{id}']] as [string, string][]) routes.push([m, prefix + p])
        }
        for (const [m, p] of routes) expect(doc.paths[p]?.[m], `${m} ${p}`).toBeDefined()
        const post = doc.paths['/api/task']!.post as { requestBody: { content: Record<string, { schema: { properties: Json } }> } }
        expect(post.requestBody.content['multipart/form-data']!.schema.properties.file).toMatchObject({ type: 'string', format: 'binary' })
      })

      it('answers unknown paths, malformed bodies and cross-site requests with JSON 4xx', async () => {
        expect(await call('GET', '/api/nothing')).toMatchObject({ status: 404, body: { success: false } })
        expect(await call('GET', '/nothing')).toMatchObject({ status: 404, body: { message: expect.any(String) } })
        const badJson = await call('POST', '/api/node', '{"name":', { 'content-type': 'application/json' })
        expect(badJson.status).toBe(400)
        expect(badJson.body.success).toBe(false)
        const badMultipart = await call('POST', '/api/task', '--x\r\nbroken', { 'content-type': 'multipart/form-data; boundary=x' })
        expect(badMultipart.status).toBe(400)
        expect(await call('GET', '/api/node/%ZZ')).toMatchObject({ status: 400, body: { success: false, message: expect.stringMatching(/^path: /) } })
        expect(await call('GET', `/node/${'n'.repeat(2000)}`)).toMatchObject({ status: 404, body: { message: expect.any(String) } })
        const xsite = await call('POST', '/api/task', new URLSearchParams({ url: 'http://a/' }), { origin: 'http://evil.example' })
        expect(xsite).toMatchObject({ status: 403, body: { success: false } })
      })
    })
  })
}
