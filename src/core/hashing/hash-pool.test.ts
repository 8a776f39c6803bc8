// The worker lanes (the bundled hash.worker built by the test setup) give exactly what inline
// hashing gives, for any chunking, with several jobs at once, and survive aborted jobs.
import { afterAll, describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { HashPool } from './hash-pool'
import { MultiHasher } from './multihash'
import { SLOTS, SLOT_BYTES } from './hash-protocol'

const pool = new HashPool(path.resolve('out/cli/hash.worker.mjs'))
afterAll(() => pool.stop())

function inline(data: Uint8Array) {
  const h = new MultiHasher()
  h.update(data)
  return h.digest()
}

async function viaPool(data: Uint8Array, chunk: () => number, sink: number | null = null) {
  const job = pool.start(sink)
  for (let at = 0; at < data.length; ) {
    const n = Math.min(chunk(), data.length - at)
    await job.update(data.subarray(at, at + n))
    at += n
  }
  return job.digest()
}

describe('HashPool', () => {
  it('matches inline hashing for sizes around the slot size and any chunking', async () => {
    for (const size of [0, 1, 7, SLOT_BYTES - 1, SLOT_BYTES, SLOT_BYTES + 1, 3 * SLOT_BYTES + 12345, 5_000_000]) {
      const data = randomBytes(size)
      expect(await viaPool(data, () => 1 + Math.floor(Math.random() * 100_000))).toEqual(inline(data))
    }
  })

  it('runs many jobs at once on more data than the slots hold', async () => {
    const inputs = Array.from({ length: 6 }, (_, i) => randomBytes(SLOT_BYTES * SLOTS + i * 1000))
    const results = await Promise.all(inputs.map((d) => viaPool(d, () => 65536)))
    results.forEach((r, i) => expect(r).toEqual(inline(inputs[i]!)))
  })

  it('writes the exact bytes to the sink while hashing, for several jobs at once', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'aviary-pool-'))
    const inputs = [0, 1, SLOT_BYTES, SLOT_BYTES * SLOTS * 2 + 777, 3_333_333].map((n) => randomBytes(n))
    for (const p of [pool, new HashPool(null)]) {
      const results = await Promise.all(inputs.map(async (data, i) => {
        const file = path.join(dir, `${p === pool ? 'w' : 'i'}${i}`)
        const fd = openSync(file, 'w')
        const hashes = await viaPool(data, () => 1 + Math.floor(Math.random() * 200_000), fd)
        closeSync(fd)
        return { hashes, bytes: readFileSync(file) }
      }))
      results.forEach((r, i) => {
        expect(r.hashes).toEqual(inline(inputs[i]!))
        expect(r.bytes.equals(inputs[i]!)).toBe(true)
      })
    }
  })

  it('gives every slot back after aborted jobs', async () => {
    for (let i = 0; i < SLOTS * 3; i++) {
      const job = pool.start()
      await job.update(randomBytes(SLOT_BYTES + 10))
      job.abort()
    }
    const data = randomBytes(SLOT_BYTES * SLOTS * 2)
    expect(await viaPool(data, () => 300_000)).toEqual(inline(data))
  })
})
