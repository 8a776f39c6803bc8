// Windows runs of the benign corpus and what its silence must not cost, on the Wine test bed
// (test/guests/wine-guest.ts: Aviary's Windows agent under Wine in a network namespace, avbw26, as a
// physical machine with platform windows), through the whole service:
// - setup.exe (test/fixtures/windows-samples/installer.c), an installer-like PE: it installs files
//   into %LOCALAPPDATA%\Programs and its settings into the registry. No signature may fire.
// - shellout.exe (shellout.c) starts `cmd /c ...` and `reg add` of a Run key, and fetches a URL:
//   its processes are named from their images (cmd.exe, reg.exe), starts_shell fires as Windows
//   Command Shell, persistence_autorun names the Run key's techniques only, and connects_host holds
//   the host name it connected to.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildSample, createWineGuest, wineLeftAfter, type WineGuest } from '../guests/wine-guest'
import { startHarness, type Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'
import { schemaProblems } from '../report-contract'
import { keepFixture } from '../benign-corpus'

interface Proc { pid: number; ppid: number; process_name: string; process_path: string; command_line: string }
interface Report {
  info: { score: number }
  behavior: { processes: Proc[]; summary: Record<string, string[]> }
  dropped: { name: string }[]
  signatures: { name: string; ttp: Record<string, unknown>; marks: { pid?: number; ioc?: string; process_name?: string }[] }[]
  debug: { errors: string[] }
}

const DONE = ['reported', 'failed_analysis', 'failed_processing']

describe('Windows runs on Wine: an installer stays silent, a shell-out is named right', () => {
  let guest: WineGuest
  let h: Harness
  let samples: string
  const ids: Record<string, number> = {}
  const reports: Record<string, Report> = {}
  const errors: Record<string, string[]> = {}

  beforeAll(async () => {
    samples = mkdtempSync(path.join(tmpdir(), 'aviary-bw-'))
    const installer = buildSample('installer.c', samples)
    const shellout = buildSample('shellout.c', samples, { libs: ['-lwininet'] })
    guest = await createWineGuest({ index: 26, prefix: 'avbw' })
    h = await startHarness({
      engine: true,
      machines: {
        driver: 'physical',
        interface: guest.hostIf,
        resultserver: { ip: guest.hostIp, port: 0 },
        screenshots: { interval: 0 },
        machines: [{ name: 'wine26', ip: guest.guestIp, platform: 'windows' }]
      }
    })
    ids.installer = await submitFile(h, 'setup.exe', readFileSync(installer), { timeout: '60' })
    ids.shellout = await submitFile(h, 'shellout.exe', readFileSync(shellout), { timeout: '60' })
    for (const [name, id] of Object.entries(ids)) {
      expect(await waitForTask(h, id, DONE, 300_000), name).toBe('reported')
      reports[name] = (await h.json<Report>(`/tasks/report/${id}`)).body
      errors[name] = (await h.json<{ task: { errors: string[] } }>(`/tasks/view/${id}`)).body.task.errors
    }
    keepFixture('installer', reports.installer as unknown as Record<string, unknown>)
  }, 720_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
    if (samples) rmSync(samples, { recursive: true, force: true })
    // Its own guest's Wine only: another Wine file may be running beside this one.
    expect(await wineLeftAfter(10_000, guest && path.dirname(guest.prefix))).toEqual([])
  }, 60_000)

  it('both reports fit the schema and carry no error', () => {
    for (const [name, r] of Object.entries(reports)) {
      expect({ name, problems: schemaProblems(r), errors: errors[name], debug: r.debug.errors }).toEqual({ name, problems: [], errors: [], debug: [] })
    }
  })

  it('setup.exe installs its files, and no signature fires', () => {
    const r = reports.installer!
    expect(r.dropped.map((d) => d.name)).toEqual(expect.arrayContaining(['readme.txt', 'license.txt', 'settings.ini']))
    expect(r.behavior.processes.map((p) => p.process_name.toLowerCase())).toEqual(['setup.exe'])
    expect(r.signatures.map((s) => ({ name: s.name, marks: s.marks }))).toEqual([])
    expect(r.info.score).toBe(0)
  })

  it('shellout.exe: `cmd /c` and `reg add` are named from their images, cmd.exe and reg.exe', () => {
    const list = reports.shellout!.behavior.processes
    const cmd = list.find((p) => p.command_line.startsWith('cmd /c'))
    const reg = list.find((p) => p.command_line.startsWith('reg add'))
    expect(cmd?.process_path.toLowerCase(), JSON.stringify(list)).toBe('c:\\windows\\system32\\cmd.exe')
    expect(cmd?.process_name).toBe('cmd.exe')
    expect(reg?.process_name.toLowerCase()).toBe('reg.exe')
  })

  it('shellout.exe: starts_shell fires on cmd.exe, as Windows Command Shell', () => {
    const s = reports.shellout!.signatures.find((x) => x.name === 'starts_shell')
    const cmd = reports.shellout!.behavior.processes.find((p) => p.command_line.startsWith('cmd /c'))
    expect(s?.marks).toEqual([expect.objectContaining({ pid: cmd?.pid, process_name: 'cmd.exe' })])
    expect(Object.keys(s!.ttp).sort()).toEqual(['T1059', 'T1059.003'])
  })

  it('shellout.exe: persistence_autorun names the Run key\'s techniques, T1547.001 and T1112, and no other', () => {
    const s = reports.shellout!.signatures.find((x) => x.name === 'persistence_autorun')
    expect(s?.marks.map((m) => m.ioc)).toContain('HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\AviaryShellout')
    expect(Object.keys(s!.ttp).sort()).toEqual(['T1112', 'T1547.001'])
  })

  it('shellout.exe: connects_host holds the name it connected to, connects_ip the address', () => {
    const s = reports.shellout!.behavior.summary
    expect(s.connects_ip).toEqual([guest.internetIp])
    expect(s.connects_host).toEqual(['cdn.example.net'])
  })
})
