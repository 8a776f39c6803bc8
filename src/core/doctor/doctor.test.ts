// `aviary doctor` on real machines: a netns guest running Aviary's agent (physical driver), where
// every check passes, and machines that are wrong in the ways users get them wrong (a VM that
// does not exist on the hypervisor, a result-server address of another host, a missing capture
// interface, no agent), each with its reason and a fix. Also through the CLI, as JSON.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { createNetnsGuest, type NetnsGuest } from '../../../test/guests/netns-guest'
import { ensureLibvirtd } from '../../../test/fixtures/libvirtd'
import { formatDoctorReport, runDoctor, type DoctorReport } from './doctor'

const run = promisify(execFile)

describe('aviary doctor', () => {
  let guest: NetnsGuest
  let dir: string
  let file: string

  beforeAll(async () => {
    guest = await createNetnsGuest({ index: 3, prefix: 'avdr' })
    await guest.startAgent([process.execPath, path.resolve('bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000'])
    const uri = await ensureLibvirtd()
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-doctor-'))
    file = path.join(dir, 'machines.json')
    writeFileSync(file, JSON.stringify({
      resultserver: { ip: guest.hostIp, port: 2042 },
      kvm: { uri },
      machines: [
        { name: 'good', driver: 'physical', ip: guest.guestIp, interface: guest.hostIf, platform: 'linux' },
        { name: 'novm', driver: 'kvm', label: 'no-such-domain', ip: '10.204.3.50', interface: 'avdr-none0' },
        { name: 'elsewhere', driver: 'physical', ip: '10.204.3.60', interface: guest.hostIf, resultserver_ip: '203.0.113.7' }
      ]
    }))
  }, 120_000)

  afterAll(async () => {
    await guest?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const byName = (r: DoctorReport, name: string) => r.machines.find((m) => m.name === name)!.findings
  const failed = (r: DoctorReport, name: string) => byName(r, name).filter((f) => !f.ok)

  it('passes every check of a working machine and names the agent; says that nothing is routed', async () => {
    const r = await runDoctor({ machinesFile: file, deep: false, only: ['good'] })
    expect(byName(r, 'good').filter((f) => !f.ok)).toEqual([])
    expect(byName(r, 'good').find((f) => f.check === 'agent protocol')!.detail).toMatch(/aviary agent 0\.10 answers on 10\.204\.3\.2:8000/)
    expect(byName(r, 'good').find((f) => f.check === 'packet capture')!.ok).toBe(true)
    // No routing section: the one failure, with its fix.
    expect(r.routes).toEqual([expect.objectContaining({ check: 'routes', ok: false, detail: expect.stringMatching(/the internet included/), fix: expect.stringMatching(/aviary rooter install/) })])
    expect(r.ok).toBe(false)
  }, 60_000)

  it('checks each route against a real rooter: what it offers, forwarding, INetSim, the proxy', async () => {
    const ns = 'avdrroot'
    await run('ip', ['netns', 'del', ns]).catch(() => undefined)
    await run('ip', ['netns', 'add', ns])
    await run('ip', ['-n', ns, 'link', 'add', 'up0', 'type', 'veth', 'peer', 'name', 'up1'])
    // A new namespace may inherit the host's forwarding (libvirt turns it on when it starts a
    // network): this check is about a host that does not forward, so say so here.
    await run('ip', ['netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv4.ip_forward=0'])
    // The guests' bridge, with IPv6 on (as a hand-made bridge has it).
    await run('ip', ['-n', ns, 'link', 'add', 'br0', 'type', 'bridge'])
    await run('ip', ['-n', ns, 'addr', 'add', '10.204.3.1/24', 'dev', 'br0'])
    await run('ip', ['-n', ns, 'addr', 'add', 'fd00:204::1/64', 'dev', 'br0'])
    await run('ip', ['-n', ns, 'link', 'set', 'br0', 'up'])
    const sock = path.join(dir, 'rooter.sock')
    const rooter = spawn('ip', ['netns', 'exec', ns, process.execPath, path.resolve('bin/aviary.js'), 'rooter', '--guest-network', '10.204.3.0/24',
      '--interface', 'up0', '--socket', sock], { stdio: ['ignore', 'ignore', 'pipe'] })
    try {
      await new Promise<void>((resolve, reject) => {
        let log = ''
        rooter.stderr!.on('data', (b: Buffer) => { log += b.toString(); if (log.includes('listening on')) resolve() })
        rooter.once('exit', (code) => reject(new Error(`rooter exited (${code}): ${log}`)))
      })
      const routed = path.join(dir, 'routed.json')
      writeFileSync(routed, JSON.stringify({
        routing: { rooter: sock, internet: { interface: 'up0' }, inetsim: { ip: '10.204.3.1' } },
        machines: [{ name: 'good', driver: 'physical', ip: guest.guestIp, interface: guest.hostIf, platform: 'linux', resultserver_ip: guest.hostIp }]
      }))
      const r = await runDoctor({ machinesFile: routed, deep: false })
      const f = (check: string) => r.routes.find((x) => x.check === check)!
      expect(f('rooter')).toMatchObject({ ok: true, detail: expect.stringMatching(/offers none, drop, internet$/) })
      expect(f('route none').ok).toBe(true)
      expect(f('route internet')).toMatchObject({ ok: false, detail: expect.stringMatching(/ip_forward is 0/), fix: expect.stringMatching(/sysctl/) })
      expect(f('route inetsim')).toMatchObject({ ok: false, detail: 'the rooter runs no INetSim' })
      expect(f('decrypting proxy')).toMatchObject({ ok: true, detail: expect.stringMatching(/^Mitmproxy: /) })
      expect(formatDoctorReport(r)).toMatch(/routes\n {2}ok {3}rooter: answers on/)
      expect(f('containment')).toMatchObject({ ok: true, detail: expect.stringMatching(/everything from 10\.204\.3\.0\/24 \(on br0\) is denied/) })
      expect(f('IPv6 on br0')).toMatchObject({ ok: false, fix: expect.stringMatching(/net\.ipv6\.conf\.br0\.disable_ipv6=1/) })
      // Turned off, the rooter sees it go and the doctor no longer reports it.
      await run('ip', ['netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv6.conf.br0.disable_ipv6=1'])
      await expect.poll(async () => (await runDoctor({ machinesFile: routed, deep: false })).routes.some((x) => x.check === 'IPv6 on br0'),
        { timeout: 15_000, interval: 500 }).toBe(false)
    } finally {
      rooter.kill('SIGTERM')
      await new Promise((res) => rooter.once('exit', res))
      await run('ip', ['netns', 'del', ns]).catch(() => undefined)
    }
  }, 60_000)

  it('gives a reason and a fix for each broken machine', async () => {
    const r = await runDoctor({ machinesFile: file, deep: false })
    expect(r.ok).toBe(false)
    const novm = failed(r, 'novm')
    expect(novm.map((f) => f.detail).join('\n')).toMatch(/no-such-domain/)
    expect(novm.some((f) => f.check === 'packet capture' && /avdr-none0/.test(f.detail))).toBe(true)
    for (const f of novm) expect(f.fix, f.check).toBeTruthy()
    const elsewhere = failed(r, 'elsewhere')
    expect(elsewhere.find((f) => f.check === 'result server address')!.detail).toMatch(/203\.0\.113\.7 is not an address of this host/)
    expect(elsewhere.some((f) => /10\.204\.3\.60/.test(f.detail))).toBe(true)
    const text = formatDoctorReport(r)
    expect(text).toMatch(/FAIL result server address/)
    expect(text).toMatch(/fix: /)
  }, 60_000)

  it('--deep waits for the agent through the driver, and reports it; a machine without snapshots is never said to be reverted', async () => {
    const r = await runDoctor({ machinesFile: file, deep: true, only: ['good'] })
    const checks = byName(r, 'good').map((f) => `${f.ok ? 'ok' : 'FAIL'} ${f.check}`)
    expect(checks).toEqual(expect.arrayContaining(['ok start', 'ok agent after start', 'ok stop']))
    expect(checks.filter((c) => /revert/.test(c))).toEqual([])
    expect(byName(r, 'good').find((f) => f.check === 'stop')!.detail).toBe('left running: its owner powers it')
  }, 60_000)

  it('runs from the CLI with --json, and exits 1 when a check fails', async () => {
    const data = path.join(dir, 'data')
    await run(process.execPath, [path.resolve('bin/aviary.js'), 'doctor', '--data', data, '--json']).then(
      () => { throw new Error('doctor should fail without a machines.json') },
      (err: { code: number; stdout: string }) => {
        expect(err.code).toBe(1)
        const r = JSON.parse(err.stdout) as DoctorReport
        expect(r.config.ok).toBe(false)
        expect(r.config.detail).toMatch(/there is no .*machines\.json/)
        expect(r.config.fix).toMatch(/aviary machines import/)
      })
  }, 60_000)
})
