// The status poll against a real HTTP server playing an agent: final statuses of another run are
// ignored, answers no agent gives end the wait after three in a row, silence is waited out, and a
// timeout says what the polls saw.
import { afterEach, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { PollHistory, pollUntilFinal, type PollTarget } from './status-poll'

const RUN = '1'.repeat(32)
const OLD = '2'.repeat(32)
type Answer = { body: string; status?: number } | 'stall' | 'drip'

const servers: http.Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((r) => s.close(r))
  }
})

/** An agent answering GET /status with `answers` in order, the last one for ever. */
async function agent(answers: Answer[]): Promise<{ target: PollTarget; logs: string[]; polls: () => number }> {
  let n = 0
  const srv = http.createServer((_req, res) => {
    const a = answers[Math.min(n++, answers.length - 1)]!
    if (a === 'stall') return
    if (a === 'drip') {
      res.writeHead(200)
      res.write('{')
      return
    }
    res.writeHead(a.status ?? 200, { 'content-type': 'application/json' })
    res.end(a.body)
  })
  servers.push(srv)
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const logs: string[] = []
  return {
    target: { ip: '127.0.0.1', port: (srv.address() as AddressInfo).port, pollMs: 5, log: (m) => logs.push(m), run: RUN, watch: () => undefined },
    logs,
    polls: () => n
  }
}
const status = (s: unknown, description: string | null = null): Answer => ({ body: JSON.stringify({ message: 'Analysis status', status: s, description }) })

describe('pollUntilFinal', () => {
  it('ignores a final status of another run (or untagged) and ends at this run\'s, its tag removed', async () => {
    const { target, logs } = await agent([status(null), status('complete', `[run ${OLD}] True`), status('complete', 'True'), status('complete', `[run ${RUN}] True`)])
    const stale: string[] = []
    const history = new PollHistory()
    expect(await pollUntilFinal(target, { timeoutMs: 10_000, onStale: (w) => stale.push(w) }, history)).toEqual({ outcome: 'complete', description: 'True' })
    expect(stale).toEqual([`status complete ([run ${OLD}] True)`, 'status complete (True)'])
    expect(logs.filter((l) => l.startsWith('ignored'))).toHaveLength(2)
  })

  it('takes untagged statuses when the analyzer carries no run (Cuckoo\'s)', async () => {
    const { target } = await agent([status('exception', 'Traceback...')])
    expect(await pollUntilFinal({ ...target, run: null }, { timeoutMs: 10_000 }, new PollHistory())).toEqual({ outcome: 'exception', description: 'Traceback...' })
  })

  it('ends after three answers in a row that no agent gives, naming the last', async () => {
    for (const [bad, said] of [
      [{ body: 'not json' }, /GET \/status answered 8 bytes that are not a JSON object/],
      [{ body: '', status: 302 }, /GET \/status answered HTTP 302/],
      [status(['running']), /status \["running"\], not a string/],
      [{ body: ' '.repeat(70_000) }, /longer than the 65536 bytes this route allows/]
    ] as const) {
      const { target, polls } = await agent([status(null), bad])
      const r = await pollUntilFinal(target, { timeoutMs: 10_000 }, new PollHistory())
      expect(r.outcome).toBe('misbehaved')
      expect(r.description).toMatch(said)
      expect(polls()).toBe(4)
    }
  })

  it('a misbehaving answer between good ones does not end the wait', async () => {
    const { target } = await agent([{ body: 'x' }, { body: 'x' }, status('running'), { body: 'x' }, status('complete', `[run ${RUN}] True`)])
    expect((await pollUntilFinal(target, { timeoutMs: 10_000 }, new PollHistory())).outcome).toBe('complete')
  })

  it('a timeout says what the polls saw: a flapping status, or one status kept', async () => {
    const flap = await agent([status('init'), status('running'), status(null), status('running'), status('init')].flatMap((a) => [a, a]).concat([status('running')]))
    const h1 = new PollHistory()
    expect((await pollUntilFinal(flap.target, { timeoutMs: 500 }, h1)).outcome).toBe('timeout')
    expect(h1.describe()).toMatch(/^the agent's status changed \d+ times \(… .*\) without becoming final$/)

    const steady = await agent([status('running')])
    const h2 = new PollHistory()
    expect((await pollUntilFinal(steady.target, { timeoutMs: 200 }, h2)).outcome).toBe('timeout')
    expect(h2.describe()).toBe('the agent kept answering status running')
  })

  it('a dripping answer counts as misbehaving (cut at the poll deadline)', async () => {
    const { target } = await agent(['drip'])
    const h = new PollHistory()
    // A 1 s limit instead of the service's 5 s: the same cut, three times, in 3 s instead of 15.
    const r = await pollUntilFinal({ ...target, exchangeMs: 1000 }, { timeoutMs: 30_000 }, h)
    expect(r.outcome).toBe('misbehaved')
    expect(r.description).toMatch(/still sending its answer to GET \/status: 1 bytes in 1 s/)
  }, 30_000)
})
