// Process memory of a Linux sample end to end with real parts: a netns guest (physical driver,
// `aviary agent`, namespace avpm20) runs a gcc-built sample that assembles a URL on its heap at run
// time (the file never holds it: memonly-sample.ts checks). The analyzer dumps it through the
// result server as memory/<pid>-1.dmp, once at its exit (held there by strace) and, in a second
// task, at the end of the run while it still sleeps; processing finds the URL in `procmemory`,
// YARA matches it with a rule of the task's rules folder, and the API serves the dumps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'
import { schemaProblems } from '../report-contract'
import { buildMemOnlySample, MEMONLY_URL } from '../procmem/memonly-sample'

interface Dump { file: string; pid: number; num: number; size: number; yara: { name: string }[]; urls: string[]; regions: { addr: string; size: number; protect: number }[] }
interface Report { procmemory: Dump[]; behavior: { processes: { pid: number; process_name: string }[] }; debug: { log: string[] } }

describe('process memory of a Linux sample on a netns guest', () => {
  let guest: NetnsGuest
  let h: Harness
  let work: string
  let sample: Buffer
  const run = async (fields: Record<string, string>): Promise<{ id: number; report: Report }> => {
    const id = await submitFile(h, 'memonly', sample, fields)
    expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 120_000)).toBe('reported')
    const report = (await h.json<Report>(`/tasks/report/${id}`)).body
    expect(schemaProblems(report)).toEqual([])
    return { id, report }
  }

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'procmem-e2e-'))
    sample = readFileSync(buildMemOnlySample(work))
    ;({ guest, h } = await startNetnsAnalysisNode({ index: 20, prefix: 'avpm' }))
    const rules = path.join(h.dataDir, 'yara')
    mkdirSync(rules, { recursive: true })
    writeFileSync(path.join(rules, 'memonly.yar'), 'rule memonly_url { strings: $u = "memonly.example.net" condition: $u }\n')
  }, 120_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
    rmSync(work, { recursive: true, force: true })
  })

  it('dumps the sample at its exit; the URL it kept only in memory is in procmemory', async () => {
    const { id, report } = await run({ timeout: '30' })
    const proc = report.behavior.processes.find((p) => p.process_name === 'memonly')
    expect(proc, JSON.stringify(report.behavior.processes)).toBeDefined()
    const dump = report.procmemory.find((d) => d.pid === proc?.pid)
    expect(dump, JSON.stringify(report.procmemory.map((d) => d.pid))).toBeDefined()
    expect(dump?.urls).toContain(MEMONLY_URL)
    expect(dump?.regions.length).toBeGreaterThan(0)
    expect(dump?.regions.some((r) => r.protect === 4)).toBe(true)
    expect(report.debug.log.some((l) => l.includes(`process memory of ${proc?.pid} (at its exit)`)), report.debug.log.join('\n')).toBe(true)
    // the API: listed by name, served by that name and by the bare process number
    const list = await h.json<{ dump_files: string[] }>(`/memory/list/${id}`)
    expect(list.body.dump_files).toContain(`${proc?.pid}-1`)
    for (const name of [`${proc?.pid}-1`, String(proc?.pid)]) {
      const res = await h.get(`/memory/get/${id}/${name}`)
      expect(res.status).toBe(200)
      const bytes = Buffer.from(await res.arrayBuffer())
      expect(bytes.length).toBe(dump?.size)
      expect(bytes.includes(Buffer.from(MEMONLY_URL))).toBe(true)
    }
  }, 180_000)

  it('dumps a sample still running at the end of the run; YARA runs over the dump', async () => {
    const { report } = await run({ timeout: '6', options: 'arguments=60' })
    const proc = report.behavior.processes.find((p) => p.process_name === 'memonly')
    const dump = report.procmemory.find((d) => d.pid === proc?.pid)
    expect(dump?.urls).toContain(MEMONLY_URL)
    expect(dump?.yara.map((y) => y.name)).toContain('memonly_url')
    expect(report.debug.log.some((l) => l.includes(`process memory of ${proc?.pid} (at the end)`)), report.debug.log.join('\n')).toBe(true)
  }, 180_000)

  it('dumps nothing with procmemdump=0', async () => {
    const { id, report } = await run({ timeout: '30', options: 'procmemdump=0' })
    expect(report.procmemory).toEqual([])
    expect((await h.json(`/memory/list/${id}`)).status).toBe(404)
  }, 180_000)
})
