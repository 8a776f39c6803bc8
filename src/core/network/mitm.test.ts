// The task's proxy with real parts: Debian's mitmdump in reverse mode in front of a local HTTPS
// server, TLS clients that trust only the certificate a guest would get, and real processes
// killed with SIGKILL. Two proxies started together on a fresh data folder sign with one CA; a
// proxy dies with the process that started it; a service's start ends the proxies a killed one
// left, and only those.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { endLeftoverProxies, Mitm } from './mitm'
import { readMitmFlows } from '../processing/network/mitm-flows'
import { createServer as createTcpServer } from 'node:net'
import { connect as tlsConnect } from 'node:tls'

const work = mkdtempSync(path.join(tmpdir(), 'aviary-mitm-'))
let upstream: Server
let upstreamPort = 0
const started: ChildProcess[] = []

beforeAll(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(work, 'up.key'), '-out', path.join(work, 'up.crt'),
    '-days', '2', '-subj', '/CN=upstream.example'], { stdio: 'ignore' })
  upstream = createServer({ key: readFileSync(path.join(work, 'up.key')), cert: readFileSync(path.join(work, 'up.crt')) }, (req, res) => {
    res.end(`upstream saw ${req.headers.host} ${req.url}`)
  })
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()))
  upstreamPort = (upstream.address() as { port: number }).port
})

afterAll(async () => {
  for (const c of started) { try { c.kill('SIGKILL') } catch { /* gone */ } }
  await new Promise((r) => upstream.close(r))
  rmSync(work, { recursive: true, force: true })
})

const alive = (pid: number): boolean => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))

async function gone(pid: number, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (!alive(pid)) return true
    await new Promise((r) => setTimeout(r, 50))
  }
  return false
}

/** An HTTPS GET through the proxy that trusts nothing but `ca`: the answer, and who issued the certificate it was shown. */
function getThrough(port: number, ca: string): Promise<{ body: string; issuer: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/page', servername: 'site.example', headers: { host: 'site.example' }, ca: readFileSync(ca), timeout: 10_000 }, (res) => {
      const issuer = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().issuer
      let body = ''
      res.on('data', (b: Buffer) => { body += b.toString() })
      res.on('end', () => resolve({ body, issuer: `O=${issuer.O}, CN=${issuer.CN}` }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('the task\'s proxy', () => {
  it('two proxies started together on a fresh data folder both sign with the CA their guests get', async () => {
    const confdir = path.join(work, 'fresh-data', 'mitm')
    const proxies = [1, 2].map((i) => {
      const analysisDir = path.join(work, `task${i}`)
      mkdirSync(analysisDir)
      return new Mitm({ mitmdump: 'mitmdump', ip: '127.0.0.1', confdir, analysisDir, mode: `reverse:https://127.0.0.1:${upstreamPort}` })
    })
    try {
      await Promise.all(proxies.map((p) => p.start()))
      expect(proxies[0]!.caCert).toBe(proxies[1]!.caCert)
      expect(readdirSync(path.join(confdir, 'pids'))).toHaveLength(2)
      for (const p of proxies) {
        const got = await getThrough(p.port, p.caCert!)
        expect(got.body).toBe('upstream saw site.example /page')
        expect(got.issuer).not.toMatch(/mitm|aviary/i)
        expect(got.issuer).toMatch(/CN=Root CA [0-9A-F]{4}$/)
      }
    } finally {
      await Promise.all(proxies.map((p) => p.stop()))
    }
    expect(readdirSync(path.join(confdir, 'pids'))).toEqual([])
  }, 60_000)

  it('records a failed handshake as what it saw: which side ended it, and the TLS alert or error', async () => {
    const confdir = path.join(work, 'fail-data', 'mitm')
    // An "upstream" that answers in plain text, not TLS.
    const plain = createTcpServer((s) => { s.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n') })
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', () => r()))
    const plainPort = (plain.address() as { port: number }).port
    const dirs = ['refused', 'plain'].map((n) => { const d = path.join(work, `fail-${n}`); mkdirSync(d); return d })
    const toTls = new Mitm({ mitmdump: 'mitmdump', ip: '127.0.0.1', confdir, analysisDir: dirs[0]!, mode: `reverse:https://127.0.0.1:${upstreamPort}` })
    const toPlain = new Mitm({ mitmdump: 'mitmdump', ip: '127.0.0.1', confdir, analysisDir: dirs[1]!,
      mode: `reverse:https://127.0.0.1:${plainPort}` })
    try {
      await Promise.all([toTls.start(), toPlain.start()])
      // A client that trusts another CA, as a pinning sample does: OpenSSL aborts with an alert.
      // (Not spawnSync: the upstream answers from this process.)
      const client = spawn('openssl', ['s_client', '-connect', `127.0.0.1:${toTls.port}`, '-servername', 'pinned.example', '-verify_return_error',
        '-CAfile', path.join(work, 'up.crt')], { stdio: ['ignore', 'ignore', 'ignore'] })
      started.push(client)
      const killer = setTimeout(() => client.kill('SIGKILL'), 15_000)
      expect(await new Promise((r) => client.once('exit', r))).toBe(1)
      clearTimeout(killer)
      // A client that trusts the proxy, whose upstream does not speak TLS.
      await new Promise<void>((resolve) => {
        const s = tlsConnect({ host: '127.0.0.1', port: toPlain.port, servername: 'plain.example', ca: readFileSync(toPlain.caCert!) }, () => s.end('GET / HTTP/1.1\r\nHost: plain.example\r\n\r\n'))
        // Whatever the proxy answers (it finishes the guest's handshake anyway), one answer is enough.
        s.on('data', () => s.destroy())
        s.setTimeout(10_000, () => s.destroy())
        s.on('error', () => resolve())
        s.on('close', () => resolve())
      })
    } finally {
      await Promise.all([toTls.stop(), toPlain.stop()])
      plain.close()
    }
    const refused = (await readMitmFlows(dirs[0]!)).mitm
    expect(refused).toEqual([expect.stringMatching(/^the guest \(127\.0\.0\.1:\d+\) refused the proxy's certificate for pinned\.example \(TLS alert: unknown ca\)$/)])
    const upstream = (await readMitmFlows(dirs[1]!)).mitm
    // In reverse mode (the inetsim route) the proxy opens the upstream's TLS before the guest names
    // a server, so the line names the upstream; once for the handshake, once for the request.
    expect(upstream).toEqual([`the upstream (127.0.0.1:${plainPort}) does not speak TLS (for 127.0.0.1) (2 times)`])
  }, 60_000)

  it('dies with the process that started it, even by kill -9', async () => {
    const confdir = path.join(work, 'orphan-data', 'mitm')
    const analysisDir = path.join(work, 'orphan-task')
    mkdirSync(analysisDir)
    const script = path.join(work, 'start-proxy.mts')
    writeFileSync(script, `import { Mitm } from ${JSON.stringify(path.resolve('src/core/network/mitm.ts'))}
const m = new Mitm({ mitmdump: 'mitmdump', ip: '127.0.0.1', confdir: ${JSON.stringify(confdir)}, analysisDir: ${JSON.stringify(analysisDir)}, mode: 'reverse:https://127.0.0.1:${upstreamPort}' })
await m.start()
console.log('listening ' + m.port)
setInterval(() => undefined, 1000)
`)
    const parent = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    started.push(parent)
    await new Promise<void>((resolve, reject) => {
      parent.stdout!.on('data', (b: Buffer) => { if (b.toString().includes('listening')) resolve() })
      parent.once('exit', (code) => reject(new Error(`the parent exited (${code})`)))
    })
    const [pid] = readdirSync(path.join(confdir, 'pids')).map(Number)
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).toContain(`confdir=${confdir}`)
    parent.kill('SIGKILL')
    const died = await gone(pid!)
    if (!died) process.kill(pid!, 'SIGKILL')
    expect(died).toBe(true)
  }, 60_000)

  it('a service\'s start ends the proxies a killed one left on its data folder, and nothing else', async () => {
    const confdir = path.join(work, 'left-data', 'mitm')
    const pids = path.join(confdir, 'pids')
    mkdirSync(pids, { recursive: true })
    // A proxy as a service without setpriv would have left it: not tied to any parent's death.
    const left = spawn('mitmdump', ['--mode', `reverse:https://127.0.0.1:${upstreamPort}`, '--listen-host', '127.0.0.1', '--listen-port', '0',
      '--set', `confdir=${confdir}`], { stdio: 'ignore', detached: true })
    // A pid the system has given to another program since: never killed.
    const other = spawn('sleep', ['60'], { stdio: 'ignore', detached: true })
    // A proxy of another data folder: never killed either.
    const neighbour = spawn('mitmdump', ['--mode', `reverse:https://127.0.0.1:${upstreamPort}`, '--listen-host', '127.0.0.1', '--listen-port', '0',
      '--set', `confdir=${path.join(work, 'neighbour', 'mitm')}`], { stdio: 'ignore', detached: true })
    started.push(left, other, neighbour)
    await new Promise((r) => setTimeout(r, 500))
    for (const c of [left, other, neighbour]) writeFileSync(path.join(pids, String(c.pid)), 'task\n')
    writeFileSync(path.join(pids, '4194305'), 'task\n') // beyond pid_max: no such process
    const said = endLeftoverProxies(confdir)
    expect(said).toEqual([`ended mitmdump ${left.pid}, left running by an earlier service`])
    expect(await gone(left.pid!)).toBe(true)
    expect(alive(other.pid!)).toBe(true)
    expect(alive(neighbour.pid!)).toBe(true)
    expect(readdirSync(pids)).toEqual([])
    expect(endLeftoverProxies(path.join(work, 'no-such-data', 'mitm'))).toEqual([])
  }, 30_000)
})
