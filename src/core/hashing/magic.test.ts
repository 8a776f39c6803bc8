// file_type through batched `file` processes (many()) against the host's own `file -b NAME`, one
// process per file, on the same files: every file gets its own description whatever its name is
// (line breaks, dashes, quotes, control and bidi characters), a file `file` fails on gets null as
// its own run does, and a `file` process that stops answering costs the one file it was on.
import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFileTypeDetector } from './magic'

const run = promisify(execFile)
let dir = ''

/** What `file -b` says of one file run on its own, or null where it fails (as the service took it before batching). */
async function ownRun(file: string): Promise<string | null> {
  try {
    return (await run('file', ['-b', '--', file])).stdout.replace(/\n$/, '')
  } catch {
    return null
  }
}
// The files do not change once written, and four tests type the same ones: each is run once.
const oracle = new Map<string, Promise<string | null>>()
function alone(file: string): Promise<string | null> {
  let answer = oracle.get(file)
  if (answer === undefined) oracle.set(file, answer = ownRun(file))
  return answer
}

/** Contents of many kinds, so that neighbours in a batch have different descriptions. */
function kinds(i: number): Buffer {
  const pad = Buffer.alloc(200 + (i % 7) * 300, i % 251)
  switch (i % 9) {
    case 0: return Buffer.from(`#!/bin/sh\necho ${i}\n`)
    case 1: return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), Buffer.from('IHDR'), Buffer.from([0, 0, 1, i % 256, 0, 0, 0, 64, 8, 2, 0, 0, 0])])
    case 2: return Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x08, 0, 0, 0, 0, 0, 3]), Buffer.from(`name-${i}.tar\0`), pad])
    case 3: return Buffer.from(`%PDF-1.${i % 8}\n1 0 obj\n<< >>\nendobj\n`)
    case 4: return Buffer.from(JSON.stringify({ i, list: [1, 2, 3] }))
    case 5: return Buffer.from(`<!DOCTYPE html><html><body>${i}</body></html>\n`)
    case 6: return Buffer.alloc(0)
    case 7: return Buffer.concat([Buffer.from('MZ'), pad])
    default: return Buffer.from(`plain text line ${i}\n`.repeat(1 + (i % 5)))
  }
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-magic-'))
  mkdirSync(path.join(dir, 'many'))
  for (let i = 0; i < 300; i++) writeFileSync(path.join(dir, 'many', `f${String(i).padStart(3, '0')}`), kinds(i))
  copyFileSync(process.execPath, path.join(dir, 'many', 'elf')) // ELF details read through the descriptor
  mkdirSync(path.join(dir, 'many', 'a folder'))
  symlinkSync('/etc/passwd', path.join(dir, 'many', 'link'))
})
afterAll(() => { if (dir) rmSync(dir, { recursive: true, force: true }) })

describe('file types, batched', () => {
  it('gives each of many files what `file -b` prints for it alone, in order, over several processes', async () => {
    const files = readdirSync(path.join(dir, 'many')).sort().map((n) => path.join(dir, 'many', n))
    files.push(path.join(dir, 'many', 'not there'))
    const types = await createFileTypeDetector('auto', { lanes: 3 }).many(files)
    const own = await Promise.all(files.map(alone))
    expect(types).toEqual(own)
    expect(new Set(types).size).toBeGreaterThan(10) // neighbours differ: a shift would show
    expect(types.at(-1)).toMatch(/^cannot open/)
  })

  it('is not confused by hostile names: each file keeps its own type', async () => {
    const names = [
      'two\nlines', 'ends with a line break\n', '\n', 'carriage\rreturn', '-rf', '--', '-', ' leading and trailing ', 'a: b: c',
      'back\\slash\\012', '"quoted"', "'single'", 'ERROR: not an error', 'tab\there', '\u202Egnp.exe', 'ünïcödé ✓', 'x'.repeat(250), '\x01\x7f'
    ]
    const sub = path.join(dir, 'hostile')
    mkdirSync(sub)
    // Each name holds different content, and the batch puts plain files between them.
    const files: string[] = []
    names.forEach((name, i) => {
      writeFileSync(path.join(sub, name), kinds(i))
      writeFileSync(path.join(sub, `plain-${i}`), kinds(i + 1))
      files.push(path.join(sub, name), path.join(sub, `plain-${i}`))
    })
    const detect = createFileTypeDetector('auto', { lanes: 2 })
    const types = await detect.many(files)
    expect(types).toEqual(await Promise.all(files.map(alone)))
    expect(types.every((t) => typeof t === 'string' && !t.startsWith('cannot open'))).toBe(true)
    // One file at a time too.
    expect(await detect(path.join(sub, 'two\nlines'))).toBe(types[0])
    expect(await detect(path.join(sub, '-rf'))).toBe(types[8])
  })

  it('gives null to a file `file` fails on, as its own run does, and types the others', async () => {
    // Readable as far as its mode goes, but reading it fails (EINVAL): `file` prints "ERROR: ..." and exits 1.
    const failing = '/sys/class/net/lo/speed'
    expect(await alone(failing)).toBeNull()
    const ok = readdirSync(path.join(dir, 'many')).sort().slice(0, 150).map((n) => path.join(dir, 'many', n))
    const files = [...ok.slice(0, 75), failing, ...ok.slice(75)]
    const detect = createFileTypeDetector('auto', { lanes: 2 })
    const types = await detect.many(files)
    expect(types[75]).toBeNull()
    expect(await detect(failing)).toBeNull()
    expect(types.filter((t, i) => i !== 75)).toEqual(await Promise.all(ok.map(alone)))
  })

  it('a `file` process that stops answering costs the file it was on; the rest go to a new process', async () => {
    const files = readdirSync(path.join(dir, 'many')).sort().slice(0, 120).map((n) => path.join(dir, 'many', n))
    const typing = createFileTypeDetector('auto', { lanes: 1, fileTimeoutMs: 1500 }).many(files)
    // The process was started before many() returned: stop it (SIGSTOP), as a file that hangs it would.
    const lanes = childrenRunning(['file', '-b', '-n', '-f', '-'])
    expect(lanes).toHaveLength(1)
    process.kill(lanes[0]!, 'SIGSTOP')
    const types = await typing
    const own = await Promise.all(files.map(alone))
    const lost = types.flatMap((t, i) => (t === own[i] ? [] : [i]))
    expect(lost).toHaveLength(1)
    expect(types[lost[0]!]).toBeNull()
  })

  it('a `file` process that dies costs the file it was on', async () => {
    const files = readdirSync(path.join(dir, 'many')).sort().slice(0, 120).map((n) => path.join(dir, 'many', n))
    const typing = createFileTypeDetector('auto', { lanes: 1 }).many(files)
    const lanes = childrenRunning(['file', '-b', '-n', '-f', '-'])
    expect(lanes).toHaveLength(1)
    process.kill(lanes[0]!, 'SIGKILL')
    const types = await typing
    const own = await Promise.all(files.map(alone))
    const lost = types.flatMap((t, i) => (t === own[i] ? [] : [i]))
    expect(lost).toHaveLength(1)
    expect(types[lost[0]!]).toBeNull()
  })

  it('uses wasmagic for every file where the host has no `file`', async () => {
    const files = ['f000', 'f001', 'f002', 'f003', 'elf'].map((n) => path.join(dir, 'many', n))
    const saved = process.env.PATH
    process.env.PATH = path.join(dir, 'no-tools-here')
    try {
      const types = await createFileTypeDetector('auto').many(files)
      const wasm = createFileTypeDetector('wasm')
      expect(types).toEqual(await Promise.all(files.map((f) => wasm(f))))
      expect(types.every((t) => typeof t === 'string' && t.length > 0)).toBe(true)
    } finally {
      process.env.PATH = saved
    }
  })
})

/** Pids of this process's children whose command line is `argv`. */
function childrenRunning(argv: string[]): number[] {
  const out: number[] = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid !== process.pid) continue
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8') === `${argv.join('\0')}\0`) out.push(Number(pid))
    } catch {
      // gone meanwhile
    }
  }
  return out
}
