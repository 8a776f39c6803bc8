// GuestSession against recordings of the real agents (test/fixtures/agents/cuckoo-2.0.7.json,
// capev2.json, made by guest-session.live.test.ts with AVIARY_RECORD_AGENTS=1): a replay server
// answers each request with the agent's recorded bytes, and the test checks that GuestSession
// sent the recorded request sequence (paths, fields, uploaded files) and understood the answers.
// Always runs: no network namespace, no Python, no GitHub.
import { afterEach, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { GuestSession } from './guest-session'
import { ReplayAgent } from '../../../test/fixtures/agents/replay'
import { FIXTURES, fileSpec, newRun, urlSpec, type Run } from '../../../test/fixtures/agents/specs'
import type { Recording } from '../../../test/fixtures/agents/wire'

const RECORDINGS = [
  { file: 'cuckoo-2.0.7.json', kind: 'cuckoo', version: '0.10' },
  { file: 'capev2.json', kind: 'cape', version: '0.22' }
]

describe('GuestSession replayed against recorded agents', () => {
  let replay: ReplayAgent | null = null
  let run: Run | null = null
  afterEach(async () => {
    await replay?.close()
    run?.cleanup()
    replay = null
    run = null
  })

  for (const r of RECORDINGS) {
    it(`${r.file}: the same requests in the same order, and the agent's answers understood`, async () => {
      const rec = JSON.parse(readFileSync(path.join(FIXTURES, r.file), 'utf8')) as Recording
      // The host asks GET / once per analysis (waitAvailable's answer identifies the agent); the
      // recordings were made when it asked twice, and both answers are the same bytes.
      rec.exchanges = rec.exchanges.filter((e, i) => !(e.request.path === '/' && rec.exchanges[i - 1]?.request.path === '/'))
      run = newRun()
      replay = new ReplayAgent(rec, run.values)
      const port = await replay.listen()
      const logs: string[] = []
      const session = new GuestSession({ ip: '127.0.0.1', port, log: (m) => logs.push(m), pollMs: 10 })

      const info = await session.start(fileSpec(run, 41), undefined, await session.waitAvailable({ timeoutMs: 5000 }))
      expect(info).toMatchObject({ kind: r.kind, version: r.version })
      expect(await session.waitForCompletion({ timeoutMs: 5000 })).toEqual({ outcome: 'complete', description: 'marker written' })

      // The second task finds the agent pinned and still 'complete' (a physical machine's agent).
      await session.start(urlSpec(run, 42), undefined, await session.waitAvailable({ timeoutMs: 5000 }))
      expect(logs).toContain('the agent was already pinned (to this host, if the next requests succeed)')
      expect(logs.some((l) => l.includes('resetting it to \'init\''))).toBe(true)
      expect(await session.waitForCompletion({ timeoutMs: 5000 })).toEqual({ outcome: 'complete', description: 'node analyzer' })

      expect(replay.received).toEqual(rec.exchanges.map((e) => e.request))
      for (const q of replay.received.filter((x) => x.method === 'POST')) {
        expect(q.hasContentLength, `${q.path} has a Content-Length`).toBe(true)
        expect(q.chunked).toBe(false)
      }
    })
  }
})
