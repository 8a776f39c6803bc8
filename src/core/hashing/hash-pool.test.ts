// The worker lanes (the bundled hash.worker built by the test setup) give exactly what inline
// hashing gives, for any chunking, with several jobs at once, and survive aborted jobs. Whole files
// (files()) get the same hashes and URLs from the workers as from this thread, in order, with an
// error in the place of a file that cannot be read, also while an upload is hashed.
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { HashPool } from './hash-pool'
import { MultiHasher } from './multihash'
import { SLOTS, SLOT_BYTES } from './hash-protocol'
import { READ_BYTES, inlineFileHashing } from './file-digest'
import { UrlScanner } from './urls'

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
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
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

describe('HashPool.files', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-pool-files-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /** The digest computed here by hand: the hashes of the whole content and the URLs in it. */
  function expected(data: Buffer) {
    const urls = new UrlScanner()
    for (let at = 0; at < data.length; at += READ_BYTES) urls.update(data.subarray(at, at + READ_BYTES))
    return { ...inline(data), urls: urls.result() }
  }

  it('digests many files in order, on the workers as on this thread, a missing one an Error in its place', async () => {
    mkdirSync(path.join(dir, 'many'))
    const sizes = [0, 1, 7, 8192, READ_BYTES - 1, READ_BYTES, READ_BYTES + 1, 3 * READ_BYTES + 12345]
    const contents = Array.from({ length: 203 }, (_, i) => {
      const data = randomBytes(sizes[i % sizes.length]! + (i % 13))
      if (i % 5 === 0) data.write(`see http://host${i}.example/x and `, Math.min(data.length, 40), 'latin1')
      if (i % 7 === 0 && data.length > 200) data.write(`https://wide${i}.example/y `, 100, 'utf16le')
      return data
    })
    const paths = contents.map((data, i) => {
      const file = path.join(dir, 'many', `f${i}`)
      writeFileSync(file, data)
      return file
    })
    paths.splice(100, 0, path.join(dir, 'many', 'missing'))
    const want = contents.map(expected)
    for (const hashing of [pool, new HashPool(null), inlineFileHashing]) {
      const got = await hashing.files(paths)
      expect(got[100]).toBeInstanceOf(Error)
      expect((got[100] as Error).message).toMatch(/ENOENT/)
      expect(got.filter((_, i) => i !== 100)).toEqual(want)
    }
    expect(want.filter((w) => w.urls.length > 0).length).toBeGreaterThan(30)
  })

  it('digests files while an upload is hashed on the same workers', async () => {
    const upload = randomBytes(SLOT_BYTES * SLOTS * 3 + 5)
    const files = Array.from({ length: 40 }, (_, i) => {
      const file = path.join(dir, `u${i}`)
      writeFileSync(file, randomBytes(20_000 + i))
      return file
    })
    const [hashes, digests] = await Promise.all([viaPool(upload, () => 70_000), pool.files(files)])
    expect(hashes).toEqual(inline(upload))
    expect(digests).toEqual(files.map((f) => expected(readFileSync(f))))
  })
})
