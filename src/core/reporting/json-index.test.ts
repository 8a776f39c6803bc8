import { describe, expect, it } from 'vitest'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { indexJsonFile, indexJsonStream, JsonSyntaxError, type JsonKeyRange } from './json-index'
import { writeJsonReport } from './json-writer'

/** A small deterministic generator (no Math.random: a failure must be reproducible). */
function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

const NASTY = ['', '"', '\\', '\\"', '{', '}', '[', ']', ',', ':', 'C:\\Windows\\system32\\', 'naïve ☃ 𝄞', '\u202Egpj.exe', '\n\t', '\u0000', 'a"b\\"c']

function randomValue(r: () => number, depth: number): unknown {
  const pick = r()
  if (depth > 4 || pick < 0.35) {
    const k = Math.floor(r() * 6)
    if (k === 0) return null
    if (k === 1) return r() < 0.5
    if (k === 2) return Math.floor(r() * 1e6) - 5e5
    if (k === 3) return r() * 1e3
    return NASTY[Math.floor(r() * NASTY.length)]! + String(Math.floor(r() * 100))
  }
  if (pick < 0.65) return Array.from({ length: Math.floor(r() * 5) }, () => randomValue(r, depth + 1))
  const o: Record<string, unknown> = {}
  for (let i = Math.floor(r() * 6); i > 0; i--) o[NASTY[Math.floor(r() * NASTY.length)]! + String(i)] = randomValue(r, depth + 1)
  return o
}

async function* chunked(buf: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size)
}

/** Every indexed range parses to the value it names. */
function checkRanges(buf: Buffer, ranges: JsonKeyRange[], value: Record<string, unknown>, depth = 1, maxDepth = 2): void {
  expect(ranges.map((r) => r.key)).toEqual(Object.keys(value))
  for (const r of ranges) {
    expect(JSON.parse(buf.subarray(r.start, r.end).toString('utf8'))).toEqual(value[r.key])
    const v = value[r.key]
    const isObject = v !== null && typeof v === 'object' && !Array.isArray(v)
    expect(r.children !== undefined).toBe(isObject && depth < maxDepth)
    if (r.children) checkRanges(buf, r.children, v as Record<string, unknown>, depth + 1, maxDepth)
  }
}

describe('indexJsonStream', () => {
  it('finds the byte range of every key of random documents, indented or compact, in any chunking', async () => {
    const r = rng(7)
    for (let round = 0; round < 150; round++) {
      const doc: Record<string, unknown> = {}
      for (let i = 0; i < 1 + Math.floor(r() * 8); i++) doc[`${NASTY[i % NASTY.length]}k${i}`] = randomValue(r, 1)
      for (const indent of [undefined, 4, 1]) {
        const buf = Buffer.from(JSON.stringify(doc, null, indent))
        for (const size of [1, 3, 64, 1 << 20]) {
          const index = await indexJsonStream(chunked(buf, size), buf.length)
          checkRanges(buf, index.keys, doc)
        }
      }
    }
  })

  it('indexes only to the depth asked for', async () => {
    const buf = Buffer.from(JSON.stringify({ a: { b: { c: 1 } }, d: [{ e: 1 }] }))
    const one = await indexJsonStream(chunked(buf, 5), buf.length, 1)
    expect(one.keys.map((k) => [k.key, k.children])).toEqual([['a', undefined], ['d', undefined]])
    const two = await indexJsonStream(chunked(buf, 5), buf.length, 2)
    expect(two.keys[0]!.children!.map((k) => k.key)).toEqual(['b'])
    expect(two.keys[1]!.children).toBeUndefined()
  })

  it('rejects documents that do not balance or end early', async () => {
    for (const text of ['{"a": [1, 2}', '{"a": 1', '{"a": "open', '{} {}', '42', ']']) {
      const buf = Buffer.from(text)
      await expect(indexJsonStream(chunked(buf, 2), buf.length), text).rejects.toBeInstanceOf(JsonSyntaxError)
    }
  })

  it('indexes a file written by the report writer', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'aviary-jsonindex-'))
    try {
      const report = { info: { id: 3, score: 1.2 }, behavior: { processes: [{ calls: [{ api: 'NtCreateFile', arguments: { path: 'C:\\x "y"' } }] }], summary: { files: ['}'] } }, debug: { log: '' } }
      const file = path.join(dir, 'report.json')
      await writeJsonReport(file, report)
      const { readFile } = await import('node:fs/promises')
      const buf = await readFile(file)
      const index = await indexJsonFile(file)
      expect(index.size).toBe(buf.length)
      checkRanges(buf, index.keys, report)
      await writeFile(file, '{"a":1}garbage')
      await expect(indexJsonFile(file)).rejects.toBeInstanceOf(JsonSyntaxError)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
