// Reports that say only what is true, on a netns guest (physical driver, `aviary agent`, namespace
// avbh25), through the whole pipeline: submit, Aviary's analyzer under strace, result server,
// capture, processing, the API.
// - The benign corpus (test/benign-corpus.ts): ordinary programs that no signature may fire on,
//   none scoring above 0 nor carrying an error; a run still going at the timeout included.
// - What the corpus' silence must not cost: /etc/shadow read through a symlink, a self-deleting ELF
//   (its own path, not the kernel's "(deleted)"), a shell handed commands through another program,
//   a missing interpreter named, host names (not addresses) in connects_host.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { Harness } from '../service-harness'
import { submitFile, waitForTask } from './e2e-helpers'
import { schemaProblems } from '../report-contract'
import { keepFixture, LINUX_CORPUS, WEB_HOST } from '../benign-corpus'
import { compileC } from '../fixtures/compiled'

interface Proc { pid: number; ppid: number; process_name: string; process_path: string; command_line: string }
interface Mark { type: string; ioc?: string; pid?: number; command_line?: string; why?: string }
interface Report {
  info: { score: number }
  signatures: { name: string; ttp: Record<string, unknown>; marks: Mark[] }[]
  behavior: { processes: Proc[]; summary: Record<string, string[]>; generic: { pid: number; summary: Record<string, string[]> }[] }
  debug: { errors: string[] }
}

/** A program that removes its own file, then lives on for a while (so the guest's /proc shows it deleted). */
const SELF_DELETING = `#include <stdio.h>
#include <unistd.h>
int main(void) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  unlink(self);
  sleep(2);
  puts("gone");
  return 0;
}
`

const FIRING = {
  'shadow-link': { file: 'cache.sh', content: '#!/bin/sh\nln -sf /etc/shadow /tmp/.cache-s\nhead -c 16 /tmp/.cache-s > /dev/null\n' },
  'handed-over': { file: 'handover.sh', content: '#!/bin/sh\ntimeout 10 sh -c \'id > /tmp/bh-id.txt; uname -a > /dev/null\'\n' },
  'ip-only': { file: 'ip-only.sh', content: '' }, // set in beforeAll: it needs the guest's address
  'bad-interpreter': { file: 'runme', content: '#!/nonexistent/interp\necho never\n' }
} as Record<string, { file: string; content: string | Buffer }>

describe('what reports say on a netns guest', () => {
  let guest: NetnsGuest
  let h: Harness
  let build: string
  const ids = new Map<string, number>()
  const reports = new Map<string, Report>()
  const errors = new Map<string, string[]>()

  beforeAll(async () => {
    build = mkdtempSync(path.join(tmpdir(), 'aviary-bh-'))
    FIRING.selfdel = { file: 'selfdel', content: readFileSync(compileC({ compiler: 'cc', source: SELF_DELETING, flags: ['-O2'], out: path.join(build, 'selfdel') })) }
    ;({ guest, h } = await startNetnsAnalysisNode({ index: 25, prefix: 'avbh' }))
    FIRING['ip-only']!.content = `#!/bin/sh\ncurl -s -o /dev/null http://${guest.internetIp}/by-address\n`
    for (const run of LINUX_CORPUS) ids.set(run.name, await submitFile(h, run.file, run.content, { timeout: '30', ...run.fields }))
    for (const [name, run] of Object.entries(FIRING)) ids.set(name, await submitFile(h, run.file, run.content, { timeout: '30' }))
    for (const [name, id] of ids) {
      expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 240_000), name).toBe('reported')
      const report = (await h.json<Report>(`/tasks/report/${id}`)).body
      reports.set(name, report)
      errors.set(name, (await h.json<{ task: { errors: string[] } }>(`/tasks/view/${id}`)).body.task.errors)
      if (LINUX_CORPUS.some((r) => r.name === name)) keepFixture(name, report as unknown as Record<string, unknown>)
    }
  }, 1_200_000)

  afterAll(async () => {
    await h?.stop()
    await guest?.close()
    if (build) rmSync(build, { recursive: true, force: true })
  })

  const sig = (run: string, name: string): Report['signatures'][number] | undefined => reports.get(run)?.signatures.find((s) => s.name === name)

  it('every report fits the schema', () => {
    for (const [name, r] of reports) expect({ name, problems: schemaProblems(r) }).toEqual({ name, problems: [] })
  })

  describe('the benign corpus', () => {
    for (const run of LINUX_CORPUS) {
      it(`${run.name}: ${run.what}: no signature, score 0, no error`, () => {
        const r = reports.get(run.name)!
        expect(r.signatures.map((s) => ({ name: s.name, marks: s.marks }))).toEqual([])
        expect(r.info.score).toBe(0)
        expect(errors.get(run.name)).toEqual([])
        expect(r.debug.errors).toEqual([])
      })
    }

    it('the run still going at the timeout ends inside an open call: no error, and no word of a cap', () => {
      const log = readFileSync(path.join(h.dataDir, 'storage/analyses', String(ids.get('long-running')), 'logs/strace.log'), 'latin1')
      expect(log.endsWith('\n')).toBe(false)
      // Two calls are open at the end: the shell's wait4 for sleep, and sleep's clock_nanosleep.
      // Which of them strace wrote last depends on scheduling; the other then shows as unfinished.
      const last = log.slice(log.lastIndexOf('\n') + 1)
      expect(last).toMatch(/^\d+ +[0-9.]+ (clock_nanosleep|wait4)\(/)
      const open = (call: string): boolean =>
        last.includes(` ${call}(`) || new RegExp(`^\\d+ +[0-9.]+ ${call}\\(.*<unfinished \\.\\.\\.>$`, 'm').test(log)
      expect({ nanosleep: open('clock_nanosleep'), wait4: open('wait4') }).toEqual({ nanosleep: true, wait4: true })
      expect(log).not.toMatch(/<\.\.\. clock_nanosleep resumed>/)
      expect(errors.get('long-running')).toEqual([])
    })

    it('the runs did what they are for (the tools really ran)', () => {
      const names = (run: string): string[] => reports.get(run)!.behavior.processes.map((p) => p.process_name)
      expect(names('tar')).toEqual(expect.arrayContaining(['tar', 'sh', 'gzip']))
      expect(names('make')).toEqual(expect.arrayContaining(['make', 'sh', 'cc']))
      expect(names('cc')).toEqual(expect.arrayContaining(['cc', 'as']))
      expect(names('gzip')).toEqual(expect.arrayContaining(['zgrep', 'gzip']))
      expect(names('ssh-keygen')).toContain('ssh-keygen')
      expect(guest.http.requests.filter((r) => r.host === WEB_HOST).map((r) => r.ua)).toEqual(expect.arrayContaining([expect.stringMatching(/^curl\//), expect.stringMatching(/^Wget\//)]))
    })

    it('connects_host holds the host names the DNS answers gave, never addresses', () => {
      for (const run of ['curl', 'wget']) {
        const s = reports.get(run)!.behavior.summary
        expect(s.connects_ip).toEqual([guest.internetIp])
        expect(s.connects_host).toEqual([WEB_HOST])
      }
      const s = reports.get('ip-only')!.behavior.summary
      expect(s.connects_ip).toEqual([guest.internetIp])
      expect(s.connects_host).toBeUndefined()
    })
  })

  describe('what the corpus\' silence must not cost', () => {
    it('/etc/shadow read through a symlink: reads_credentials names /etc/shadow (T1003.008)', () => {
      const s = sig('shadow-link', 'reads_credentials')
      expect(s?.marks.map((m) => m.ioc)).toEqual(['/etc/shadow'])
      expect(Object.keys(s!.ttp)).toEqual(['T1003.008'])
    })

    it('a self-deleting ELF: its own path without the kernel\'s " (deleted)", deletes_self fires, runs_from_temp does not', () => {
      const r = reports.get('selfdel')!
      const self = r.behavior.processes.find((p) => p.process_name === 'selfdel')
      expect(self?.process_path).toBe('/tmp/selfdel')
      expect(r.behavior.processes.some((p) => p.process_path.endsWith(' (deleted)'))).toBe(false)
      expect(sig('selfdel', 'deletes_self')?.marks.map((m) => m.ioc)).toEqual(['/tmp/selfdel'])
      expect(sig('selfdel', 'runs_from_temp')).toBeUndefined()
    })

    it('a shell handed its commands through another program (timeout) fires starts_shell, as Unix Shell', () => {
      const s = sig('handed-over', 'starts_shell')
      expect(s?.marks).toEqual([expect.objectContaining({ process_name: 'sh', why: 'commands handed over by timeout' })])
      expect(Object.keys(s!.ttp).sort()).toEqual(['T1059', 'T1059.004'])
    })

    it('a raw-IP fetch is still suspicious_http', () => {
      expect(sig('ip-only', 'suspicious_http')?.marks.map((m) => m.ioc)).toEqual([`GET http://${guest.internetIp}/by-address`])
    })

    it('a sample whose interpreter is missing says which, as shells do', () => {
      expect(errors.get('bad-interpreter')).toEqual(['the analyzer reported failed: the sample did not start: bad interpreter: /nonexistent/interp: No such file or directory (ENOENT)'])
    })
  })
})
