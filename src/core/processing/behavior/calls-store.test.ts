// The calls store on a real folder: written per process with a cap, read back by position (sync
// and async), viewed as an array, streamed by the report writer into exactly what
// JSON.stringify gives for the same calls, and replaced whole by a later store.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { writeJsonReport } from '../../reporting/json-writer.js'
import type { StoredCall } from './calls-schema.js'
import { StoredCallsFile, readCallsSync, storedCallsView } from './calls-reader.js'
import { CallsStoreWriter, MAX_CALL_BYTES, RECORD } from './calls-store.js'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function folder(): string {
  const d = mkdtempSync(join(tmpdir(), 'aviary-calls-store-'))
  dirs.push(d)
  return d
}

const call = (i: number, extra: Record<string, unknown> = {}): StoredCall => ({
  category: i % 3 === 0 ? 'network' : 'file', api: i % 3 === 0 ? 'connect' : 'openat',
  arguments: { filepath: `/tmp/f${i} ünïcode \u202e`, n: i, ...extra }, return_value: i % 5 === 0 ? -1 : 3, status: i % 5 === 0 ? 0 : 1,
  time: 1_700_000_000 + i / 1000, tid: 100 + (i % 2), flags: {}, stacktrace: []
})

async function store(dir: string, counts: Record<number, number>, maxCalls?: number) {
  const w = await CallsStoreWriter.create(dir, { maxCalls })
  for (const [pid, n] of Object.entries(counts)) {
    for (let i = 0; i < n; i++) if (w.add(Number(pid), call(i))) await w.drain()
  }
  return { w, committed: await w.commit(new Map([[1, 'one'], [2, 'two']])) }
}

describe('the calls store', () => {
  it('keeps each process\'s first calls up to the cap, counts the rest, and lists them in index.json', async () => {
    const dir = folder()
    const { w, committed } = await store(dir, { 1: 7000, 2: 10 }, 5000)
    expect(committed.dir).toBe(join(dir, 'calls'))
    expect(readdirSync(committed.dir).sort()).toEqual(['1.idx', '1.jsonl', '2.idx', '2.jsonl', 'index.json'])
    expect(statSync(join(committed.dir, '1.idx')).size).toBe((5000 + 1) * RECORD)
    const index = JSON.parse(readFileSync(join(committed.dir, 'index.json'), 'utf8'))
    expect(index).toEqual(committed.index)
    expect(index.processes).toEqual([
      { pid: 1, process_name: 'one', calls: 5000, dropped: 2000, categories: { network: 1667, file: 3333 }, apis: { connect: 1667, openat: 3333 } },
      { pid: 2, process_name: 'two', calls: 10, dropped: 0, categories: { network: 4, file: 6 }, apis: { connect: 4, openat: 6 } }
    ])
    expect(index.kinds).toEqual([['network', 'connect'], ['file', 'openat']])
    expect(w.notes()).toEqual(['pid 1: 2000 call(s) beyond the 5000 kept'])
    // Nothing of the temporary folder is left.
    expect(readdirSync(dir)).toEqual(['calls'])
  })

  it('reads calls back by position, synchronously and asynchronously', async () => {
    const dir = folder()
    const { committed } = await store(dir, { 1: 3000 })
    expect(readCallsSync(committed.dir, 1, 2998, 10)).toEqual([call(2998), call(2999)])
    expect(readCallsSync(committed.dir, 1, 0, 0)).toEqual([])
    const f = await StoredCallsFile.open(committed.dir, 1)
    try {
      expect(f.count).toBe(3000)
      expect(await f.range(1000, 3)).toEqual([call(1000), call(1001), call(1002)])
      expect(await f.at([5, 6, 7, 100, 2999])).toEqual([call(5), call(6), call(7), call(100), call(2999)])
      expect((await f.records(3, 1)).kinds).toEqual([0, 1])
    } finally {
      await f.close()
    }
  })

  it('shortens a call too large to keep, never drops it', async () => {
    const dir = folder()
    const w = await CallsStoreWriter.create(dir)
    w.add(1, call(1, { environment: Array.from({ length: 200 }, (_, i) => `V${i}=${'x'.repeat(1000)}`), big: 'y'.repeat(100_000) }))
    const { dir: calls } = await w.commit(new Map())
    const [c] = readCallsSync(calls, 1, 0, 1)
    expect(Buffer.byteLength(JSON.stringify(c))).toBeLessThanOrEqual(MAX_CALL_BYTES)
    expect(c?.arguments.filepath).toBe(call(1).arguments.filepath)
    expect(String(c?.arguments.big).endsWith('...')).toBe(true)
  })

  it('gives an array view: length, indexes, iteration, array methods, read-only', async () => {
    const dir = folder()
    const { committed } = await store(dir, { 1: 2500 })
    const view = storedCallsView(committed.dir, 1, 2500)
    expect(Array.isArray(view)).toBe(true)
    expect(view.length).toBe(2500)
    expect(view[0]).toEqual(call(0))
    expect(view[2499]).toEqual(call(2499))
    expect(view[2500]).toBeUndefined()
    expect(1234 in view).toBe(true)
    expect(view.slice(10, 12)).toEqual([call(10), call(11)])
    let n = 0
    for (const c of view) expect(c.arguments.n).toBe(n++)
    expect(n).toBe(2500)
    expect(view.filter((c) => c.api === 'connect')).toHaveLength(834)
    expect(() => { (view as unknown as StoredCall[])[0] = call(5) }).toThrow(TypeError)
  })

  it('is streamed by the report writer into what JSON.stringify writes for the same calls', async () => {
    const dir = folder()
    const { committed } = await store(dir, { 1: 2500, 2: 0 })
    const report = { behavior: { processes: [{ pid: 1, calls: storedCallsView(committed.dir, 1, 2500) }, { pid: 2, calls: storedCallsView(committed.dir, 2, 0) }] } }
    const plain = { behavior: { processes: [{ pid: 1, calls: Array.from({ length: 2500 }, (_, i) => call(i)) }, { pid: 2, calls: [] }] } }
    const out = join(dir, 'report.json')
    await writeJsonReport(out, report)
    expect(readFileSync(out, 'utf8')).toBe(`${JSON.stringify(plain, null, 4)}\n`)
    await writeJsonReport(out, report, { indent: 0 })
    expect(readFileSync(out, 'utf8')).toBe(`${JSON.stringify(plain)}\n`)
  })

  it('replaces an older store whole, and leaves it untouched when it is dropped', async () => {
    const dir = folder()
    await store(dir, { 1: 10, 2: 10 })
    const { committed } = await store(dir, { 2: 3 })
    expect(readdirSync(committed.dir).sort()).toEqual(['2.idx', '2.jsonl', 'index.json'])
    const w = await CallsStoreWriter.create(dir)
    w.add(9, call(0))
    await w.abort()
    expect(readdirSync(dir)).toEqual(['calls'])
    expect(readdirSync(committed.dir).sort()).toEqual(['2.idx', '2.jsonl', 'index.json'])
  })

  it('refuses pids that are no pids, and processes beyond its bound', async () => {
    const dir = folder()
    const w = await CallsStoreWriter.create(dir)
    for (const pid of [-1, 1.5, Number.NaN]) w.add(pid, call(0))
    expect(w.pids()).toEqual([])
    expect(w.notes()).toEqual(['3 call(s) not stored (more than 10000 processes or a bad pid)'])
    await w.abort()
  })
})
