// The analyzer's process dump and the host's reading of it, with a real process: a gcc-built
// sample that holds a URL only on its heap is read through /proc/<pid>/maps and /proc/<pid>/mem
// (the analyzer's procmem.ts), written as Cuckoo's format, and read back by processing
// (procmemory.ts): its regions, and the URL found in them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { buildMemOnlySample, MEMONLY_URL } from './memonly-sample'
import { parseMaps, readProcess, wanted } from '../../src/agent/analyzer/procmem'
import { readProcessDump } from '../../src/core/processing/procmemory'

describe('process memory dumps', () => {
  let dir: string
  let child: ChildProcess
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'procmem-'))
    child = spawn(buildMemOnlySample(dir), ['30'], { stdio: 'ignore' })
    // until the URL is on its heap (it is assembled before the sleep)
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100))
      if (readProcess(child.pid!, 64 << 20).parts.some((b) => b.includes(MEMONLY_URL))) break
    }
  })
  afterAll(() => {
    child?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  it('keeps anonymous and writable regions, leaves out files\' unchanged images', () => {
    const maps = parseMaps(readFileSync(`/proc/${child.pid}/maps`, 'latin1'))
    const libcText = maps.find((r) => /libc\.so/.test(r.path) && r.perms.startsWith('r-x'))
    expect(libcText).toBeDefined()
    expect(wanted(libcText!)).toBe(false)
    expect(wanted(maps.find((r) => r.path === '[heap]')!)).toBe(true)
    expect(wanted(maps.find((r) => r.path === '[stack]')!)).toBe(true)
    expect(maps.some((r) => r.path === '[vvar]' && wanted(r))).toBe(false)
    expect(wanted({ start: 0, end: 4096, perms: 'r-xp', path: '/memfd:x (deleted)' })).toBe(true)
  })

  it('writes Cuckoo\'s format; processing lists the regions and finds the URL kept only in memory', async () => {
    const { parts, bytes, cut } = readProcess(child.pid!, 64 << 20)
    expect(cut).toBe(false)
    const file = path.join(dir, `${child.pid}-1.dmp`)
    writeFileSync(file, Buffer.concat(parts))
    expect(bytes).toBeLessThan(16 << 20)
    const read = await readProcessDump(file)
    expect(read.urls).toEqual([MEMONLY_URL])
    const heap = parseMaps(readFileSync(`/proc/${child.pid}/maps`, 'latin1')).find((r) => r.path === '[heap]')!
    expect(read.regions).toContainEqual(expect.objectContaining({ addr: `0x${heap.start.toString(16).padStart(8, '0')}`, protect: 4, state: 0x1000, type: 0x20000 }))
    expect(read.regions.reduce((n, r) => n + r.size, 0)).toBe(bytes)
    expect(read.regions[0]?.offset).toBe(24)
  })

  it('stops at the cap', () => {
    const { bytes, cut } = readProcess(child.pid!, 5000)
    expect(bytes).toBe(5000)
    expect(cut).toBe(true)
  })

  it('reads a file in no known format as raw bytes, and a header running past the end as raw too', async () => {
    const file = path.join(dir, 'raw.dmp')
    writeFileSync(file, Buffer.concat([Buffer.alloc(24, 0xff), Buffer.from(` ${MEMONLY_URL} `)]))
    expect(await readProcessDump(file)).toEqual({ regions: [], urls: [MEMONLY_URL] })
  })
})
