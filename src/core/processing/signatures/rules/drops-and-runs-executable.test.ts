// The Windows signatures on what the Windows analyzer reports: a behaviour log as the analyzer
// writes it on a Windows guest (processes with Windows paths, file changes, registry records) is
// read by the host's reader (aviary-log.ts), its summary put into a report fragment, and the rules
// run on it. A dropper that writes a Run key, starts the copy it wrote and deletes itself fires
// persistence_autorun (with T1547.001), drops_and_runs_executable and deletes_self; a clean run of
// the same shape fires none of them. The same three are checked on a real Wine run by
// test/e2e/windows-wine.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { readAviaryLog } from '../../behavior/aviary-log'
import { runSignatures } from '../engine'
import type { BehaviorRecord } from '../../../../guest-protocol/behavior'

const dirs: string[] = []
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })

const TEMP = 'C:\\users\\analyst\\AppData\\Local\\Temp'
const APPDATA = 'C:\\users\\analyst\\AppData\\Roaming'
const RUN = 'HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run'

function analyzer(): BehaviorRecord {
  return { type: 'analyzer', version: 1, task: '1', package: 'exe', platform: 'windows', category: 'file', target: `${TEMP}\\sample.exe`, pid: 100, started: 1000, ended: 9000, reason: 'tree-ended', monitors: ['winmon', 'files'] }
}

function proc(pid: number, ppid: number, exe: string, cmd: string): BehaviorRecord {
  return { type: 'process', pid, ppid, command_line: cmd, exe, first_seen: 1000 + pid, exited: 5000 }
}

/** The report fragment the signatures read, from a behaviour log written as the analyzer does. */
async function reportOf(records: BehaviorRecord[]): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'aviary-winsig-'))
  dirs.push(dir)
  const file = join(dir, 'behavior.jsonl')
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n') + '\n')
  const log = await readAviaryLog(file)
  const summary = Object.fromEntries([...log.summary].map(([k, v]) => [k, [...v]]))
  return {
    info: { id: 1, platform: 'windows' },
    target: { category: 'file', file: { name: 'sample.exe', path: '/data/storage/binaries/0f0f', type: 'PE32+ executable (console) x86-64, for MS Windows' } },
    behavior: { processes: log.processes, processtree: [], summary },
    network: { hosts: [], domains: [], dns: [], http: [], tcp: [], udp: [] },
    dropped: [],
    static: {},
    strings: []
  }
}

const fired = (report: Record<string, unknown>): string[] => runSignatures(report).signatures.map((s) => s.name)

describe('Windows signatures on the Windows analyzer\'s behaviour log', () => {
  it('a dropper: Run key, a started copy of itself, its own file deleted', async () => {
    const report = await reportOf([
      analyzer(),
      proc(100, 50, `${TEMP}\\sample.exe`, `"${TEMP}\\sample.exe"`),
      // The copy is started by a command line only (no image path known): the program is read from it.
      { type: 'process', pid: 104, ppid: 100, command_line: `"${APPDATA.toUpperCase()}\\Svc\\Updater.exe" --child`, exe: null, first_seen: 1200, exited: 3000 },
      proc(108, 100, 'C:\\windows\\system32\\cmd.exe', `cmd.exe /c del /f /q "${TEMP}\\sample.exe"`),
      { type: 'file', op: 'created', path: `${APPDATA}\\Svc\\updater.exe`, time: 1100 },
      { type: 'file', op: 'deleted', path: `${TEMP}\\sample.exe`, time: 6000 },
      { type: 'registry', op: 'written', key: RUN, name: 'Updater', data: `${APPDATA}\\Svc\\updater.exe`, pid: null, time: 1500 },
      { type: 'registry', op: 'deleted', key: `${RUN}Once`, name: 'Old', pid: null, time: 1600 }
    ])
    const summary = (report.behavior as { summary: Record<string, string[]> }).summary
    expect(summary.regkey_written).toEqual([`${RUN}\\Updater`])
    expect(summary.regkey_deleted).toEqual([`${RUN}Once\\Old`])
    const res = runSignatures(report)
    expect(res.signatures.map((s) => s.name)).toEqual(expect.arrayContaining(['persistence_autorun', 'drops_and_runs_executable', 'deletes_self']))
    const persistence = res.signatures.find((s) => s.name === 'persistence_autorun')!
    // A Run key is T1547.001, written to the registry (T1112): not a scheduled task, not a service.
    expect(Object.keys(persistence.ttp).sort()).toEqual(['T1112', 'T1547.001'])
    expect(persistence.marks).toContainEqual({ type: 'ioc', category: 'registry', ioc: `${RUN}\\Updater`, description: null })
    const run = res.signatures.find((s) => s.name === 'drops_and_runs_executable')!
    expect(Object.keys(run.ttp)).toEqual(['T1105', 'T1106'])
    expect(run.marks).toEqual([{ type: 'ioc', category: 'file', ioc: `${APPDATA}\\Svc\\updater.exe`, description: 'started as Updater.exe (pid 104)' }])
  })

  it('a clean run: the sample starts a system program and writes a text file; none of them fires', async () => {
    const report = await reportOf([
      analyzer(),
      proc(100, 50, `${TEMP}\\sample.exe`, `"${TEMP}\\sample.exe"`),
      proc(104, 100, 'C:\\windows\\system32\\cmd.exe', 'cmd.exe /c echo hi'),
      { type: 'file', op: 'created', path: 'C:\\users\\Public\\note.txt', time: 1100 },
      // A value under a key that is no autorun key.
      { type: 'registry', op: 'written', key: 'HKEY_CURRENT_USER\\Software\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon', name: 'ExcludeProfileDirs', data: 'x', pid: null, time: 1500 }
    ])
    const names = fired(report)
    for (const s of ['persistence_autorun', 'drops_and_runs_executable', 'deletes_self']) expect(names).not.toContain(s)
  })

  it('drops_and_runs_executable on Linux paths compares them as they are (case matters there)', async () => {
    const report = await reportOf([
      analyzer(),
      proc(100, 50, '/tmp/sample', '/tmp/sample'),
      proc(101, 100, '/home/u/.local/bin/Updater', '/home/u/.local/bin/Updater'),
      { type: 'file', op: 'created', path: '/home/u/.local/bin/updater', time: 1100 }
    ])
    expect(fired(report)).not.toContain('drops_and_runs_executable')
  })
})
