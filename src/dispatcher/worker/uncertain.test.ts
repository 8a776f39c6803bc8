// The notes of submissions that may have left a copy on a node, on a real folder with a clock the
// test moves: what a note keeps, how a copy is recognised by its mark (in options as Aviary lists
// them, and as Cuckoo 2.0.7 does), what is not a copy, and expiry.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { UncertainSubmissions, type ListedTask } from './uncertain'

const SHA = 'ab'.repeat(32)
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function setup() {
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-uncertain-'))
  dirs.push(dir)
  let now = 1_000_000
  const notes = new UncertainSubmissions(dir, () => now)
  return { notes, dir, tick: (ms: number) => (now += ms) }
}

const key = (filename = 'a.exe') => ({ category: 'file' as const, sha256: SHA, filename })
/** A listed file task as Aviary lists it: options a string. */
const aviary = (id: number, options: string | null, sha = SHA): ListedTask => ({ id, status: 'reported', category: 'file', target: `/srv/uploads/${sha}/a.exe`, sample: { sha256: sha }, options })
/** As Cuckoo 2.0.7 lists it: options parsed into an object, the upload in a temporary folder. */
const cuckoo = (id: number, options: Record<string, string>, sha = SHA): ListedTask => ({ id, status: 'reported', category: 'file', target: '/tmp/cuckoo-tmp/tmpXyZ/a.exe', sample: { sha256: sha.toUpperCase() }, options })

describe('notes of submissions', () => {
  it('a note keeps the task, the key, a mark of its own, the time and the worker; its name carries the node, the task and the mark', () => {
    const { notes, dir } = setup()
    const a = notes.open(1, 7, key(), 'w1')
    const b = notes.open(1, 7, key(), 'w1')
    expect(a.marker).toMatch(/^7-[0-9a-f]{32}$/)
    expect(b.marker).not.toBe(a.marker)
    expect(a.name).toBe(`1-${a.marker}.json`)
    expect(JSON.parse(readFileSync(path.join(dir, '.node-uncertain', a.name), 'utf8'))).toEqual({ task: 7, key: key(), marker: a.marker, at: 1_000_000, worker: 'w1' })
    notes.remove(a.name)
    notes.remove(a.name) // twice: already gone
    expect(readdirSync(path.join(dir, '.node-uncertain'))).toEqual([b.name])
  })

  it('finds the notes of given tasks on one node only', async () => {
    const { notes } = setup()
    const a = notes.open(1, 7, key(), 'w')
    const b = notes.open(1, 7, key(), 'w')
    notes.open(1, 70, key(), 'w')
    notes.open(2, 7, key(), 'w')
    const url = notes.open(1, 8, { category: 'url', url: 'http://x.example/' }, 'w')
    expect(await notes.any(1)).toBe(true)
    expect(await notes.any(3)).toBe(false)
    const found = await notes.ofTasks(1, [7, 8, 9])
    expect([...found.keys()].sort()).toEqual([7, 8])
    expect(found.get(7)!.map((e) => e.note.marker).sort()).toEqual([a.marker, b.marker].sort())
    expect(found.get(8)!.map((e) => e.name)).toEqual([url.name])
    expect(await notes.ofTasks(1, [])).toEqual(new Map())
  })

  it('recognises a copy by its mark and sample, in options as Aviary and as Cuckoo 2.0.7 list them', async () => {
    const { notes } = setup()
    const a = notes.open(1, 7, key(), 'w')
    const b = notes.open(1, 8, key('b.exe'), 'w')
    const u = notes.open(1, 9, { category: 'url', url: 'http://x.example/' }, 'w')
    const listed: ListedTask[] = [
      aviary(10, `route=none,aviary_dist=${a.marker}`),
      cuckoo(11, { procmemdump: 'yes', aviary_dist: b.marker }),
      { id: 12, status: 'reported', category: 'url', target: 'http://x.example/', sample: {}, options: `aviary_dist=${u.marker}` },
      aviary(13, null),
      aviary(14, 'route=none'),
      // Someone else's submission of the same sample, with a mark this dispatcher never made.
      aviary(15, `aviary_dist=7-${'0'.repeat(32)}`)
    ]
    const found = await notes.copies(1, listed)
    expect(found.map((f) => [f.id, f.entry.name]).sort()).toEqual([[10, a.name], [11, b.name], [12, u.name]])
    expect(found.find((f) => f.id === 10)!.entry.note).toMatchObject({ task: 7, marker: a.marker })
    // The same marks on another node's list are not that node's notes.
    expect(await notes.copies(2, listed)).toEqual([])
  })

  it('a mark on another sample or URL, a second copy of a mark, and garbage from a node', async () => {
    const { notes } = setup()
    const a = notes.open(1, 7, key(), 'w')
    const u = notes.open(1, 9, { category: 'url', url: 'http://x.example/' }, 'w')
    const garbage = [
      aviary(20, `aviary_dist=${a.marker}`, 'cd'.repeat(32)),
      { id: 21, category: 'url', target: 'http://other.example/', options: `aviary_dist=${u.marker}` },
      { id: 22, category: 'file', target: '/x', sample: { sha256: 7 }, options: `aviary_dist=${a.marker}` },
      { id: 23, category: 'file', sample: 'no', options: { aviary_dist: [a.marker] } },
      { id: 24, category: 'file', sample: { sha256: SHA }, options: `aviary_dist=${a.marker}x` },
      { id: 25, category: 'file', sample: { sha256: SHA }, options: 42 },
      { id: 26, category: 'url', target: 'http://x.example/', sample: { sha256: SHA }, options: `aviary_dist=${a.marker}` }
    ] as ListedTask[]
    expect(await notes.copies(1, garbage)).toEqual([])
    // Two listed tasks with one mark (the node copied the options into another task): both are
    // named, each with the one note; what becomes of them is the store's decision.
    const twice = await notes.copies(1, [aviary(30, `aviary_dist=${a.marker}`), aviary(31, `x=1,aviary_dist=${a.marker}`)])
    expect(twice.map((f) => f.id)).toEqual([30, 31])
  })

  it('forgets a note after a week, and a note without a mark (an older version) at once', async () => {
    const { notes, dir, tick } = setup()
    const a = notes.open(1, 7, key(), 'w')
    mkdirSync(path.join(dir, '.node-uncertain'), { recursive: true })
    writeFileSync(path.join(dir, '.node-uncertain', '1-8-00000000-old.json'), JSON.stringify({ task: 8, key: key(), at: 1_000_000, open: 'w' }))
    expect([...(await notes.ofTasks(1, [7, 8])).keys()]).toEqual([7])
    expect(readdirSync(path.join(dir, '.node-uncertain'))).toEqual([a.name])
    tick(8 * 24 * 3600 * 1000)
    expect(await notes.ofTasks(1, [7])).toEqual(new Map())
    expect(readdirSync(path.join(dir, '.node-uncertain'))).toEqual([])
  })
})
