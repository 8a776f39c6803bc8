// Dropped files as the report lists them. Aviary's analyzer uploads a content once however many
// paths it was written to (dropped.ts) and records every path with its sha256 in behavior.jsonl:
// the report lists the file once per path, so a file dropped twice is not folded away. Hostile
// records (wrong types, another file's hash, endless paths) change nothing else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { droppedFiles } from './artifacts'
import { metadata } from './metadata'
import { createFileTypeDetector } from '../hashing/magic'

let dir = ''
const payload = 'MZ the same payload twice'
const sha = createHash('sha256').update(payload).digest('hex')
const name = `${sha.slice(0, 16)}_payload.exe`

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-dropped-'))
  mkdirSync(path.join(dir, 'files'))
  mkdirSync(path.join(dir, 'logs'))
  writeFileSync(path.join(dir, 'files', name), payload)
  writeFileSync(path.join(dir, 'files', 'other.txt'), 'other')
  writeFileSync(path.join(dir, 'files.json'), `${JSON.stringify({ path: `files/${name}`, filepath: '/tmp/payload.exe', pids: [11] })}\n`)
  const records = [
    { type: 'file', op: 'created', path: '/tmp/payload.exe', time: 1, pid: 11, sha256: sha },
    { type: 'file', op: 'created', path: '/home/user/.cache/update.bin', time: 2, pid: 12, sha256: sha },
    { type: 'file', op: 'modified', path: '/home/user/.cache/update.bin', time: 3, pid: 13, sha256: sha },
    { type: 'file', op: 'deleted', path: '/var/tmp/gone', time: 4, sha256: sha },
    { type: 'file', op: 'created', path: 7, sha256: sha },
    { type: 'file', op: 'created', path: '/x', sha256: 'not a hash' },
    { type: 'process', pid: 11, path: '/y', sha256: sha },
    ...Array.from({ length: 300 }, (_, i) => ({ type: 'file', op: 'created', path: `/many/${i}`, sha256: 'f'.repeat(64) }))
  ]
  writeFileSync(path.join(dir, 'logs', 'behavior.jsonl'), `${records.map((r) => JSON.stringify(r)).join('\n')}\nnot json\n`)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('dropped files', () => {
  it('lists a file written to two paths twice, each with its path and writers, once in the metadata', async () => {
    const dropped = await droppedFiles(dir, createFileTypeDetector(), () => undefined)
    const payloads = dropped.filter((d) => d.sha256 === sha)
    expect(payloads.map((d) => [d.filepath, d.pids, d.relpath, d.name])).toEqual([
      ['/tmp/payload.exe', [11], `files/${name}`, 'payload.exe'],
      // Its own name under its own path, not the first path's.
      ['/home/user/.cache/update.bin', [12, 13], `files/${name}`, 'update.bin']
    ])
    expect(dropped).toHaveLength(3)
    const meta = await metadata(dir, { dropped, buffer: [], procmemory: [] })
    expect(meta.output.dropped.map((d) => d.basename).sort()).toEqual([name, 'other.txt'].sort())
  })
})
