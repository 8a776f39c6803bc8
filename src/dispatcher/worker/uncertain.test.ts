// The notes of lost submissions, on a real folder with a clock the test moves: what counts as the
// lost copy, the grace before it is deleted, and expiry.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
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

const file = (id: number, name: string, sha = SHA): ListedTask => ({ id, category: 'file', target: `/srv/uploads/${sha}/${name}`, sample: { sha256: sha } })
const unknown = async () => false

describe('lost submissions', () => {
  it('takes a finished, unknown task with the same sample and name as the lost copy, after the grace', async () => {
    const { notes, tick } = setup()
    await notes.add(1, 7, { category: 'file', sha256: SHA, filename: 'a.exe' })
    expect(await notes.any(1)).toBe(true)
    expect(await notes.any(2)).toBe(false)
    const listed = [file(10, 'b.exe'), file(11, 'a.exe', 'cd'.repeat(32)), file(12, 'a.exe')]
    expect(await notes.orphans(1, listed, unknown, 5000)).toEqual([]) // first sighting
    tick(4000)
    expect(await notes.orphans(1, listed, unknown, 5000)).toEqual([])
    tick(1000)
    const found = await notes.orphans(1, listed, unknown, 5000)
    expect(found.map((o) => o.id)).toEqual([12])
    await notes.remove(found[0]!.note)
    expect(await notes.any(1)).toBe(false)
  })

  it('leaves tasks that one of ours knows, and matches URLs by target', async () => {
    const { notes, tick } = setup()
    await notes.add(3, 1, { category: 'url', url: 'http://x.example/' })
    const listed: ListedTask[] = [{ id: 5, category: 'url', target: 'http://x.example/', sample: {} }, { id: 6, category: 'url', target: 'http://x.example/' }]
    const known = async (id: number) => id === 5
    await notes.orphans(3, listed, known, 0)
    tick(1)
    expect((await notes.orphans(3, listed, known, 0)).map((o) => o.id)).toEqual([6])
  })

  it('two lost copies of one sample are two orphans, not one twice', async () => {
    const { notes, tick } = setup()
    await notes.add(1, 7, { category: 'file', sha256: SHA, filename: 'a.exe' })
    await notes.add(1, 8, { category: 'file', sha256: SHA, filename: 'a.exe' })
    const listed = [file(20, 'a.exe'), file(21, 'a.exe')]
    await notes.orphans(1, listed, unknown, 10)
    tick(10)
    expect((await notes.orphans(1, listed, unknown, 10)).map((o) => o.id).sort()).toEqual([20, 21])
  })

  it('forgets a note that never matched after a week', async () => {
    const { notes, dir, tick } = setup()
    await notes.add(1, 7, { category: 'file', sha256: SHA, filename: 'a.exe' })
    tick(8 * 24 * 3600 * 1000)
    expect(await notes.orphans(1, [], unknown, 0)).toEqual([])
    expect(readdirSync(path.join(dir, '.node-uncertain'))).toEqual([])
  })
})
