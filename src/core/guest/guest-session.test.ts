// GuestSession's edges, over real sockets: the old XML-RPC agent (Python's own SimpleXMLRPCServer,
// which is what Cuckoo 1.x's agent is), something that is not an agent, an agent that fails a
// step or drops us (pinned to another IP), the status poll's outcomes, time limit and abort, and
// a large sample streamed with an exact Content-Length. Agent answers are in the recorded wire
// format of Cuckoo's agent (HTTP/1.0, JSON without Content-Length; see test/fixtures/agents).
import { afterEach, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { GuestSession, probeAgent } from './guest-session'
import { guestDirname, guestJoin, guestLayout } from './guest-paths'
import { ReplayAgent } from '../../../test/fixtures/agents/replay'
import { FIXTURES, fileSpec, newRun, type Run } from '../../../test/fixtures/agents/specs'
import type { Exchange, Recording } from '../../../test/fixtures/agents/wire'

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

const cuckoo = JSON.parse(readFileSync(path.join(FIXTURES, 'cuckoo-2.0.7.json'), 'utf8')) as Recording

function answer(status: number, body: Record<string, unknown> | null): string {
  const reason = status === 200 ? 'OK' : status === 500 ? 'Internal Server Error' : 'Error'
  return `HTTP/1.0 ${status} ${reason}\r\nServer: Cuckoo Agent Python/2.7.18\r\n\r\n${body ? JSON.stringify(body) : ''}`
}

function statusAnswer(status: string | null, description: string | null = null): Exchange {
  return { request: cuckoo.exchanges[0]!.request, response: answer(200, { status, message: 'Analysis status', description }) }
}

async function replay(exchanges: Exchange[], run?: Run): Promise<{ agent: ReplayAgent; session: GuestSession; logs: string[] }> {
  const agent = new ReplayAgent({ ...cuckoo, exchanges }, run?.values ?? {})
  const port = await agent.listen()
  cleanups.push(() => agent.close())
  const logs: string[] = []
  return { agent, session: new GuestSession({ ip: '127.0.0.1', port, log: (m) => logs.push(m), pollMs: 10 }), logs }
}

/** The recorded first analysis of Cuckoo's agent, up to and including `path`, with `last` as that step's answer. */
function cuckooUntil(step: string, last: string): Exchange[] {
  const i = cuckoo.exchanges.findIndex((e, n) => n > 0 && e.request.path === step)
  return [...cuckoo.exchanges.slice(1, i), { request: cuckoo.exchanges[i]!.request, response: last }]
}

describe('GuestSession: agents it must refuse or report clearly', () => {
  it('refuses the old XML-RPC agent (GET / → 501) with a message that says what to install', async () => {
    const py: ChildProcess = spawn('python3', ['-c',
      'from xmlrpc.server import SimpleXMLRPCServer as S\ns=S(("127.0.0.1",0),logRequests=False)\nprint(s.server_address[1],flush=True)\ns.serve_forever()'],
    { stdio: ['ignore', 'pipe', 'ignore'] })
    cleanups.push(() => { py.kill('SIGKILL') })
    const port = await new Promise<number>((resolve, reject) => {
      py.stdout!.once('data', (c: Buffer) => resolve(Number(c.toString().trim())))
      py.once('error', reject)
    })
    await expect(probeAgent('127.0.0.1', port, 5000)).rejects.toThrow(/old XML-RPC agent.*install the agent\.py of Cuckoo 2\.0\.x/)
    const run = newRun()
    cleanups.push(() => run.cleanup())
    const s = new GuestSession({ ip: '127.0.0.1', port, log: () => undefined })
    // It does answer HTTP, and that answer refuses it at once (no waiting for another answer).
    const t0 = Date.now()
    await expect(s.waitAvailable({ timeoutMs: 30_000 })).rejects.toThrow(/old XML-RPC agent/)
    expect(Date.now() - t0).toBeLessThan(10_000)
    await expect(s.start(fileSpec(run, 1))).rejects.toThrow(/old XML-RPC agent/)
  })

  it('refuses a web server that is not an agent', async () => {
    const srv = http.createServer((_q, r) => r.end('<html>hello</html>'))
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise<void>((resolve) => srv.close(() => resolve())))
    await expect(probeAgent('127.0.0.1', (srv.address() as AddressInfo).port, 5000))
      .rejects.toThrow(/not a Cuckoo-compatible agent \(GET \/ gave HTTP 200, not JSON\)/)
  })

  it('names the failed step and the agent\'s own reason (last traceback line), not the stack', async () => {
    const run = newRun()
    cleanups.push(() => run.cleanup())
    const { session } = await replay(cuckooUntil('/extract', answer(500, {
      message: 'Error extracting zip file', error_code: 500,
      traceback: 'Traceback (most recent call last):\n  File "agent.py", line 300, in do_extract\nBadZipfile: File is not a zip file\n'
    })), run)
    const err = await session.start(fileSpec(run, 1)).then(() => new Error('no error'), (e: unknown) => e as Error)
    expect(err.message).toMatch(/^uploading the analyzer: the agent refused POST \/extract: HTTP 500: Error extracting zip file \(BadZipfile: File is not a zip file\)$/)
  })

  it('draws another analyzer folder name when the first one exists in the guest', async () => {
    const run = newRun()
    cleanups.push(() => run.cleanup())
    const i = cuckoo.exchanges.findIndex((e, n) => n > 0 && e.request.path === '/mkdir')
    const exists: Exchange = { request: cuckoo.exchanges[i]!.request, response: answer(500, {
      message: 'Error creating directory', error_code: 500, traceback: "OSError: [Errno 17] File exists: '/tmp/abcde'\n"
    }) }
    const upTo = cuckoo.exchanges.findIndex((e) => e.request.path === '/execpy')
    const { agent, session } = await replay([...cuckoo.exchanges.slice(1, i), exists, ...cuckoo.exchanges.slice(i, upTo + 1)], run)
    await session.start(fileSpec(run, 41))
    const mkdirs = agent.received.filter((q) => q.path === '/mkdir').map((q) => q.fields.dirpath)
    const extract = agent.received.find((q) => q.path === '/extract')
    expect(mkdirs).toHaveLength(2)
    expect(mkdirs[1]).toMatch(/^\/tmp\/[a-z]{5,10}$/)
    expect(extract?.fields.dirpath).toBe(mkdirs[1])
  })

  it('refuses to run beside a leftover: an earlier attempt cut off on a never-reverted guest, Cuckoo\'s agent and analyzer', async () => {
    const run = newRun()
    cleanups.push(() => run.cleanup())
    const { agent, session } = await replay(cuckooUntil('/status', cuckoo.exchanges.find((e) => e.request.path === '/status')!.response), run)
    await expect(session.start({ ...fileSpec(run, 1), earlierRunMayLive: true }))
      .rejects.toThrow(/earlier attempt was cut off on a machine that is never reverted.*cannot end it \(no \/reset\).*reschedule the task/)
    // Nothing was created in the guest.
    expect(agent.received.map((q) => q.path)).toEqual(['/', '/pinning'])
  })

  it('says the agent may be pinned to another IP when it closes without answering', async () => {
    const run = newRun()
    cleanups.push(() => run.cleanup())
    const { session } = await replay(cuckooUntil('/environ', ''), run)
    await expect(session.start(fileSpec(run, 1))).rejects.toThrow(/reading the guest's environment \(GET \/environ on 127\.0\.0\.1:\d+\): .*pinned to another host's IP/)
  })

  it('streams a large sample with an exact Content-Length, byte for byte', async () => {
    const run = newRun()
    cleanups.push(() => run.cleanup())
    const big = Buffer.alloc(24 * 1024 * 1024)
    for (let i = 0; i < big.length; i += 4096) big.writeUInt32LE(i, i)
    writeFileSync(run.samplePath, big)
    const upTo = cuckoo.exchanges.findIndex((e) => e.request.path === '/execpy')
    const { agent, session } = await replay(cuckoo.exchanges.slice(1, upTo + 1), run)
    await session.start(fileSpec(run, 41))
    const store = agent.received.find((q) => q.fields.filepath === `/tmp/aviary-gs-<run>.exe`)
    expect(store?.hasContentLength).toBe(true)
    expect(store?.chunked).toBe(false)
    expect(store?.files[0]).toEqual({ name: 'file', filename: 'sample.bin', size: big.length, sha256: createHash('sha256').update(big).digest('hex') })
  })
})

describe('GuestSession: how the analyzer is started', () => {
  it('runs analyzer.cjs with POST /execnode when the agent lists "execnode" (Aviary\'s agent)', async () => {
    const run = newRun()
    cleanups.push(() => run.cleanup())
    const index: Exchange = {
      request: cuckoo.exchanges[0]!.request,
      response: answer(200, { message: 'Aviary Agent!', version: '1.0.0', features: ['execpy', 'execnode', 'largefile'] })
    }
    const upTo = cuckoo.exchanges.findIndex((e) => e.request.path === '/execpy')
    // Cuckoo's recorded answers for the rest, minus /pinning (not a listed feature).
    const rest = cuckoo.exchanges.slice(2, upTo + 1).filter((e) => e.request.path !== '/pinning')
    const { agent, session } = await replay([index, ...rest], run)
    const info = await session.start({ ...fileSpec(run, 5), analyzer: { dir: path.join(FIXTURES, 'analyzer-cjs'), monitor: null } })
    expect(info).toEqual({ kind: 'aviary', version: '1.0.0', features: ['execpy', 'execnode', 'largefile'] })
    expect(agent.received.map((q) => `${q.method} ${q.path}`)).toEqual([
      'GET /', 'GET /status', 'GET /environ', 'POST /mkdir', 'POST /extract', 'POST /store', 'POST /store', 'POST /execnode'
    ])
    expect(agent.received.at(-1)?.fields).toEqual({ filepath: '<analyzer>/analyzer.cjs', async: 'yes', cwd: '<analyzer>' })
  })
})

describe('GuestSession.waitForCompletion', () => {
  it('returns the analyzer\'s outcome and calls onRunning once, at the first answered non-final status', async () => {
    for (const [final, outcome] of [['complete', 'complete'], ['exception', 'exception'], ['failed', 'failed']] as const) {
      // a failed poll (no answer) does not count as running; the first answer does
      const dropped: Exchange = { request: cuckoo.exchanges[0]!.request, response: '' }
      const { agent, session } = await replay([dropped, statusAnswer('init'), statusAnswer(null), statusAnswer('running'), statusAnswer(final, 'why')])
      const seen: number[] = [] // how many polls the agent had had when onRunning was called
      expect(await session.waitForCompletion({ timeoutMs: 5000, onRunning: () => seen.push(agent.received.length) })).toEqual({ outcome, description: 'why' })
      expect(seen).toEqual([2])
      expect(agent.received).toHaveLength(5)
    }
  })

  it('retries failed polls and gives up with "timeout" after timeoutMs', async () => {
    const dropped: Exchange = { request: cuckoo.exchanges[0]!.request, response: '' }
    const { session, logs } = await replay([statusAnswer(null), ...Array.from({ length: 100 }, () => dropped)])
    expect(await session.waitForCompletion({ timeoutMs: 300 })).toEqual({ outcome: 'timeout', description: null })
    expect(logs.filter((l) => l.startsWith('status poll failed, retrying'))).toHaveLength(1) // once per distinct error
  })

  it('returns "aborted" when the signal aborts', async () => {
    const { session } = await replay(Array.from({ length: 500 }, () => statusAnswer(null)))
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 100)
    expect(await session.waitForCompletion({ timeoutMs: 60_000, signal: ac.signal })).toEqual({ outcome: 'aborted', description: null })
  })
})

describe('GuestSession.waitAvailable', () => {
  it('rejects with an AbortError when the signal aborts, and with the reason after the time limit', async () => {
    const s = new GuestSession({ ip: '127.0.0.1', port: 1, log: () => undefined, pollMs: 20 })
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 100)
    const err = await s.waitAvailable({ timeoutMs: 60_000, signal: ac.signal }).then(() => new Error('no error'), (e: unknown) => e as Error)
    expect(err.name).toBe('AbortError')
    await expect(s.waitAvailable({ timeoutMs: 200 })).rejects.toThrow(/no agent answered on 127\.0\.0\.1:1 within 0 s \(last attempt: connection refused/)
  })
})

describe('guest paths', () => {
  it('Windows: analyzer at <SYSTEMDRIVE>\\<5-10 letters>, samples in %TEMP%; elsewhere /tmp', () => {
    const w = guestLayout('windows', { SystemDrive: 'D:', TEMP: 'D:\\Users\\u\\AppData\\Local\\Temp' }, null)
    expect(w.analyzerDir).toMatch(/^D:\\[a-z]{5,10}$/)
    expect(w.tempDir).toBe('D:\\Users\\u\\AppData\\Local\\Temp')
    expect(guestJoin('windows', w.analyzerDir, 'analyzer.py')).toMatch(/^D:\\[a-z]{5,10}\\analyzer\.py$/)
    expect(guestLayout('windows', {}, 'cuckoo').analyzerDir).toBe('C:\\cuckoo')
    expect(guestLayout('windows', {}, '..\\evil').analyzerDir).toMatch(/^C:\\[a-z]{5,10}$/) // a path is not a name
    const l = guestLayout('linux', { TEMP: '/var/tmp' }, null)
    expect(l.analyzerDir).toMatch(/^\/tmp\/[a-z]{5,10}$/)
    expect(l.tempDir).toBe('/tmp')
    expect(guestDirname('C:\\Users\\u\\x.txt')).toBe('C:\\Users\\u')
    expect(guestDirname('C:\\x.txt')).toBeNull()
    expect(guestDirname('/tmp/a/b')).toBe('/tmp/a')
  })
})
