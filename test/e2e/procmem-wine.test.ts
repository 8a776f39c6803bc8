// Process memory of a Windows sample on the Wine test bed (test/guests/wine-guest.ts, namespace
// avpw46): a mingw-built sample assembles a URL on its heap and sleeps past the run's end; the
// analyzer's helper dumps it (VirtualQueryEx + ReadProcessMemory, Cuckoo's format) through the
// result server, processing finds the URL in `procmemory` and lists its regions, the API serves it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildSample, createWineGuest, wineLeftAfter, type WineGuest } from '../guests/wine-guest'
import { startHarness, type Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'
import { schemaProblems } from '../report-contract'

const URL = 'http://memonly-win.example.net/cfg?id=9'
interface Dump { pid: number; size: number; urls: string[]; regions: { type: number; protect: number }[] }
interface Report { procmemory: Dump[]; behavior: { processes: { pid: number; process_name: string }[] }; debug: { log: string[] } }

describe('process memory of a Windows sample on Wine', () => {
  let guest: WineGuest
  let h: Harness
  let samples: string
  let id: number
  let report: Report

  beforeAll(async () => {
    samples = mkdtempSync(path.join(tmpdir(), 'aviary-pmwine-'))
    const exe = buildSample('memonly.c', samples)
    expect(readFileSync(exe).includes(Buffer.from(URL))).toBe(false)
    guest = await createWineGuest({ index: 46, prefix: 'avpw' })
    h = await startHarness({
      engine: true,
      machines: {
        driver: 'physical', interface: guest.hostIf, resultserver: { ip: guest.hostIp, port: 0 }, screenshots: { interval: 0 },
        machines: [{ name: 'wine46', ip: guest.guestIp, platform: 'windows' }]
      }
    })
    id = await submitFile(h, 'memonly.exe', readFileSync(exe), { timeout: '10' })
    expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 240_000)).toBe('reported')
    report = (await h.json<Report>(`/tasks/report/${id}`)).body
  }, 400_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
    rmSync(samples, { recursive: true, force: true })
    // Its own guest's Wine only: another Wine file may be running beside this one.
    expect(await wineLeftAfter(10_000, guest && path.dirname(guest.prefix))).toEqual([])
  }, 60_000)

  it('dumps the sample still running at the end; the URL it kept only in memory is in procmemory', async () => {
    expect(schemaProblems(report)).toEqual([])
    const proc = report.behavior.processes.find((p) => p.process_name.toLowerCase() === 'memonly.exe')
    expect(proc, JSON.stringify(report.behavior.processes)).toBeDefined()
    const dump = report.procmemory.find((d) => d.pid === proc?.pid)
    expect(dump, `${JSON.stringify(report.procmemory.map((d) => d.pid))}\n${report.debug.log.filter((l) => l.includes('memory')).join('\n')}`).toBeDefined()
    expect(dump?.urls).toContain(URL)
    // private read-write memory (the heap): MEM_PRIVATE, PAGE_READWRITE
    expect(dump?.regions.some((r) => r.type === 0x20000 && r.protect === 0x04)).toBe(true)
    const res = await h.get(`/memory/get/${id}/${proc?.pid}`)
    expect(res.status).toBe(200)
    expect(Buffer.from(await res.arrayBuffer()).length).toBe(dump?.size)
  })
})
