// The rooter as it runs: `aviary rooter` as root in a network namespace of the test's own, fed a
// table of hostile and malformed requests over its UNIX socket. Each is refused with a reason and
// logged, and the firewall is exactly as before; a good request still works afterwards, and the
// rooter removes its table when it stops.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
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

const enable = (fields: Record<string, unknown>): string => JSON.stringify({ op: 'enable', guest: G, route: 'none', resultserver: RS, ...fields })

describe('aviary rooter against hostile requests', () => {
  let dir: string
  let socket: string
  let rooter: ChildProcess
  let log = ''
  const table = async (): Promise<string> => (await run('ip', ['netns', 'exec', NS, 'nft', 'list', 'ruleset'])).stdout

  beforeAll(async () => {
    await run('ip', ['netns', 'del', NS]).catch(() => undefined)
    await run('ip', ['netns', 'add', NS])
    await run('ip', ['-n', NS, 'link', 'add', 'br0', 'type', 'bridge'])
    await run('ip', ['-n', NS, 'addr', 'add', `${RS.ip}/24`, 'dev', 'br0'])
    await run('ip', ['-n', NS, 'link', 'set', 'br0', 'up'])
    await run('ip', ['-n', NS, 'link', 'add', 'up0', 'type', 'veth', 'peer', 'name', 'up1'])
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-rooter-'))
    socket = path.join(dir, 'rooter.sock')
    rooter = spawn('ip', ['netns', 'exec', NS, process.execPath, path.resolve('bin/aviary.js'), 'rooter', '--guest-network', '10.213.0.0/24',
      '--interface', 'up0', '--socket', socket], { stdio: ['ignore', 'ignore', 'pipe'] })
    await new Promise<void>((resolve, reject) => {
      rooter.stderr!.on('data', (b: Buffer) => {
        log += b.toString()
        if (log.includes('listening on')) resolve()
      })
      rooter.once('exit', (code) => reject(new Error(`the rooter exited (${code}): ${log}`)))
    })
  }, 60_000)

  afterAll(async () => {
    rooter?.kill('SIGKILL')
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
      ['{"op":"flush","all":true}', /^malformed flush/],
      ['{"op":"enable"}', /^malformed enable/],
      ['{"op":"disable","guest":"10.213.0.5","x":1}', /^malformed disable/],
      ['{"op":"disable","guest":"10.9.9.9"}', /^guest: 10\.9\.9\.9 is not a host address of the guest networks$/],
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
      ['{"op":"enable","guest":"10.213.0.5","route":"none","resultserver":{"ip":"10.213.0.1","port":2042},"__proto__":{"ok":true}}', /^malformed enable/],
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
    const ping = (await talk(socket, '{"op":"ping"}\n', 1)).map((a) => JSON.parse(a) as { ok: boolean; abilities: { routes: string[] } })[0]!
    expect(ping.abilities.routes).toEqual(['none', 'drop', 'internet'])
    expect(await table()).toBe(before)
  })

  it('adds only rules that match the guest, removes them all, and its table when it stops', async () => {
    const ok = (await talk(socket, enable({}) + '\n', 1)).map((a) => JSON.parse(a) as { ok: boolean })[0]
    expect(ok?.ok).toBe(true)
    const rules = await table()
    expect(rules).toContain(`${G} : jump g_10_213_0_5_in`)
    const again = (await talk(socket, enable({}) + '\n', 1)).map((a) => JSON.parse(a) as { error: string })[0]
    expect(again?.error).toMatch(/routed already/)
    for (const line of rules.split('\n').filter((l) => /ip (s|d)addr \d/.test(l))) expect(line).toMatch(/ip (s|d)addr (10\.213\.0\.1|10\.213\.0\.5)\b|@/)
    await talk(socket, '{"op":"flush"}\n', 1)
    expect(await table()).not.toContain('g_10_213_0_5')
    rooter.kill('SIGTERM')
    await new Promise((r) => rooter.once('exit', r))
    expect(await table()).not.toContain('table inet aviary')
  })
})
