// The notes of submissions that may have left a copy on a node, on a real folder with a clock the
// test moves and a list of dead workers the test sets: what counts as such a copy, when a note
// still in flight holds the match back, and expiry.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { UncertainSubmissions, type ListedTask } from './uncertain'

const SHA = 'ab'.repeat(32)
const OPEN_MS = 5000
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function setup() {
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-uncertain-'))
  dirs.push(dir)
  let now = 1_000_000
  const dead = new Set<string>()
  const notes = new UncertainSubmissions(dir, () => now, (w) => dead.has(w))
  return { notes, dir, dead, tick: (ms: number) => (now += ms) }
}

const file = (id: number, name: string, sha = SHA): ListedTask => ({ id, category: 'file', target: `/srv/uploads/${sha}/${name}`, sample: { sha256: sha } })
const unknown = async () => false
const key = (filename = 'a.exe') => ({ category: 'file' as const, sha256: SHA, filename })

describe('notes of submissions', () => {
  it('a settled note (the answer was lost) takes the unknown finished copy of the same sample and name at once', async () => {
    const { notes } = setup()
    const note = notes.open(1, 7, key(), 'w')
    expect(await notes.any(1)).toBe(true)
    expect(await notes.any(2)).toBe(false)
    await notes.settle(note)
    const listed = [file(10, 'b.exe'), file(11, 'a.exe', 'cd'.repeat(32)), file(12, 'a.exe')]
    const found = await notes.orphans(1, listed, unknown, OPEN_MS)
    expect(found).toEqual([{ id: 12, note }])
    notes.remove(found[0]!.note)
    expect(await notes.any(1)).toBe(false)
  })

  it('a submission in flight holds back every match of its sample; once its worker is dead it is a lost copy', async () => {
    const { notes, dead } = setup()
    const flying = notes.open(1, 7, key(), 'host:41:aa:m')
    const lost = notes.open(1, 8, key(), 'w')
    await notes.settle(lost)
    const listed = [file(12, 'a.exe')]
    // #12 may be the copy of the submission in flight, about to be committed: not touched.
    expect(await notes.orphans(1, listed, unknown, OPEN_MS)).toEqual([])
    // Its worker was killed before committing: both notes now stand for lost copies.
    dead.add('host:41:aa:m')
    const found = await notes.orphans(1, [...listed, file(13, 'a.exe')], unknown, OPEN_MS)
    expect(found.map((o) => o.id).sort()).toEqual([12, 13])
    expect(found.map((o) => o.note).sort()).toEqual([flying, lost].sort())
  })

  it("a note of a worker it cannot check is in flight until openMs after it was written", async () => {
    const { notes, tick } = setup()
    notes.open(1, 7, key(), 'elsewhere:9:bb:other-machine')
    tick(OPEN_MS - 1)
    expect(await notes.orphans(1, [file(12, 'a.exe')], unknown, OPEN_MS)).toEqual([])
    tick(1)
    expect((await notes.orphans(1, [file(12, 'a.exe')], unknown, OPEN_MS)).map((o) => o.id)).toEqual([12])
  })

  it('leaves tasks that one of ours knows, and matches URLs by target', async () => {
    const { notes } = setup()
    await notes.settle(notes.open(3, 1, { category: 'url', url: 'http://x.example/' }, 'w'))
    const listed: ListedTask[] = [{ id: 5, category: 'url', target: 'http://x.example/', sample: {} }, { id: 6, category: 'url', target: 'http://x.example/' }]
    const known = async (id: number) => id === 5
    expect((await notes.orphans(3, listed, known, OPEN_MS)).map((o) => o.id)).toEqual([6])
  })

  it('two lost copies of one sample are two orphans, not one twice; a third unknown task is left', async () => {
    const { notes } = setup()
    await notes.settle(notes.open(1, 7, key(), 'w'))
    await notes.settle(notes.open(1, 8, key(), 'w'))
    const listed = [file(20, 'a.exe'), file(21, 'a.exe'), file(22, 'a.exe')]
    expect((await notes.orphans(1, listed, unknown, OPEN_MS)).map((o) => o.id).sort()).toEqual([20, 21])
  })

  it("does not trip over a node's garbage in its task list", async () => {
    const { notes } = setup()
    await notes.settle(notes.open(1, 7, key(), 'w'))
    const garbage = [
      { id: 30, category: 'file', target: 42, sample: { sha256: SHA } },
      { id: 31, category: 'file', target: '/x/a.exe', sample: { sha256: 7 } },
      { id: 32, category: ['file'], target: '/x/a.exe', sample: 'no' }
    ] as ListedTask[]
    expect(await notes.orphans(1, garbage, unknown, OPEN_MS)).toEqual([])
  })

  it('notes the worker and the time; settling keeps the key; a note that never matched is forgotten after a week', async () => {
    const { notes, dir, tick } = setup()
    const name = notes.open(1, 7, key(), 'w')
    const read = () => JSON.parse(readFileSync(path.join(dir, '.node-uncertain', name), 'utf8')) as Record<string, unknown>
    expect(read()).toEqual({ task: 7, key: key(), at: 1_000_000, open: 'w' })
    await notes.settle(name)
    expect(read()).toEqual({ task: 7, key: key(), at: 1_000_000 })
    tick(8 * 24 * 3600 * 1000)
    expect(await notes.orphans(1, [], unknown, OPEN_MS)).toEqual([])
    expect(readdirSync(path.join(dir, '.node-uncertain'))).toEqual([])
  })
})
