// One contract for both stores (run by store.sqlite.test.ts and store.postgres.test.ts): whatever
// the database, the dispatcher's API and worker see the same behaviour.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openStore } from './index'
import { racePhase, type RacePhase } from './race'
import { DuplicateNodeError, type DistStore, type NewDistTask } from './types'

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url))

export interface ContractTarget {
  /** A new, empty database, as the `--db` value that names it. */
  newDb(): Promise<string>
}

export function task(over: Partial<NewDistTask> = {}): NewDistTask {
  return {
    category: 'file', path: '/samples/x', filename: 'x.exe', url: null, package: null, timeout: null, priority: 1,
    options: null, machine: null, platform: null, tags: null, custom: null, owner: null, memory: null, clock: null,
    enforce_timeout: null, ...over
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

export function storeContract(name: string, target: () => ContractTarget): void {
  describe(`dispatcher store contract: ${name}`, () => {
    const open: DistStore[] = []
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'aviary-dist-store-'))
    let db = ''
    const connect = async (d = db): Promise<DistStore> => {
      const s = await openStore(d, tmp)
      open.push(s)
      return s
    }
    const fresh = async (): Promise<DistStore> => {
      db = await target().newDb()
      return connect()
    }
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()))
    })
    afterAll(() => rmSync(tmp, { recursive: true, force: true }))

    it('migrates once and again without losing data', async () => {
      const s = await fresh()
      const id = await s.createTask(task())
      await s.migrate()
      const again = await connect()
      expect((await again.getTask(id))?.id).toBe(id)
    })

    it('adds, reads, lists and updates nodes; names are unique', async () => {
      const s = await fresh()
      const a = await s.addNode({ name: 'a', url: 'http://a:8090/', machines: [{ name: 'win', platform: 'windows', tags: ['x', 'y'] }] })
      expect(a).toMatchObject({ name: 'a', url: 'http://a:8090/', mode: 'normal', enabled: true, failures: 0, last_seen: null, status: null })
      expect(a.machines).toEqual([{ name: 'win', platform: 'windows', tags: ['x', 'y'] }])
      const b = await s.addNode({ name: 'b', url: 'http://b/', mode: 'research', machines: [] })
      await expect(s.addNode({ name: 'a', url: 'http://other/', machines: [] })).rejects.toBeInstanceOf(DuplicateNodeError)
      expect(await s.getNode('b')).toMatchObject({ id: b.id, mode: 'research', machines: [] })
      expect((await s.getNodeById(a.id))?.name).toBe('a')
      expect(await s.getNode('nope')).toBeNull()
      expect(await s.getNodeById(9999)).toBeNull()

      expect(await s.updateNode('b', { enabled: false, url: 'http://b2/' })).toMatchObject({ enabled: false, url: 'http://b2/' })
      expect((await s.listNodes()).map((n) => n.name)).toEqual(['a', 'b'])
      expect((await s.listNodes({ enabledOnly: true })).map((n) => n.name)).toEqual(['a'])
      await expect(s.updateNode('b', { name: 'a' })).rejects.toBeInstanceOf(DuplicateNodeError)
      expect(await s.updateNode('b', { name: 'c', mode: 'normal' })).toMatchObject({ id: b.id, name: 'c', mode: 'normal' })
      expect(await s.updateNode('b', { enabled: true })).toBeNull()
      expect(await s.updateNode('c', {})).toMatchObject({ name: 'c' })
    })

    it("keeps a node's API token; a patch replaces or removes it", async () => {
      const s = await fresh()
      expect((await s.addNode({ name: 'open', url: 'http://o/', machines: [] })).token).toBeNull()
      expect((await s.addNode({ name: 'locked', url: 'http://l/', token: 'tok-1', machines: [] })).token).toBe('tok-1')
      expect((await s.updateNode('locked', { token: 'tok-2' }))?.token).toBe('tok-2')
      expect((await s.listNodes()).map((n) => n.token)).toEqual([null, 'tok-2'])
      expect((await s.updateNode('locked', { token: null }))?.token).toBeNull()
    })

    it('replaces machines and records contacts', async () => {
      const s = await fresh()
      const a = await s.addNode({ name: 'a', url: 'http://a/', machines: [{ name: 'm1', platform: 'windows', tags: [] }] })
      await s.setMachines(a.id, [{ name: 'm2', platform: 'linux', tags: ['t'] }, { name: 'm3', platform: 'windows', tags: [] }])
      expect((await s.getNode('a'))?.machines).toEqual([{ name: 'm2', platform: 'linux', tags: ['t'] }, { name: 'm3', platform: 'windows', tags: [] }])
      expect((await s.listNodes())[0]?.machines.map((m) => m.name)).toEqual(['m2', 'm3'])

      expect((await s.recordContact(a.id, false)).failures).toBe(1)
      expect((await s.recordContact(a.id, false)).failures).toBe(2)
      const ok = await s.recordContact(a.id, true, { tasks: { pending: 3 }, hostname: 'a' })
      expect(ok.failures).toBe(0)
      expect(ok.status).toEqual({ tasks: { pending: 3 }, hostname: 'a' })
      expect(ok.last_seen).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      await expect(s.recordContact(9999, true, {})).rejects.toThrow()
    })

    it('creates, reads and lists tasks with offset, limit, finished, status and owner', async () => {
      const s = await fresh()
      const node = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      const full = task({ package: 'exe', timeout: 120, priority: 2, options: 'a=b', machine: 'm', platform: 'windows', tags: 't1,t2', custom: 'c', owner: 'alice', memory: '1', clock: '01-01-2020 10:00:00', enforce_timeout: '1' })
      const id1 = await s.createTask(full)
      const id2 = await s.createTask(task({ category: 'url', path: null, filename: null, url: 'http://e.x/', owner: 'bob' }))
      const id3 = await s.createTask(task({ owner: 'alice', node_id: node.id }))
      expect(id2).toBeGreaterThan(id1)
      const t1 = await s.getTask(id1)
      const { node_id: _n, ...fields } = full
      expect(t1).toMatchObject({ ...fields, id: id1, status: 'pending', node_id: null, node_task_id: null, delegated: null, started: null, completed: null })
      expect(t1?.submitted).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      expect(await s.getTask(id2)).toMatchObject({ category: 'url', url: 'http://e.x/', path: null, priority: 1, timeout: null })
      expect(await s.getTask(id3)).toMatchObject({ status: 'assigned', node_id: node.id })
      expect(await s.getTask(9999)).toBeNull()

      const ids = async (q: Parameters<DistStore['listTasks']>[0]): Promise<number[]> => (await s.listTasks(q)).map((t) => t.id)
      expect(await ids({})).toEqual([id1, id2, id3])
      expect(await ids({ offset: 1 })).toEqual([id2, id3])
      expect(await ids({ limit: 2 })).toEqual([id1, id2])
      expect(await ids({ offset: 1, limit: 1 })).toEqual([id2])
      expect(await ids({ owner: 'alice' })).toEqual([id1, id3])
      expect(await ids({ owner: '' })).toEqual([id1, id2, id3])
      expect(await ids({ status: 'assigned' })).toEqual([id3])
      expect(await ids({ finished: true })).toEqual([])
      expect(await ids({ finished: false, owner: 'bob' })).toEqual([id2])

      const [claimed] = await s.claimForSubmit(node.id, 1, 'w', 60)
      await s.markSubmitted(claimed!.id, 7)
      await s.claimForFetch(node.id, 7, 'w', 60)
      await s.markFinished(id3, '2020-01-01 10:00:00')
      expect(await ids({ finished: true })).toEqual([id3])
      expect(await ids({ finished: false })).toEqual([id1, id2])
      expect(await s.countByStatus()).toEqual({ pending: 2, assigned: 0, processing: 0, finished: 1, deleted: 0 })
    })

    it('deletes: a pending task is removed, any other becomes deleted', async () => {
      const s = await fresh()
      const node = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      const pending = await s.createTask(task())
      const assigned = await s.createTask(task({ node_id: node.id }))
      expect((await s.deleteTask(pending))?.status).toBe('pending')
      expect(await s.getTask(pending)).toBeNull()
      expect((await s.deleteTask(assigned))?.status).toBe('assigned')
      expect((await s.getTask(assigned))?.status).toBe('deleted')
      expect((await s.deleteTask(assigned))?.status).toBe('deleted')
      expect(await s.deleteTask(9999)).toBeNull()
      // A deleted task is not handed to a worker again, nor revived by a late markSubmitted.
      expect(await s.claimForSubmit(node.id, 10, 'w', 60)).toEqual([])
      await s.markSubmitted(assigned, 5)
      expect((await s.getTask(assigned))?.status).toBe('deleted')
      expect(await s.countByStatus()).toEqual({ pending: 0, assigned: 0, processing: 0, finished: 0, deleted: 1 })
    })

    it('assigns by priority, to the candidate with the smallest queue, leaving unservable tasks pending', async () => {
      const s = await fresh()
      const a = await s.addNode({ name: 'a', url: 'http://a/', machines: [] })
      const b = await s.addNode({ name: 'b', url: 'http://b/', machines: [] })
      const c = await s.addNode({ name: 'c', url: 'http://c/', machines: [] })
      const linux: number[] = []
      for (let i = 0; i < 3; i++) linux.push(await s.createTask(task({ platform: 'linux' })))
      const low = await s.createTask(task({ priority: 1 }))
      const high = await s.createTask(task({ priority: 5 }))
      const mid = await s.createTask(task({ priority: 3 }))
      const rest: number[] = []
      for (let i = 0; i < 4; i++) rest.push(await s.createTask(task()))
      // Only c serves linux; windows tasks go to a or b. b starts with a longer queue.
      const candidates = (t: { platform: string | null }): number[] => (t.platform === 'linux' ? [] : [a.id, b.id])
      const queue = new Map([[b.id, 2]])
      const first = await s.assignPending(3, candidates, queue)
      // The first page (limit 3) holds an unservable task, so a second page supplies the third.
      expect(first.map((t) => t.id)).toEqual([high, mid, low])
      // Ties go to the lower id.
      expect(first.map((t) => t.node_id)).toEqual([a.id, a.id, a.id])
      expect(queue).toEqual(new Map([[a.id, 3], [b.id, 2]]))
      expect((await s.getTask(high))).toMatchObject({ status: 'assigned', node_id: a.id })
      for (const id of linux) expect((await s.getTask(id))?.status).toBe('pending')

      const second = await s.assignPending(100, candidates, queue)
      expect(second.map((t) => t.id)).toEqual(rest)
      expect(second.map((t) => t.node_id)).toEqual([b.id, a.id, b.id, a.id])
      expect(await s.queueByNode()).toEqual(new Map([[a.id, 5], [b.id, 2]]))
      expect(await s.assignPending(100, candidates, queue)).toEqual([])
      const linuxDone = await s.assignPending(100, (t) => (t.platform === 'linux' ? [c.id] : []), new Map())
      expect(linuxDone.map((t) => [t.id, t.node_id])).toEqual(linux.map((id) => [id, c.id]))
      expect(await s.assignPending(0, () => [a.id], new Map())).toEqual([])
    })

    it('leases submit claims: skipped while held, free on release or expiry, ended by markSubmitted', async () => {
      const s = await fresh()
      const other = await connect()
      const n = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      const ids: number[] = []
      for (const p of [1, 1, 4, 1]) ids.push(await s.createTask(task({ priority: p, node_id: n.id })))
      const claimed = await s.claimForSubmit(n.id, 3, 'w1', 0.3)
      expect(claimed.map((t) => t.id)).toEqual([ids[2], ids[0], ids[1]])
      expect((await other.claimForSubmit(n.id, 10, 'w2', 60)).map((t) => t.id)).toEqual([ids[3]])
      expect(await other.claimForSubmit(n.id, 10, 'w2', 60)).toEqual([])
      await s.releaseClaim(ids[0]!)
      expect((await other.claimForSubmit(n.id, 10, 'w2', 60)).map((t) => t.id)).toEqual([ids[0]])
      await s.markSubmitted(ids[2]!, 42)
      expect(await s.getTask(ids[2]!)).toMatchObject({ status: 'processing', node_task_id: 42 })
      expect((await s.getTask(ids[2]!))?.delegated).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      // w1 crashed holding ids[1]: after the lease it is claimable again.
      await sleep(400)
      expect((await other.claimForSubmit(n.id, 10, 'w2', 60)).map((t) => t.id)).toEqual([ids[1]])
      expect(await s.claimForSubmit(n.id + 1, 10, 'w1', 60)).toEqual([])
    })

    it('marks many tasks submitted at once: assigned ones only, each with its node task id', async () => {
      const s = await fresh()
      const n = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      const ids: number[] = []
      for (let i = 0; i < 4; i++) ids.push(await s.createTask(task({ node_id: n.id })))
      const pending = await s.createTask(task())
      const claimed = await s.claimForSubmit(n.id, 4, 'w', 60)
      await s.deleteTask(ids[3]!)
      expect(await s.markSubmittedMany([])).toEqual([])
      const marked = await s.markSubmittedMany([
        { taskId: ids[0]!, nodeTaskId: 10 }, { taskId: ids[1]!, nodeTaskId: 11 }, { taskId: ids[3]!, nodeTaskId: 13 }, { taskId: pending, nodeTaskId: 14 }
      ])
      // The deleted and the pending one were not marked, and the caller is told so.
      expect(marked.sort((a, b) => a - b)).toEqual([ids[0], ids[1]])
      expect(claimed.length).toBe(4)
      expect(await s.getTask(ids[0]!)).toMatchObject({ status: 'processing', node_task_id: 10 })
      expect(await s.getTask(ids[1]!)).toMatchObject({ status: 'processing', node_task_id: 11 })
      expect((await s.getTask(ids[1]!))?.delegated).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      // Not in the batch: still assigned and still leased. Deleted and pending ones keep their state.
      expect(await s.getTask(ids[2]!)).toMatchObject({ status: 'assigned', node_task_id: null })
      expect(await s.getTask(ids[3]!)).toMatchObject({ status: 'deleted', node_task_id: null })
      expect(await s.getTask(pending)).toMatchObject({ status: 'pending', node_task_id: null })
      // The marked ones left the lease: a fetch claim finds them, a submit claim does not.
      expect(await s.claimForSubmit(n.id, 10, 'w2', 60)).toEqual([])
      expect((await s.claimForFetch(n.id, 11, 'w2', 60))?.id).toBe(ids[1])
    })

    it("lists the holders of running leases, and ends every lease of one (a worker that died) at once", async () => {
      const s = await fresh()
      const other = await connect()
      const n = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      const ids: number[] = []
      for (let i = 0; i < 5; i++) ids.push(await s.createTask(task({ node_id: n.id })))
      const [first] = await s.claimForSubmit(n.id, 1, 'x', 60)
      await s.markSubmitted(first!.id, 9)
      expect((await s.claimForFetch(n.id, 9, 'dead', 60))?.id).toBe(ids[0])
      expect((await s.claimForSubmit(n.id, 2, 'dead', 60)).map((t) => t.id)).toEqual([ids[1], ids[2]])
      expect((await s.claimForSubmit(n.id, 1, 'alive', 60)).map((t) => t.id)).toEqual([ids[3]])
      expect((await s.claimForSubmit(n.id, 1, 'lapsed', 0.05)).map((t) => t.id)).toEqual([ids[4]])
      await sleep(100)
      // A lease that ran out is nobody's any more.
      expect((await other.leaseHolders()).sort()).toEqual(['alive', 'dead'])
      expect(await other.releaseLeases('dead')).toBe(3)
      expect(await other.releaseLeases('nobody')).toBe(0)
      expect(await s.leaseHolders()).toEqual(['alive'])
      // Free without waiting for the 60 s: submit claims and the fetch claim alike.
      expect((await other.claimForSubmit(n.id, 10, 'w2', 60)).map((t) => t.id)).toEqual([ids[1], ids[2], ids[4]])
      expect((await other.claimForFetch(n.id, 9, 'w2', 60))?.id).toBe(ids[0])
      expect(await s.getTask(ids[3]!)).toMatchObject({ status: 'assigned' })
    })

    it('claims a processing task for fetching once; the lease expires; the newest id wins', async () => {
      const s = await fresh()
      const other = await connect()
      const n = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      const old = await s.createTask(task({ node_id: n.id }))
      const newer = await s.createTask(task({ node_id: n.id }))
      expect(await s.claimForFetch(n.id, 9, 'w1', 60)).toBeNull()
      for (const t of await s.claimForSubmit(n.id, 10, 'w1', 60)) await s.markSubmitted(t.id, 9)
      const got = await s.claimForFetch(n.id, 9, 'w1', 0.3)
      expect(got?.id).toBe(newer)
      // The older task with the same node id is a separate claim; the newer one is held.
      expect((await other.claimForFetch(n.id, 9, 'w2', 60))?.id).toBe(old)
      expect(await other.claimForFetch(n.id, 9, 'w2', 60)).toBeNull()
      await sleep(400)
      expect((await other.claimForFetch(n.id, 9, 'w2', 60))?.id).toBe(newer)
      await other.markFinished(newer, '2026-01-02 03:04:05')
      expect(await s.getTask(newer)).toMatchObject({ status: 'finished', started: '2026-01-02 03:04:05' })
      expect((await s.getTask(newer))?.completed).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      expect(await s.claimForFetch(n.id, 9, 'w1', 60)).toBeNull()
      expect(await s.claimForFetch(n.id + 1, 9, 'w1', 60)).toBeNull()
      // Known in any status (finished here), on that node only.
      expect(await s.knowsNodeTask(n.id, 9)).toBe(true)
      expect(await s.knowsNodeTask(n.id, 10)).toBe(false)
      expect(await s.knowsNodeTask(n.id + 1, 9)).toBe(false)
    })

    it('requeues the unfinished tasks of a node that stopped answering', async () => {
      const s = await fresh()
      const n = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      const m = await s.addNode({ name: 'm', url: 'http://m/', machines: [] })
      const ids: number[] = []
      for (let i = 0; i < 4; i++) ids.push(await s.createTask(task({ node_id: n.id })))
      const onM = await s.createTask(task({ node_id: m.id }))
      const [first, second] = await s.claimForSubmit(n.id, 2, 'w', 60)
      await s.markSubmitted(first!.id, 1)
      await s.markSubmitted(second!.id, 2)
      await s.claimForFetch(n.id, 1, 'w', 60)
      await s.markFinished(first!.id, null)
      expect(await s.requeueNode(n.id)).toBe(3)
      for (const id of ids.slice(1)) {
        expect(await s.getTask(id)).toMatchObject({ status: 'pending', node_id: null, node_task_id: null, delegated: null })
      }
      expect((await s.getTask(first!.id))?.status).toBe('finished')
      expect((await s.getTask(onM))?.node_id).toBe(m.id)
      // A late fetch result for a requeued task changes nothing.
      await s.markFinished(second!.id, null)
      expect((await s.getTask(second!.id))?.status).toBe('pending')
      expect(await s.requeueNode(n.id)).toBe(0)
      expect((await s.assignPending(10, () => [m.id], new Map())).length).toBe(3)
    })

    it('decides a copy found on a node once: taken over by its task, assigned there and claimed by the worker, or given up', async () => {
      const s = await fresh()
      const n = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      const m = await s.addNode({ name: 'm', url: 'http://m/', machines: [] })
      const ids: number[] = []
      for (let i = 0; i < 5; i++) ids.push(await s.createTask(task({ node_id: n.id })))
      const unclaimed = await s.createTask(task({ node_id: n.id }))
      expect((await s.claimForSubmit(n.id, 5, 'w1', 60)).map((t) => t.id)).toEqual(ids)
      const adopt = (marker: string, taskId: number, nodeTaskId: number, o: { nodeId?: number; worker?: string } = {}) =>
        s.adoptCopy({ marker, taskId, nodeId: o.nodeId ?? n.id, nodeTaskId, worker: o.worker ?? 'w1' })

      // Not the worker that holds the claim, not the task's node, a task nobody claimed: refused, nothing recorded.
      expect(await adopt('A', ids[0]!, 50, { worker: 'w2' })).toBe(false)
      expect(await adopt('A', ids[0]!, 50, { nodeId: m.id })).toBe(false)
      expect(await adopt('A', unclaimed, 50)).toBe(false)
      expect(await s.copyDecision('A')).toBeNull()
      expect(await s.getTask(ids[0]!)).toMatchObject({ status: 'assigned', node_task_id: null })

      expect(await adopt('A', ids[0]!, 50)).toBe(true)
      expect(await s.copyDecision('A')).toEqual({ outcome: 'adopted', task_id: ids[0], node_id: n.id, node_task_id: 50 })
      expect(await s.getTask(ids[0]!)).toMatchObject({ status: 'processing', node_task_id: 50 })
      expect((await s.getTask(ids[0]!))?.delegated).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      // Out of the submit lease: fetched like any submitted task.
      expect((await s.claimForFetch(n.id, 50, 'w2', 60))?.id).toBe(ids[0])

      // A mark is decided once; a node task a processing task knows is taken by no other task.
      expect(await adopt('A', ids[1]!, 51)).toBe(false)
      expect(await adopt('B', ids[1]!, 50)).toBe(false)
      expect(await s.copyDecision('B')).toBeNull()
      expect(await s.abandonCopy({ marker: 'A', taskId: ids[0]!, nodeId: n.id })).toMatchObject({ outcome: 'adopted', node_task_id: 50 })

      // Given up: it stays so, and the task is still to be submitted.
      expect(await s.abandonCopy({ marker: 'C', taskId: ids[2]!, nodeId: n.id })).toEqual({ outcome: 'abandoned', task_id: ids[2], node_id: n.id, node_task_id: null })
      expect(await s.abandonCopy({ marker: 'C', taskId: ids[2]!, nodeId: n.id })).toMatchObject({ outcome: 'abandoned' })
      expect(await adopt('C', ids[2]!, 52)).toBe(false)
      expect(await s.getTask(ids[2]!)).toMatchObject({ status: 'assigned', node_task_id: null })

      // A deleted task takes nothing over.
      await s.deleteTask(ids[3]!)
      expect(await adopt('D', ids[3]!, 53)).toBe(false)
      // Once the task that had it is finished, a node that handed the id out again (its database
      // was reset) may carry another task's copy under it.
      await s.markFinished(ids[0]!, null)
      expect(await adopt('B', ids[1]!, 50)).toBe(true)
      expect(await s.getTask(ids[1]!)).toMatchObject({ status: 'processing', node_task_id: 50 })
    })

    it('decides each copy once when workers race over it on separate connections', async () => {
      const s = await fresh()
      const racers = [s, await connect(), await connect()]
      const n = await s.addNode({ name: 'n', url: 'http://n/', machines: [] })
      for (let round = 0; round < 10; round++) {
        // Three tasks, each claimed by its own worker, all shown the same node task (a hostile
        // node): one of them takes it.
        const ids = [await s.createTask(task({ node_id: n.id })), await s.createTask(task({ node_id: n.id })), await s.createTask(task({ node_id: n.id }))]
        for (const [i, id] of ids.entries()) {
          await racers[i]!.claimForSubmit(n.id, 1, `w${i}`, 60)
          expect((await s.getTask(id))?.status).toBe('assigned')
        }
        const nodeTaskId = 1000 + round
        const won = await Promise.all(ids.map((id, i) => racers[i]!.adoptCopy({ marker: `r${round}-${i}`, taskId: id, nodeId: n.id, nodeTaskId, worker: `w${i}` })))
        expect(won.filter(Boolean), `round ${round}`).toHaveLength(1)
        const holders = (await s.listTasks({ status: 'processing' })).filter((t) => t.node_task_id === nodeTaskId)
        expect(holders.map((t) => t.id)).toEqual([ids[won.indexOf(true)]])
        for (const t of holders) await s.markFinished(t.id, null)
        for (const id of ids) await s.deleteTask(id)

        // One mark, taken over by its task while the collector gives it up: one decision stands, and both see it.
        const t = await s.createTask(task({ node_id: n.id }))
        await racers[0]!.claimForSubmit(n.id, 1, 'w0', 60)
        const marker = `race-${round}`
        const [adopted, decision] = await Promise.all([
          racers[0]!.adoptCopy({ marker, taskId: t, nodeId: n.id, nodeTaskId: 2000 + round, worker: 'w0' }),
          racers[1]!.abandonCopy({ marker, taskId: t, nodeId: n.id })
        ])
        expect(decision.outcome).toBe(adopted ? 'adopted' : 'abandoned')
        expect((await s.getTask(t))?.status).toBe(adopted ? 'processing' : 'assigned')
        if (adopted) await s.markFinished(t, null)
        await s.deleteTask(t)
      }
    })

    describe('racing workers over 2,000 tasks', () => {
      const TASKS = 2000
      let childScript = ''
      beforeAll(async () => {
        // The child is TypeScript: bundle it once (native and optional modules stay external and
        // resolve through NODE_PATH from the repo's node_modules).
        childScript = path.join(tmp, 'race-child.cjs')
        await build({
          entryPoints: [fileURLToPath(new URL('./race-child.ts', import.meta.url))],
          bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: childScript, logLevel: 'error',
          external: ['better-sqlite3', 'pg-native']
        })
      })

      /** A racer process: `ready` once it has connected, `go()` starts it, `result` is what it won. */
      const racer = (d: string, phase: RacePhase, worker: string, nodes: number[]): { ready: Promise<void>; go: () => void; result: Promise<number[]> } => {
        const child = spawn(process.execPath, [childScript, d, phase, worker, nodes.join(',')], {
          env: { ...process.env, NODE_PATH: path.join(repoRoot, 'node_modules') },
          stdio: ['pipe', 'pipe', 'pipe'],
          timeout: 90_000
        })
        let out = ''
        let err = ''
        let onReady: () => void = () => undefined
        const ready = new Promise<void>((resolve) => (onReady = resolve))
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          out += chunk
          if (out.startsWith('ready\n')) onReady()
        })
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
        const result = new Promise<number[]>((resolve, reject) => {
          child.once('error', reject)
          child.once('close', (code) => {
            onReady() // a child that died early must not leave the others waiting
            if (code === 0) resolve(JSON.parse(out.replace(/^ready\n/, '')) as number[])
            else reject(new Error(`${worker} (${phase}) exited with ${code}: ${err}`))
          })
        })
        return { ready, go: () => child.stdin.end('go\n'), result }
      }

      const seed = async (): Promise<{ s: DistStore; nodes: number[] }> => {
        const s = await fresh()
        const nodes: number[] = []
        for (const name of ['a', 'b', 'c']) nodes.push((await s.addNode({ name, url: `http://${name}/`, machines: [] })).id)
        for (let i = 0; i < TASKS; i++) await s.createTask(task({ priority: (i % 3) + 1 }))
        return { s, nodes }
      }

      const expectPartition = (shares: number[][], label: string): void => {
        const all = shares.flat()
        expect(new Set(all).size, `${label}: a task was handed out twice`).toBe(all.length)
        expect(all.length, `${label}: every task handed out`).toBe(TASKS)
        // A race in which one racer did everything proves nothing; each must have won some.
        for (const share of shares) expect(share.length, `${label}: every racer won some`).toBeGreaterThan(0)
      }

      const finalCheck = async (s: DistStore): Promise<void> => {
        expect(await s.countByStatus()).toEqual({ pending: 0, assigned: 0, processing: 0, finished: TASKS, deleted: 0 })
      }

      it('store instances in one process (separate connections) never hand a task out twice', async () => {
        const { s, nodes } = await seed()
        const racers = [s, await connect(), await connect()]
        for (const phase of ['assign', 'submit', 'fetch'] as RacePhase[]) {
          const shares = await Promise.all(racers.map((r, i) => racePhase(r, phase, `w${i}`, nodes)))
          expectPartition(shares, phase)
        }
        await finalCheck(s)
      })

      it('separate processes never hand a task out twice', async () => {
        const { s, nodes } = await seed()
        for (const phase of ['assign', 'submit', 'fetch'] as RacePhase[]) {
          const children = [0, 1, 2].map((i) => racer(db, phase, `p${i}`, nodes))
          await Promise.all(children.map((c) => c.ready))
          for (const c of children) c.go()
          expectPartition(await Promise.all(children.map((c) => c.result)), phase)
        }
        await finalCheck(s)
      })
    })
  })
}
