// Windows guests on the Wine test bed (test/guests/wine-guest.ts): a network namespace runs
// Aviary's Windows agent (the Node single executable) under Debian's Wine as a `physical` machine
// with platform windows. Four samples, built here with mingw-w64 from test/fixtures/windows-samples,
// go through the whole service — submit, scheduler, agent protocol, Aviary's Windows analyzer with
// its native helper, result server, tcpdump, processing, signatures — and the test reads what a
// user reads through the API:
//   - dropper.exe drops into %APPDATA% and C:\Users\Public, starts children (a dropped copy of
//     itself, cmd.exe), sets a Run key, fetches a URL from the namespace's fake internet, and
//     deletes itself;
//   - payload.dll, run by rundll32 with the task option function=Install;
//   - script.bat;
//   - quick.exe (submitted as "quick start.exe"), a PE that exits at once (a clean run: the
//     Windows signatures stay silent).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildSample, createWineGuest, wineLeftAfter, type WineGuest } from '../guests/wine-guest'
import { startHarness, type Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'

interface Proc { pid: number; ppid: number; process_name: string; command_line: string }
interface Report {
  info: { duration: number; score: number }
  behavior: { processes: Proc[]; summary: Record<string, string[]> }
  network: { dns: { request: string }[]; http: { host: string; uri: string; user_agent?: string }[]; tcp: { dst: string; dport: number }[] }
  dropped: { name: string; filepath?: string; path?: string }[]
  signatures: { name: string; ttp: unknown; marks: { ioc?: string }[] }[]
  debug: { errors: string[] }
}

const DONE = ['reported', 'failed_analysis', 'failed_processing']
const WINDOWS_SIGNATURES = ['persistence_autorun', 'drops_and_runs_executable', 'deletes_self']

describe('Windows guests on Wine (physical machine, Aviary\'s Windows agent)', () => {
  let guest: WineGuest
  let h: Harness
  let samples: string
  const ids: Record<string, number> = {}
  const reports: Record<string, Report> = {}

  beforeAll(async () => {
    samples = mkdtempSync(path.join(tmpdir(), 'aviary-winsamples-'))
    const files = {
      dropper: buildSample('dropper.c', samples, { libs: ['-lwininet'] }),
      dll: buildSample('payload-dll.c', samples, { dll: true }),
      quick: buildSample('quick.c', samples)
    }
    guest = await createWineGuest({ index: 56, prefix: 'avwn' })
    h = await startHarness({
      engine: true,
      machines: {
        driver: 'physical',
        interface: guest.hostIf,
        resultserver: { ip: guest.hostIp, port: 0 },
        screenshots: { interval: 0 },
        machines: [{ name: 'wine56', ip: guest.guestIp, platform: 'windows' }]
      }
    })
    // One machine: the tasks run one after the other, in this order.
    ids.dropper = await submitFile(h, 'dropper.exe', readFileSync(files.dropper), { timeout: '60' })
    ids.dll = await submitFile(h, 'payload.dll', readFileSync(files.dll), { timeout: '60', options: 'function=Install,arguments=from-the-task' })
    ids.bat = await submitFile(h, 'script.bat', readFileSync(path.join(__dirname, '../fixtures/windows-samples/script.bat')), { timeout: '60' })
    // A blank in its name: the package must quote it, and the name must read back whole.
    ids.quick = await submitFile(h, 'quick start.exe', readFileSync(files.quick), { timeout: '60' })
    for (const [name, id] of Object.entries(ids)) {
      await waitForTask(h, id, DONE, 240_000)
      const r = await h.json<Report>(`/tasks/report/${id}`)
      if (r.status === 200) reports[name] = r.body
    }
  }, 600_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
    rmSync(samples, { recursive: true, force: true })
    // Every Wine process of the test bed (wineserver included) is gone with its guest.
    // Its own guest's Wine only: another Wine file may be running beside this one.
    expect(await wineLeftAfter(10_000, guest && path.dirname(guest.prefix))).toEqual([])
  }, 60_000)

  const procs = (name: string): Proc[] => reports[name]?.behavior.processes ?? []
  const dropped = (name: string): string[] => (reports[name]?.dropped ?? []).map((d) => d.name)
  const signatures = (name: string): string[] => (reports[name]?.signatures ?? []).map((s) => s.name)

  it('every task is reported without errors', async () => {
    for (const [name, id] of Object.entries(ids)) {
      const { body } = await h.json<{ task: { status: string; errors: string[] } }>(`/tasks/view/${id}`)
      expect({ name, status: body.task.status, errors: body.task.errors }).toEqual({ name, status: 'reported', errors: [] })
    }
  })

  it('dropper.exe: its process tree with command lines, the dropped copy and cmd.exe as its children', () => {
    const list = procs('dropper')
    const root = list.find((p) => p.process_name.toLowerCase() === 'dropper.exe')
    expect(root, JSON.stringify(list)).toBeDefined()
    const copy = list.find((p) => /updater\.exe"? --child$/i.test(p.command_line))
    const cmd = list.find((p) => p.process_name.toLowerCase() === 'cmd.exe' && p.command_line.includes('echo from cmd'))
    const del = list.find((p) => p.process_name.toLowerCase() === 'cmd.exe' && /del \/f \/q .*dropper\.exe/i.test(p.command_line))
    expect(copy?.ppid, JSON.stringify(list)).toBe(root!.pid)
    expect(cmd?.ppid, JSON.stringify(list)).toBe(root!.pid)
    expect(del?.ppid, JSON.stringify(list)).toBe(root!.pid)
  })

  it('dropper.exe: the files it dropped into %APPDATA% and C:\\Users\\Public arrive, with their bytes', async () => {
    const names = dropped('dropper')
    for (const n of ['config.txt', 'note.txt', 'updater.exe', 'child.txt', 'cmd.txt']) expect(names, names.join(', ')).toContain(n)
    const written = reports.dropper!.behavior.summary.file_written ?? []
    expect(written.some((p) => /\\AppData\\Roaming\\AviaryTest\\config\.txt$/i.test(p)), written.join('\n')).toBe(true)
    expect(written.some((p) => /^C:\\users\\Public\\note\.txt$/i.test(p)), written.join('\n')).toBe(true)
    const tar = await h.get(`/tasks/report/${ids.dropper}/dropped`)
    expect(tar.status).toBe(200)
    const listing = execFileSync('tar', ['-tjf', '-'], { input: Buffer.from(await tar.arrayBuffer()), encoding: 'utf8' })
    expect(listing).toMatch(/_note\.txt/)
  })

  it('dropper.exe: the Run key it set is in the summary, and it deleted its own file', () => {
    const summary = reports.dropper!.behavior.summary
    expect(summary.regkey_written).toContain('HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\AviaryTest')
    expect((summary.file_deleted ?? []).some((p) => /\\dropper\.exe$/i.test(p)), JSON.stringify(summary.file_deleted)).toBe(true)
  })

  it('dropper.exe: its HTTP request reached the fake internet and is in the pcap and the network section', async () => {
    expect(guest.http.requests.some((r) => r.url === '/payload' && r.host === 'evil.example.com' && r.ua === 'AviaryTestDropper/1.0')).toBe(true)
    const network = reports.dropper!.network
    expect(network.dns.map((d) => d.request)).toContain('evil.example.com')
    expect(network.http.some((r) => r.host === 'evil.example.com' && r.uri.endsWith('/payload'))).toBe(true)
    const pcap = await h.get(`/pcap/get/${ids.dropper}`)
    expect(pcap.status).toBe(200)
    const text = execFileSync('tcpdump', ['-n', '-r', '-', '-A'], { input: Buffer.from(await pcap.arrayBuffer()), encoding: 'utf8', stdio: ['pipe', 'pipe', 'ignore'] })
    expect(text).toContain('GET /payload HTTP/1.1')
    // The agent's and the result server's traffic are not in it.
    expect(text).not.toMatch(new RegExp(`${guest.guestIp.replace(/\./g, '\\.')}\\.8000[ :]`))
    const contacted = reports.dropper!.behavior.summary.connects_ip ?? []
    expect(contacted, 'the helper saw the connection with its owning process').toContain(guest.internetIp)
  })

  it('dropper.exe: the Windows signatures fire, with their ATT&CK ids', () => {
    const names = signatures('dropper')
    for (const s of [...WINDOWS_SIGNATURES, 'drops_executable']) expect(names, names.join(', ')).toContain(s)
    const run = reports.dropper!.signatures.find((s) => s.name === 'persistence_autorun')!
    expect(JSON.stringify(run.ttp)).toContain('T1547')
    expect(run.marks.some((m) => m.ioc?.endsWith('\\CurrentVersion\\Run\\AviaryTest'))).toBe(true)
    expect(reports.dropper!.info.score).toBeGreaterThan(0)
  })

  it('payload.dll: rundll32 calls the export named by function=, with the arguments', () => {
    const list = procs('dll')
    const rundll = list.find((p) => p.process_name.toLowerCase() === 'rundll32.exe')
    expect(rundll?.command_line, JSON.stringify(list)).toMatch(/payload\.dll,Install from-the-task$/)
    expect(list.some((p) => p.process_name.toLowerCase() === 'cmd.exe' && p.ppid === rundll!.pid && p.command_line.includes('from the dll'))).toBe(true)
    expect(dropped('dll')).toEqual(expect.arrayContaining(['dll-ran.txt', 'dll-cmd.txt']))
  })

  it('script.bat: cmd.exe runs it, its child and its files are seen', () => {
    const list = procs('bat')
    const top = list.find((p) => p.process_name.toLowerCase() === 'cmd.exe' && p.command_line.includes('script.bat'))
    expect(top, JSON.stringify(list)).toBeDefined()
    expect(list.some((p) => p.ppid === top!.pid && p.command_line.includes('from the batch child'))).toBe(true)
    expect(dropped('bat')).toEqual(expect.arrayContaining(['bat.txt', 'bat-child.txt']))
  })

  it('quick start.exe: a PE that exits at once ends the run at once, and no Windows signature fires', () => {
    const r = reports.quick!
    expect(r.behavior.processes.map((p) => p.process_name.toLowerCase())).toEqual(['quick start.exe'])
    expect(r.info.duration).toBeLessThan(30) // far from its 60 s timeout
    for (const s of WINDOWS_SIGNATURES) expect(signatures('quick')).not.toContain(s)
    expect(r.behavior.summary.regkey_written ?? []).toEqual([])
  })
})
