// A sample that looks for its sandbox before it does anything, on the Wine Windows guest
// (test/guests/wine-guest.ts, namespace avsw57): Aviary's Windows agent, the single executable,
// installed at a neutral path (C:\Program Files\Guest Tools\guestd.exe: its path and name are the
// deployer's choice, README "Preparing analysis machines") and started with a plain environment
// from a prefix whose folder names nothing of Aviary either (Wine shows the prefix's path to
// Windows programs, in WINECONFIGDIR and the like). The sample (test/fixtures/windows-samples/
// lookout.c) reads its environment block and command line, every process's image and command
// line, each ancestor's, and the names in its folder, %TEMP%, C:\ and the analyzer's folder; it
// looks there for "aviary" (any case) and for this run's id (from analysis.conf), and finding
// nothing drops a payload and sets a Run key, which the report must show. What it read comes back
// as a dropped file.
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildSample, createWineGuest, wineLeftAfter, type WineGuest } from '../guests/wine-guest'
import { startHarness, type Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'

/** The guest's home on the host: not under the cache's aviary-wine folder (see the top). */
const HOMES = '/var/cache/avst-wine-guests'
const AGENT_PATH = 'C:\\Program Files\\Guest Tools\\guestd.exe'
/** What an init system gives a service: enough for Wine to find itself, nothing of the test runner's. */
const UNIX_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/root', USER: 'root', LANG: 'C.UTF-8' }

interface Report {
  behavior: { processes: { process_name: string; command_line: string }[]; summary: Record<string, string[] | undefined> }
  dropped: { name: string }[]
}

describe('a sample that looks for Aviary on a Windows guest (Wine) finds nothing', () => {
  let guest: WineGuest
  let h: Harness
  let samples: string
  let id: number
  let agentEnv: Record<string, string>
  let report: Report
  let seen: string
  let run: string

  const dropped = (name: string): string | null => {
    const dir = path.join(h.dataDir, 'storage/analyses', String(id), 'files')
    const f = existsSync(dir) ? readdirSync(dir).find((n) => n.endsWith(`_${name}`)) : undefined
    return f === undefined ? null : readFileSync(path.join(dir, f), 'utf8')
  }
  const section = (title: string): string[] => {
    const lines = seen.split('\n')
    const start = lines.findIndex((l) => l.startsWith(`== ${title}`))
    if (start < 0) return []
    const end = lines.findIndex((l, i) => i > start && l.startsWith('== '))
    return lines.slice(start + 1, end < 0 ? undefined : end).filter((l) => l !== '')
  }

  beforeAll(async () => {
    samples = mkdtempSync(path.join(tmpdir(), 'avst-winsamples-'))
    const exe = buildSample('lookout.c', samples, { libs: ['-municode'] })
    guest = await createWineGuest({ index: 57, prefix: 'avsw', home: path.join(HOMES, 'avsw57'), agentPath: AGENT_PATH, env: UNIX_ENV })
    agentEnv = ((await (await fetch(`http://${guest.guestIp}:8000/environ`)).json()) as { environ: Record<string, string> }).environ
    h = await startHarness({
      engine: true,
      machines: {
        driver: 'physical',
        interface: guest.hostIf,
        resultserver: { ip: guest.hostIp, port: 0 },
        screenshots: { interval: 0 },
        machines: [{ name: 'stealth57', ip: guest.guestIp, platform: 'windows' }]
      }
    })
    id = await submitFile(h, 'invoice.exe', readFileSync(exe), { timeout: '60' })
    expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 300_000)).toBe('reported')
    report = (await h.json<Report>(`/tasks/report/${id}`)).body
    seen = (dropped('seen.txt') ?? '').replace(/\r/g, '')
    run = (dropped('run.txt') ?? '').trim()
  }, 600_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
    rmSync(samples, { recursive: true, force: true })
    expect(await wineLeftAfter(10_000, HOMES)).toEqual([])
    rmSync(HOMES, { recursive: true, force: true })
  }, 60_000)

  it('the sample read its environment, its ancestors and the analyzer\'s folder, and found neither "aviary" nor the run id', () => {
    expect(dropped('verdict.txt'), 'what the sample found').toBeNull()
    expect(run, 'the sample read the run id from analysis.conf').toMatch(/^[0-9a-f]{32}$/)
    expect(seen).not.toMatch(/aviary/i)
    expect(seen).not.toContain(run)
    const ancestors = section('ancestors').filter((l) => l.startsWith('pid '))
    expect(ancestors[0], ancestors.join('\n')).toMatch(/invoice\.exe/i)
    expect(ancestors.some((l) => /guestd\.exe.* cmdline .*guestd\.exe"? C:\\[a-z]{5,10}\\analyzer\.cjs/i.test(l)), ancestors.join('\n')).toBe(true)
    expect(section('analyzer folder').some((l) => /\\analysis\.conf$/i.test(l)), seen.slice(0, 4000)).toBe(true)
    // The Windows helper runs beside the sample under a name that says nothing.
    expect(section('processes').some((l) => /^helper\.exe /i.test(l)), section('processes').join('\n')).toBe(true)
  })

  it('its environment is the agent\'s, nothing added', () => {
    const env = section('environment').filter((l) => !l.startsWith('=')) // cmd's per-drive entries (=C:=C:\...)
    const asLines = Object.entries(agentEnv).map(([k, v]) => `${k}=${v}`)
    // Windows names ignore case; each of the agent's variables is there, and nothing else.
    const norm = (l: string): string => { const i = l.indexOf('='); return `${l.slice(0, i).toUpperCase()}=${l.slice(i + 1)}` }
    expect(env.map(norm).sort()).toEqual(asLines.map(norm).sort())
  })

  it('so it ran its malicious branch, and the report shows it', () => {
    expect(dropped('payload.txt')).toBe('owned\r\n')
    expect(report.behavior.summary.regkey_written ?? []).toContain('HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\Updater')
  })
})
