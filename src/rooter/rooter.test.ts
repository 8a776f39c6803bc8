// The rooter as it runs: `aviary rooter` as root in a network namespace of the test's own, fed a
// table of hostile and malformed requests over its UNIX socket. Each is refused with a reason and
// logged, and the firewall is exactly as before; a good request still works afterwards. Grants
// belong to their owner, survive a kill -9 of the rooter, lapse when not renewed, and the table
// stays when the rooter stops. Idle and trickling clients cannot keep a service from its routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const NS = 'avrooter1'
const G = '10.213.0.5'
const RS = { ip: '10.213.0.1', port: 2042 }

/** Sends raw lines on one connection; resolves with the answer lines (or what came before the close). */
function talk(socket: string, payload: string, answers: number): Promise<string[]> {
  return new Promise((resolve) => {
    const s = connect(socket)
    let buf = ''
    const done = (): void => {
      s.destroy()
      resolve(buf.split('\n').filter(Boolean))
    }
    s.setEncoding('utf8')
    s.on('data', (d: string) => {
      buf += d
      if (buf.split('\n').length - 1 >= answers) done()
    })
    s.on('error', done)
    s.on('close', done)
    s.write(payload)
  })
}

const OWNER = '0123456789abcdef0123456789abcdef'
const OTHER = 'fedcba9876543210fedcba9876543210'
const enable = (fields: Record<string, unknown>): string => JSON.stringify({ op: 'enable', owner: OWNER, guest: G, route: 'none', resultserver: RS, ...fields })
const ask = async (socket: string, req: Record<string, unknown>): Promise<{ ok: boolean; error?: string; routed?: boolean; cleared?: number }> =>
  JSON.parse((await talk(socket, JSON.stringify(req) + '\n', 1))[0] ?? '{}') as { ok: boolean; error?: string; routed?: boolean; cleared?: number }

describe('aviary rooter against hostile requests', () => {
  let dir: string
  let socket: string
  let rooter: ChildProcess
  let log = ''
  const table = async (): Promise<string> => (await run('ip', ['netns', 'exec', NS, 'nft', 'list', 'ruleset'])).stdout
  const startRooter = async (env: Record<string, string> = {}, extra: string[] = []): Promise<void> => {
    const c = spawn('ip', ['netns', 'exec', NS, process.execPath, path.resolve('bin/aviary.js'), 'rooter', '--guest-network', '10.213.0.0/24',
      '--interface', 'up0', '--socket', socket, ...extra], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } })
    rooter = c
    const from = log.length
    await new Promise<void>((resolve, reject) => {
      c.stderr!.on('data', (b: Buffer) => {
        log += b.toString()
        if (log.slice(from).includes('listening on')) resolve()
      })
      c.once('exit', (code) => reject(new Error(`the rooter exited (${code}): ${log.slice(from)}`)))
    })
  }
  const stopRooter = async (signal: NodeJS.Signals): Promise<void> => {
    const c = rooter
    if (c.exitCode !== null || c.signalCode !== null) return
    const gone = new Promise((r) => c.once('exit', r))
    c.kill(signal)
    await gone
  }

  beforeAll(async () => {
    await run('ip', ['netns', 'del', NS]).catch(() => undefined)
    await run('ip', ['netns', 'add', NS])
    await run('ip', ['-n', NS, 'link', 'add', 'br0', 'type', 'bridge'])
    await run('ip', ['-n', NS, 'addr', 'add', `${RS.ip}/24`, 'dev', 'br0'])
    await run('ip', ['-n', NS, 'link', 'set', 'br0', 'up'])
    await run('ip', ['-n', NS, 'link', 'add', 'up0', 'type', 'veth', 'peer', 'name', 'up1'])
    await run('ip', ['netns', 'exec', NS, 'sysctl', '-qw', 'net.ipv4.ip_forward=1'])
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-rooter-'))
    socket = path.join(dir, 'rooter.sock')
    await startRooter()
  }, 60_000)

  afterAll(async () => {
    rooter?.kill('SIGKILL')
    // What still runs in the namespace (an INetSim whose rooter was killed while it started, after
    // a test failed midway) goes with it, rather than living on in a namespace nobody can name.
    const left = await run('ip', ['netns', 'pids', NS]).then((r) => r.stdout.split('\n').filter(Boolean).map(Number), () => [])
    for (const pid of left) try { process.kill(pid, 'SIGKILL') } catch { /* gone */ }
    await run('ip', ['netns', 'del', NS]).catch(() => undefined)
    rmSync(dir, { recursive: true, force: true })
  })

  it('refuses every malformed or out-of-range request, logs it, and changes nothing', async () => {
    const before = await table()
    const hostile: [string, RegExp][] = [
      ['not json', /^not a JSON object$/],
      ['{}', /^unknown op/],
      ['[]', /^unknown op/],
      ['null', /^unknown op/],
      ['"enable"', /^unknown op/],
      ['{"op":"exec","command":"nft flush ruleset"}', /^unknown op/],
      ['{"op":"ping","extra":1}', /^malformed ping/],
      ['{"op":"flush"}', /^malformed flush/],
      [`{"op":"flush","owner":"${OWNER}","all":true}`, /^malformed flush/],
      ['{"op":"flush","owner":"*"}', /^malformed flush/],
      [`{"op":"flush","owner":"${OWNER.toUpperCase()}"}`, /^malformed flush/],
      ['{"op":"enable"}', /^malformed enable/],
      [enable({ owner: undefined }), /^malformed enable/],
      [enable({ owner: `${OWNER}00` }), /^malformed enable/],
      [`{"op":"disable","owner":"${OWNER}","guest":"10.213.0.5","x":1}`, /^malformed disable/],
      ['{"op":"disable","guest":"10.213.0.5"}', /^malformed disable/],
      [`{"op":"disable","owner":"${OWNER}","guest":"10.9.9.9"}`, /^guest: 10\.9\.9\.9 is not a host address of the guest networks$/],
      [`{"op":"status","owner":"${OWNER}"}`, /^malformed status/],
      [`{"op":"status","owner":"${OWNER}","guest":"8.8.8.8"}`, /^guest: 8\.8\.8\.8 is not a host address/],
      [enable({ guest: '10.214.0.5' }), /^guest: 10\.214\.0\.5 is not a host address/],
      [enable({ guest: '10.213.0.0' }), /^guest: .* not a host address/],
      [enable({ guest: '10.213.0.255' }), /^guest: .* not a host address/],
      [enable({ guest: '10.213.0.5; nft flush ruleset' }), /^malformed enable/], // longer than any address
      [enable({ guest: '10.213.0.5/24' }), /^guest: not an IPv4 address$/],
      [enable({ guest: '::1' }), /^guest: not an IPv4 address$/],
      [enable({ guest: 167837701 }), /^malformed enable/],
      [enable({ route: 'tor' }), /^malformed enable/],
      [enable({ route: 'internet' }), /^interface: not one the internet route may use \(up0\)$/],
      [enable({ route: 'internet', interface: 'eth0' }), /^interface: not one the internet route may use/],
      [enable({ route: 'internet', interface: 'up0; rm -rf /' }), /^malformed enable|^interface: not one/],
      [enable({ route: 'internet', interface: 'up0', inetsim: '10.213.0.1' }), /^internet: takes no inetsim address$/],
      [enable({ interface: 'up0' }), /^none: takes no interface/],
      [enable({ route: 'vpn', interface: 'up0' }), /^interface: not a configured VPN interface/],
      [enable({ route: 'inetsim', inetsim: '10.213.0.1' }), /^inetsim: this rooter runs no INetSim$/],
      [enable({ resultserver: { ip: '10.213.0.1', port: 0 } }), /^malformed enable/],
      [enable({ resultserver: { ip: '10.213.0.1', port: 70000 } }), /^malformed enable/],
      [enable({ resultserver: { ip: '10.213.0.1', port: '2042' } }), /^malformed enable/],
      [enable({ resultserver: { ip: '192.168.1.1', port: 2042 } }), /^resultserver\.ip: 192\.168\.1\.1 is not a host address/],
      [enable({ resultserver: { ip: G, port: 2042 } }), /^resultserver\.ip: the guest itself$/],
      [enable({ resultserver: { ip: '10.213.0.1', port: 2042, evil: true } }), /^malformed enable/],
      [enable({ mitm: { ip: '10.213.0.1', port: 8081, ports: [443] } }), /^mitm: the none route has no traffic to decrypt$/],
      [enable({ route: 'internet', interface: 'up0', mitm: { ip: '8.8.8.8', port: 8081, ports: [443] } }), /^mitm\.ip: 8\.8\.8\.8 is not a host address/],
      [enable({ route: 'internet', interface: 'up0', mitm: { ip: '10.213.0.1', port: 8081, ports: Array.from({ length: 17 }, (_, i) => i + 1) } }), /^malformed enable/],
      [`{"op":"enable","owner":"${OWNER}","guest":"10.213.0.5","route":"none","resultserver":{"ip":"10.213.0.1","port":2042},"__proto__":{"ok":true}}`, /^malformed enable/],
      [JSON.stringify({ op: 'ping', nested: JSON.parse('['.repeat(500) + ']'.repeat(500)) }), /^malformed ping/]
    ]
    const lines = hostile.map(([l]) => l).join('\n') + '\n'
    const answers = (await talk(socket, lines, hostile.length)).map((a) => JSON.parse(a) as { ok: boolean; error?: string })
    expect(answers).toHaveLength(hostile.length)
    for (const [i, [line, why]] of hostile.entries()) {
      expect(answers[i]!.ok, line).toBe(false)
      expect(answers[i]!.error, line).toMatch(why)
    }
    // The answers come over the socket, the log lines through the rooter's stderr pipe:
    // on a loaded machine the last lines can trail the answers a little.
    const refused = (): number => log.match(/refused:/g)?.length ?? 0
    for (const until = Date.now() + 5000; refused() < hostile.length && Date.now() < until;) await new Promise((r) => setTimeout(r, 20))
    expect(refused()).toBe(hostile.length)
    expect(await table()).toBe(before)
  })

  it('cuts a request longer than its limit and binary garbage, and still serves the next client', async () => {
    const before = await table()
    const long = await talk(socket, `{"op":"ping","pad":"${'x'.repeat(10_000)}"}\n`, 1)
    expect(long.map((a) => JSON.parse(a) as { error: string })[0]?.error).toMatch(/longer than 4096 bytes/)
    const garbage = await talk(socket, Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37) % 256)).toString('latin1') + '\n', 1)
    expect(garbage.map((a) => JSON.parse(a) as { ok: boolean })[0]?.ok).toBe(false)
    const ping = (await talk(socket, '{"op":"ping"}\n', 1)).map((a) => JSON.parse(a) as { ok: boolean; abilities: { routes: string[]; guestInterfaces: unknown } })[0]!
    expect(ping.abilities.routes).toEqual(['none', 'drop', 'internet'])
    expect(ping.abilities.guestInterfaces).toEqual([{ name: 'br0', ipv6: expect.any(Boolean) as unknown }])
    expect(await table()).toBe(before)
  })

  it('adds only rules that match the guest, which only their owner reads, renews or removes', async () => {
    expect(await ask(socket, JSON.parse(enable({})) as Record<string, unknown>)).toEqual({ ok: true })
    const rules = await table()
    expect(rules).toContain(`${G} : jump g_10_213_0_5_in`)
    expect((await ask(socket, JSON.parse(enable({})) as Record<string, unknown>)).error).toMatch(/routed already/)
    expect((await ask(socket, JSON.parse(enable({ owner: OTHER })) as Record<string, unknown>)).error).toBe(`guest: ${G} is routed by another service`)
    for (const line of rules.split('\n').filter((l) => /ip (s|d)addr \d/.test(l))) expect(line).toMatch(/ip (s|d)addr (10\.213\.0\.1|10\.213\.0\.5)\b|@/)
    expect(await ask(socket, { op: 'status', owner: OWNER, guest: G })).toEqual({ ok: true, routed: true })
    expect(await ask(socket, { op: 'status', owner: OTHER, guest: G })).toEqual({ ok: true, routed: false })
    // Another service can neither turn it off nor clear it.
    expect(await ask(socket, { op: 'disable', owner: OTHER, guest: G })).toEqual({ ok: false, error: `guest: ${G} is routed by another service` })
    expect(await ask(socket, { op: 'flush', owner: OTHER })).toEqual({ ok: true, cleared: 0 })
    expect(await table()).toContain('g_10_213_0_5')
    expect(await ask(socket, { op: 'flush', owner: OWNER })).toEqual({ ok: true, cleared: 1 })
    expect(await table()).not.toContain('g_10_213_0_5')
  })

  it('puts the grants back after a kill -9 and a new start, in one transaction with the base policy', async () => {
    expect(await ask(socket, JSON.parse(enable({ route: 'internet', interface: 'up0' })) as Record<string, unknown>)).toEqual({ ok: true })
    await stopRooter('SIGKILL')
    // The kernel keeps the table meanwhile: the guest stays contained and routed.
    expect(await table()).toContain('g_10_213_0_5_fwd')
    await startRooter()
    expect(log).toMatch(/restored the routes of 10\.213\.0\.5 \(internet\)/)
    expect(await ask(socket, { op: 'status', owner: OWNER, guest: G })).toEqual({ ok: true, routed: true })
    const t = await table()
    expect(t).toContain('oifname "up0" masquerade')
    expect(t.match(/table inet aviary/g)).toHaveLength(1)
    expect(await ask(socket, { op: 'disable', owner: OWNER, guest: G })).toMatchObject({ ok: true })
  }, 60_000)

  it('lets a grant lapse when its owner stops renewing it', async () => {
    await stopRooter('SIGTERM')
    await startRooter({ AVIARY_ROOTER_LEASE_MS: '1500' })
    expect(await ask(socket, JSON.parse(enable({})) as Record<string, unknown>)).toEqual({ ok: true })
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 1000))
      expect(await ask(socket, { op: 'status', owner: OWNER, guest: G })).toEqual({ ok: true, routed: true })
    }
    const until = Date.now() + 15_000
    while ((await table()).includes('g_10_213_0_5')) {
      if (Date.now() > until) throw new Error(`the grant did not lapse: ${log.slice(-500)}`)
      await new Promise((r) => setTimeout(r, 250))
    }
    expect(log).toMatch(/the grant of 10\.213\.0\.5 lapsed/)
    expect(await ask(socket, { op: 'status', owner: OWNER, guest: G })).toEqual({ ok: true, routed: false })
  }, 60_000)

  it('serves a service at once while 300 idle and trickling connections are open', async () => {
    const idle: Socket[] = []
    const closed: number[] = []
    for (let i = 0; i < 300; i++) {
      const s = connect(socket)
      s.on('error', () => undefined)
      s.once('close', () => closed.push(Date.now()))
      // Half trickle a request that never ends, one byte at a time.
      if (i % 2 === 0) {
        const t = setInterval(() => { if (!s.destroyed) s.write('{') }, 200)
        s.once('close', () => clearInterval(t))
      }
      idle.push(s)
    }
    await new Promise((r) => setTimeout(r, 300))
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now()
      expect(await ask(socket, JSON.parse(enable({})) as Record<string, unknown>)).toEqual({ ok: true })
      expect(await ask(socket, { op: 'status', owner: OWNER, guest: G })).toEqual({ ok: true, routed: true })
      expect(await ask(socket, { op: 'disable', owner: OWNER, guest: G })).toMatchObject({ ok: true })
      expect(Date.now() - t0).toBeLessThan(2000)
    }
    // None of them holds on: all are closed within the first-line limit.
    const until = Date.now() + 5000
    while (closed.length < 300 && Date.now() < until) await new Promise((r) => setTimeout(r, 100))
    expect(closed.length).toBe(300)
    for (const s of idle) s.destroy()
  }, 60_000)

  it('takes its INetSim along when killed with kill -9, so the next rooter\'s INetSim gets the ports', async () => {
    /** INetSim's processes in the test's namespace (its main process and one per service). */
    const inetsims = async (): Promise<string[]> => {
      const pids = (await run('ip', ['netns', 'pids', NS])).stdout.split('\n').filter(Boolean)
      return pids.map((p) => { try { return readFileSync(`/proc/${p}/comm`, 'utf8').trim() } catch { return '' } }).filter((c) => c.startsWith('inetsim'))
    }
    const answers = async (): Promise<string> => (await run('ip', ['netns', 'exec', NS, 'curl', '-s', '-m', '5', '-o', '/dev/null', '-w', '%{http_code}', `http://${RS.ip}/`])).stdout
    // INetSim's readiness probe and curl reach the guests' address from inside the namespace, over its loopback.
    await run('ip', ['-n', NS, 'link', 'set', 'lo', 'up'])
    await stopRooter('SIGTERM')
    await startRooter({}, ['--inetsim', RS.ip])
    expect(log).toMatch(/INetSim answers on 10\.213\.0\.1/)
    // Each service names itself once forked: under load, a moment after HTTP answers.
    await expect.poll(inetsims, { timeout: 10_000, interval: 250 }).toContain('inetsim_dns_53_')
    expect((await inetsims()).length).toBeGreaterThan(10)
    const gone = async (): Promise<string[]> => {
      const until = Date.now() + 20_000
      while ((await inetsims()).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 250))
      return inetsims()
    }
    // The folder of the configuration INetSim runs from, as the rooter records it for the next one.
    // (Not from INetSim's command line: INetSim renames its processes, and their arguments with them.)
    const killedConf = readFileSync(`${socket}.inetsim`, 'utf8').split('\n')[1] ?? ''
    expect(path.basename(killedConf)).toMatch(/^aviary-inetsim-/)
    // Killed at once, while INetSim may still be starting its services (a SIGTERM then is lost):
    // the next rooter ends what is left before it starts its own, and removes its folder.
    await stopRooter('SIGKILL')
    expect(existsSync(killedConf)).toBe(true)
    await startRooter({}, ['--inetsim', RS.ip])
    expect(log).toMatch(/ended INetSim \d+, left running by an earlier rooter/)
    expect(existsSync(killedConf)).toBe(false)
    expect(await answers()).toBe('200')
    // Killed once INetSim has settled: the kernel's parent-death signal ends it, with no rooter to help.
    await new Promise((r) => setTimeout(r, 8000))
    await stopRooter('SIGKILL')
    expect(await gone()).toEqual([])
    await startRooter({}, ['--inetsim', RS.ip])
    expect(await answers()).toBe('200')
    // And a rooter that stops takes its INetSim along.
    await stopRooter('SIGTERM')
    expect(await gone()).toEqual([])
    await startRooter()
  }, 180_000)

  it('keeps the base policy when it stops, and `aviary rooter remove` takes the table away', async () => {
    await stopRooter('SIGTERM')
    const t = await table()
    expect(t).toContain('table inet aviary')
    expect(t).toContain('iifname @guest_ifs jump from_guest')
    await run('ip', ['netns', 'exec', NS, process.execPath, path.resolve('bin/aviary.js'), 'rooter', 'remove', '--socket', socket])
    expect(await table()).not.toContain('table inet aviary')
  }, 30_000)

  it('refuses to start on a guest network that carries the host\'s default route', async () => {
    const ns = `${NS}d`
    await run('ip', ['netns', 'del', ns]).catch(() => undefined)
    await run('ip', ['netns', 'add', ns])
    try {
      await run('ip', ['-n', ns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth1'])
      await run('ip', ['-n', ns, 'addr', 'add', '10.215.0.2/24', 'dev', 'eth0'])
      await run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up'])
      await run('ip', ['-n', ns, 'route', 'add', 'default', 'via', '10.215.0.1'])
      const r = await run('ip', ['netns', 'exec', ns, process.execPath, path.resolve('bin/aviary.js'), 'rooter', '--guest-network', '10.215.0.0/24',
        '--socket', path.join(dir, 'other.sock')]).then(() => null, (e: { code: number; stderr: string }) => e)
      expect(r?.code).toBe(1)
      expect(r?.stderr).toMatch(/guest network on eth0, which carries this host's default route/)
      expect((await run('ip', ['netns', 'exec', ns, 'nft', 'list', 'ruleset'])).stdout).not.toContain('aviary')
    } finally {
      await run('ip', ['netns', 'del', ns]).catch(() => undefined)
    }
  }, 30_000)
})
