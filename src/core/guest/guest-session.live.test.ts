// GuestSession against the REAL agents Cuckoo guests run: Cuckoo 2.0.7's agent.py (Python 2.7)
// and CAPEv2's agent.py (Python 3.11), each in the network namespace `avgs` behind a veth pair
// (host 10.206.0.1 ↔ guest 10.206.0.2), driven through a recording proxy. Their code comes
// from GitHub, which CI cannot reach, so these tests run only when the files are given:
//   AVIARY_CUCKOO_AGENT=<file>  git -C <cuckoo clone> show 2.0.7:cuckoo/data/agent/agent.py > <file>
//   AVIARY_CAPE_AGENT=<file>    git -C <CAPEv2 clone> show HEAD:agent/agent.py > <file>
// (interpreters: AVIARY_PYTHON2, AVIARY_PYTHON3; defaults are the pyenv ones of the dev box).
// With AVIARY_RECORD_AGENTS=1 the exchanges are saved to test/fixtures/agents/*.json, which
// the replay test (guest-session.replay.test.ts) plays back on every run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { GuestSession, probeAgent } from './guest-session'
import { analysisConf } from './analysis-conf'
import { GUEST_IP, setupNetns, startAgent, teardownNetns, type LiveAgent } from '../../../test/fixtures/agents/live-agent'
import { RecordingProxy } from '../../../test/fixtures/agents/recorder'
import { FIXTURES, SAMPLE, fileSpec, newRun, pushedPath, urlSpec, type Run } from '../../../test/fixtures/agents/specs'
import type { Recording } from '../../../test/fixtures/agents/wire'

const PY2 = process.env.AVIARY_PYTHON2 ?? path.join(homedir(), '.pyenv/versions/2.7.18/bin/python')
const PY3 = process.env.AVIARY_PYTHON3 ?? path.join(homedir(), '.pyenv/versions/3.11.7/bin/python3.11')
const RECORD = process.env.AVIARY_RECORD_AGENTS === '1'

const AGENTS = [
  {
    name: 'Cuckoo 2.0.7 agent.py', env: 'AVIARY_CUCKOO_AGENT', file: process.env.AVIARY_CUCKOO_AGENT, python: PY2,
    kind: 'cuckoo', version: '0.10', port: 8000, recording: 'cuckoo-2.0.7.json',
    source: 'github:cuckoosandbox/cuckoo tag 2.0.7, cuckoo/data/agent/agent.py, run with Python 2.7.18'
  },
  {
    name: 'CAPEv2 agent.py', env: 'AVIARY_CAPE_AGENT', file: process.env.AVIARY_CAPE_AGENT, python: PY3,
    // Its own port: the first agent's TIME_WAIT sockets on 8000 make CAPE's bind() fail.
    kind: 'cape', version: '0.22', port: 8010, recording: 'capev2.json',
    source: 'github:kevoreilly/CAPEv2 4da22e64a657 (2026-08-22), agent/agent.py, run with Python 3.11.7'
  }
]
const have = (file: string | undefined): boolean => file !== undefined && existsSync(file)
const anyAgent = AGENTS.some((a) => have(a.file))

function readMarker(out: string, id: number): { here: string; cwd: string; conf: string; sample_sha256: string | null; files: string[]; node?: boolean } {
  return JSON.parse(readFileSync(path.join(out, `marker-${id}.json`), 'utf8')) as ReturnType<typeof readMarker>
}

describe.sequential('GuestSession with real agents in network namespace avgs', () => {
  beforeAll(() => { if (anyAgent) setupNetns() })
  afterAll(() => { if (anyAgent) teardownNetns() })

  for (const a of AGENTS) {
    const ok = have(a.file)
    describe.sequential(a.name, () => {
      let agent: LiveAgent | null = null
      let proxy: RecordingProxy | null = null
      let out = ''
      let port = 0
      const runs: Run[] = []
      const guestDirs = new Set<string>()
      const logs: string[] = []
      const log = (msg: string): void => {
        logs.push(msg)
        const m = / to (\/tmp\/[a-z]{5,10})$/.exec(msg)
        if (m?.[1]) guestDirs.add(m[1])
      }

      beforeAll(async () => {
        if (!ok) return
        out = mkdtempSync(path.join(tmpdir(), 'aviary-gs-out-'))
        agent = await startAgent(a.python, a.file!, a.port, out, a.kind === 'cape')
        proxy = new RecordingProxy({ host: GUEST_IP, port: a.port })
        port = await proxy.listen()
      })
      afterAll(async () => {
        await proxy?.close()
        await agent?.stop()
        for (const r of runs) r.cleanup()
        for (const d of guestDirs) rmSync(d, { recursive: true, force: true })
        if (out) rmSync(out, { recursive: true, force: true })
      })

      it.runIf(ok)(`[needs ${a.env}=<agent.py>] a file task: analyzer, analysis.conf and sample arrive, analyzer.py runs, completion is seen`, async () => {
        const run = newRun()
        runs.push(run)
        const session = new GuestSession({ ip: '127.0.0.1', port, log, pollMs: 200 })
        await session.waitAvailable({ timeoutMs: 10_000 })
        const spec = fileSpec(run, 41)
        const info = await session.start(spec)
        expect(info).toMatchObject({ kind: a.kind, version: a.version })
        expect(info.features).toContain('execpy')
        const done = await session.waitForCompletion({ timeoutMs: 20_000 })
        expect(done).toEqual({ outcome: 'complete', description: 'marker written' })

        const marker = readMarker(out, 41)
        expect(marker.cwd).toBe(marker.here) // /execpy got cwd=<analyzer folder>
        expect(marker.here).toMatch(/^\/tmp\/[a-z]{5,10}$/)
        expect(marker.files).toEqual(expect.arrayContaining(['analyzer.py', 'lib/__init__.py', 'analysis.conf']))
        expect(marker.conf).toBe(analysisConf(spec))
        expect(marker.sample_sha256).toBe(createHash('sha256').update(SAMPLE).digest('hex'))
      })

      it.runIf(ok)(`[needs ${a.env}=<agent.py>] a second task on the same agent (status kept 'complete'): reset, /execute node analyzer.cjs, completion`, async () => {
        const session = new GuestSession({ ip: '127.0.0.1', port, log, pollMs: 200 })
        let running = 0
        await session.waitAvailable({ timeoutMs: 10_000 })
        const spec = urlSpec(runs[0]!, 42)
        await session.start(spec)
        expect(readFileSync(pushedPath(runs[0]!), 'utf8')).toBe('dropped by the first run\n')
        expect(logs.some((l) => l.includes('resetting it to \'init\''))).toBe(true)
        const done = await session.waitForCompletion({ timeoutMs: 20_000, onRunning: () => running++ })
        expect(done).toEqual({ outcome: 'complete', description: 'node analyzer' })
        expect(running).toBeLessThanOrEqual(1)
        const marker = readMarker(out, 42)
        expect(marker.node).toBe(true)
        expect(marker.cwd).toBe(marker.here)
        expect(marker.conf).toBe(analysisConf(spec))
        expect(marker.conf).not.toMatch(/^id = 99$/m) // the URL's line break did not become a key

        if (RECORD) {
          const rec: Recording = {
            agent: a.name, source: a.source,
            recordedWith: `AVIARY_RECORD_AGENTS=1 ${a.env}=<agent.py> npx vitest run src/core/guest/guest-session.live.test.ts`,
            placeholders: { '<analyzer>': 'the random analyzer folder', '<tmp>': 'the test\'s temp folder', '<run>': 'the test run\'s token' },
            exchanges: proxy!.exchanges(runs[0]!.values)
          }
          writeFileSync(path.join(FIXTURES, a.recording), JSON.stringify(rec, null, 2) + '\n')
        }
      })

      it.runIf(ok)(`[needs ${a.env}=<agent.py>] probeAgent and waitAvailable straight over the veth`, async () => {
        const info = await probeAgent(GUEST_IP, a.port, 5000)
        expect(info.kind).toBe(a.kind)
        await new GuestSession({ ip: GUEST_IP, port: a.port, log }).waitAvailable({ timeoutMs: 5000 })
        await expect(new GuestSession({ ip: GUEST_IP, port: a.port + 1, log, pollMs: 100 }).waitAvailable({ timeoutMs: 800 }))
          .rejects.toThrow(/no agent answered on 10\.206\.0\.2:\d+ within 1 s \(last attempt: connection refused/)
      })
    })
  }
})
