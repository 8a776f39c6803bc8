// Containment that fails closed, judged from outside the guest (test/guests/routed-lab.ts): what
// the upstream, the LAN and the host's own listeners received while guests did what malware
// does with root in its VM (take other addresses, speak IPv6), while the rooter was killed and
// restarted mid-run, and while a second service started beside the first. The rooter runs as
// root and the services as nobody, as deployed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { ChildProcess } from 'node:child_process'
import { connect } from 'node:net'
import path from 'node:path'
import { createRoutedLab, type LabGuest, type RoutedLab } from '../guests/routed-lab'
import { stages, submitFile, waitForTask } from './e2e-helpers'
import { rooterOwner } from '../../src/core/network/rooter-client'

const FINAL = ['reported', 'failed_analysis', 'failed_processing']
const L = 2

type Probe = [name: string, kind: 'tcp' | 'udp' | 'icmp' | 'http', host: string, port: number, src: string | null]

/**
 * A Python program that first takes the given extra addresses on eth0 (as root in its VM), then
 * tries each probe (a TCP connection, a UDP echo, a ping, an HTTP GET naming the probe in its
 * path; all at once, each within 1.5 s), `rounds` times `every` seconds apart, and writes what succeeded to /tmp/<file>. It gives
 * its extra addresses back at the end, so the guest is as before for the next test.
 * With `untilStopped`, the rounds go on (at most `rounds`) until the test writes /tmp/<file>.stop
 * in the guest (stopProber()), and each round ends by writing its number to /tmp/<file>.rounds
 * (roundsDone()): the sample probes for exactly as long as the test needs, not for a guess.
 */
function prober(o: { file: string; addrs?: string[]; probes: Probe[]; rounds?: number; every?: number; untilStopped?: boolean }): string {
  const conf = JSON.stringify({ file: o.file, addrs: o.addrs ?? [], probes: o.probes, rounds: o.rounds ?? 1, every: o.every ?? 0, until: o.untilStopped === true })
  return `import json, os, socket, subprocess, time
from concurrent.futures import ThreadPoolExecutor
C = json.loads(${JSON.stringify(conf)})
R = {}
def addr(host, port):
    fam = socket.AF_INET6 if ':' in host else socket.AF_INET
    return fam, socket.getaddrinfo(host, port, fam)[0][4]
def tcp(name, host, port, src, http):
    fam, sa = addr(host, port)
    s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(1.5)
    try:
        if src: s.bind((src, 0))
        s.connect(sa)
        if http: s.sendall(('GET /c-' + name + ' HTTP/1.0\\r\\nHost: probe\\r\\n\\r\\n').encode())
        return len(s.recv(100)) > 0
    except Exception:
        return False
    finally:
        s.close()
def udp(name, host, port, src):
    fam, sa = addr(host, port)
    s = socket.socket(fam, socket.SOCK_DGRAM); s.settimeout(1.5)
    try:
        if src: s.bind((src, 0))
        s.sendto(b'probe ' + name.encode(), sa)
        return s.recvfrom(100)[0].startswith(b'probe')
    except Exception:
        return False
    finally:
        s.close()
def icmp(host, src):
    cmd = ['ping', '-c1', '-W1'] + (['-I', src] if src else []) + [host]
    return subprocess.run(cmd, capture_output=True).returncode == 0
for a in C['addrs']:
    subprocess.run(['ip', 'addr', 'add', a, 'dev', 'eth0'] + (['nodad'] if ':' in a else []), capture_output=True)
def one(p):
    name, kind, host, port, src = p
    return name, tcp(name, host, port, src, kind == 'http') if kind in ('tcp', 'http') else udp(name, host, port, src) if kind == 'udp' else icmp(host, src)
STOP = '/tmp/' + C['file'] + '.stop'
for r in range(C['rounds']):
    with ThreadPoolExecutor(16) as pool:
        for name, ok in pool.map(one, C['probes']):
            R[name] = R.get(name, False) or ok
    if C['until']:
        open('/tmp/' + C['file'] + '.rounds', 'w').write(str(r + 1))
        if os.path.exists(STOP):
            break
    if r + 1 < C['rounds']:
        time.sleep(C['every'])
for a in C['addrs']:
    subprocess.run(['ip', 'addr', 'del', a, 'dev', 'eth0'], capture_output=True)
json.dump(R, open('/tmp/' + C['file'], 'w'))
`
}

/** Every way out a guest might try, from `src` (null: its own address). */
function everywhere(lab: RoutedLab, tag: string, src: string | null, v6 = false): Probe[] {
  const hosts: [string, string][] = v6
    ? [['hostula', `fd11:211:${L}::1`]]
    : [['up', lab.upstreamIp], ['lan', lab.lanIp], ['hostbr', lab.bridgeIp], ['hostup', lab.natIp], ['hostlan', '192.168.77.1']]
  const out: Probe[] = []
  for (const [where, ip] of hosts) {
    out.push([`${tag}_tcp_${where}`, 'tcp', ip, 7000, src], [`${tag}_udp_${where}`, 'udp', ip, 7001, src], [`${tag}_icmp_${where}`, 'icmp', ip, 0, src])
    if (where === 'up' || where === 'lan') out.push([`${tag}_http_${where}`, 'http', ip, 80, src], [`${tag}_echo_${where}`, 'udp', ip, 7, src])
  }
  return out
}

describe('containment fails closed (rooter as root, services as nobody)', () => {
  let lab: RoutedLab
  let rooter: ChildProcess
  let rooterLog = ''
  let s: { proc: ChildProcess; url: string }
  let dataDir: string
  const machines = (guests: number[]): unknown => ({
    driver: 'physical', tcpdump: lab.tcpdump, resultserver: { port: 0 }, screenshots: { interval: 0 }, timeouts: { critical: 30 },
    routing: { default: 'none', rooter: path.join(lab.dir, 'rooter.sock'), internet: { interface: 'up0' } },
    machines: guests.map((i) => ({ name: `lab${i}`, ip: lab.guests[i]!.ip, platform: 'linux', interface: lab.guests[i]!.hostIf, resultserver_ip: lab.bridgeIp }))
  })
  const startRooter = async (): Promise<void> => {
    rooter = await lab.startRooter((text) => { rooterLog += text })
  }
  /** What every outside listener logged since `mark`. */
  const heard = (mark: Record<string, number>): unknown[] =>
    (['upstream', 'lan', 'host', 'vpn'] as const).flatMap((w) => lab.seen(w).slice(mark[w] ?? 0).map((e) => ({ where: w, ...e })))
  const mark = (): Record<string, number> => Object.fromEntries((['upstream', 'lan', 'host', 'vpn'] as const).map((w) => [w, lab.seen(w).length]))
  /** Runs a prober in an idle guest (no task, no route) and returns its results. */
  const probeIdle = async (g: LabGuest, script: string, file: string): Promise<Record<string, boolean>> => {
    const c = g.exec(['python3', '-c', script])
    await new Promise((r) => c.once('exit', r))
    return JSON.parse(readFileSync(path.join(g.tmpDir, file), 'utf8')) as Record<string, boolean>
  }
  const probeResult = (dir: string, id: number, file: string): Record<string, boolean> => {
    const files = path.join(dir, 'storage', 'analyses', String(id), 'files')
    const f = readdirSync(files).find((n) => n.endsWith(`_${file}`))
    if (!f) throw new Error(`task ${id} uploaded no ${file}: ${readdirSync(files).join(', ')}`)
    return JSON.parse(readFileSync(path.join(files, f), 'utf8')) as Record<string, boolean>
  }
  const view = async (url: string, id: number): Promise<{ status: string; route: string | null; errors: string[] }> =>
    ((await (await fetch(`${url}/tasks/view/${id}`)).json()) as { task: { status: string; route: string | null; errors: string[] } }).task
  const running = async (url: string, id: number): Promise<void> => {
    for (const until = Date.now() + 60_000; !(await stages({ url }, id)).includes('sample_running');) {
      if (Date.now() > until) throw new Error(`task ${id} did not start`)
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  const grants = async (): Promise<string> => lab.inHost(['nft', 'list', 'map', 'inet', 'aviary', 'guest_in'])
  /** How many rounds an `untilStopped` prober in guest `i` has finished. */
  const roundsDone = (i: number, file: string): number => {
    const f = path.join(lab.guests[i]!.tmpDir, `${file}.rounds`)
    return existsSync(f) ? Number(readFileSync(f, 'utf8')) : 0
  }
  /** Lets an `untilStopped` prober in guest `i` end after its current round. */
  const stopProber = (i: number, file: string): void => writeFileSync(path.join(lab.guests[i]!.tmpDir, `${file}.stop`), '')

  beforeAll(async () => {
    lab = await createRoutedLab({ index: L, guests: 4, ipv6: true })
    await lab.hostListener()
    for (const g of lab.guests) await g.startAgent()
    await startRooter()
    dataDir = lab.dataDir(machines([0, 1]))
    s = await lab.serve(dataDir)
  }, 120_000)

  afterAll(async () => {
    await lab?.close()
  }, 60_000)

  it('a guest with no task reaches nothing, from its own address or any other it takes, IPv4 or IPv6', async () => {
    const g = lab.guests[3]!
    const before = mark()
    const ll = await lab.bridgeLinkLocal()
    const probes = [
      ...everywhere(lab, 'own', null),
      ...everywhere(lab, 'other', `10.211.${L}.222`),
      ...everywhere(lab, 'lanaddr', '192.168.77.50'),
      ...everywhere(lab, 'v6', null, true),
      ['v6_tcp_linklocal', 'tcp', `${ll}%eth0`, 7000, null], ['v6_udp_linklocal', 'udp', `${ll}%eth0`, 7001, null], ['v6_icmp_linklocal', 'icmp', `${ll}%eth0`, 0, null]
    ] satisfies Probe[]
    const r = await probeIdle(g, prober({ file: 'idle.json', addrs: [`10.211.${L}.222/24`, '192.168.77.50/32'], probes }), 'idle.json')
    expect(Object.keys(r)).toHaveLength(probes.length)
    expect(Object.entries(r).filter(([, ok]) => ok)).toEqual([])
    expect(heard(before)).toEqual([])
  }, 120_000)

  it('a sample on route none or internet that takes another address gets nothing from it; its own address keeps its route', async () => {
    const before = mark()
    const other = `10.211.${L}.223`
    const none = await submitFile(s, 'spoof-none.py', prober({ file: 'spoof-none.json', addrs: [`${other}/24`], probes: [...everywhere(lab, 'own', null), ...everywhere(lab, 'other', other)] }),
      { machine: 'lab0', options: 'route=none', timeout: '60' })
    const inter = await submitFile(s, 'spoof-inter.py', prober({ file: 'spoof-inter.json', addrs: [`${other.replace(/\d+$/, '224')}/24`, '192.168.77.51/32'],
      probes: [['own_http_up', 'http', lab.upstreamIp, 80, null], ...everywhere(lab, 'other', other.replace(/\d+$/, '224')), ...everywhere(lab, 'lanaddr', '192.168.77.51')] }),
    { machine: 'lab1', options: 'route=internet', timeout: '60' })
    expect(await waitForTask(s, none, FINAL, 150_000)).toBe('reported')
    expect(await waitForTask(s, inter, FINAL, 150_000)).toBe('reported')
    const rn = probeResult(dataDir, none, 'spoof-none.json')
    expect(Object.entries(rn).filter(([, ok]) => ok)).toEqual([])
    const ri = probeResult(dataDir, inter, 'spoof-inter.json')
    // Only the sample's own address on its own route got out: to the upstream, with the NAT address.
    expect(Object.entries(ri).filter(([, ok]) => ok).map(([k]) => k)).toEqual(['own_http_up'])
    const got = heard(before) as { where: string; client: string; path?: string }[]
    expect(got.map((e) => `${e.where} ${e.client} ${e.path ?? ''}`)).toEqual([`upstream ${lab.natIp} /c-own_http_up`])
  }, 200_000)

  it('IPv6 from a routed guest is dropped on every route, and the doctor says the guest network carries it', async () => {
    const before = mark()
    const ll = await lab.bridgeLinkLocal()
    const v6: Probe[] = [...everywhere(lab, 'v6', null, true),
      ['v6_tcp_linklocal', 'tcp', `${ll}%eth0`, 7000, null], ['v6_udp_linklocal', 'udp', `${ll}%eth0`, 7001, null], ['v6_icmp_linklocal', 'icmp', `${ll}%eth0`, 0, null]]
    const ids = await Promise.all([['lab0', 'none'], ['lab1', 'internet']].map(([machine, route]) =>
      submitFile(s, `v6-${route}.py`, prober({ file: `v6-${route}.json`, probes: v6 }), { machine: machine!, options: `route=${route}`, timeout: '60' })))
    for (const [i, id] of ids.entries()) {
      expect(await waitForTask(s, id, FINAL, 150_000)).toBe('reported')
      const r = probeResult(dataDir, id, `v6-${['none', 'internet'][i]}.json`)
      expect(Object.keys(r)).toHaveLength(v6.length)
      expect(Object.entries(r).filter(([, ok]) => ok)).toEqual([])
    }
    expect(heard(before)).toEqual([])
    const doctor = (await (await fetch(`${s.url}/aviary/doctor`)).json()) as { routes: { check: string; ok: boolean; fix?: string }[] }
    expect(doctor.routes.find((f) => f.check === 'IPv6 on br0')).toMatchObject({ ok: false, fix: expect.stringMatching(/disable_ipv6=1/) })
  }, 200_000)

  it('a rooter killed and restarted mid-run puts the run\'s route back: the run goes on contained and completes', async () => {
    const before = mark()
    const id = await submitFile(s, 'through.py', prober({ file: 'through.json', probes: everywhere(lab, 'through', null), rounds: 40, every: 1, untilStopped: true }),
      { machine: 'lab0', options: 'route=none', timeout: '90' })
    await running(s.url, id)
    rooter.kill('SIGKILL')
    await new Promise((r) => rooter.once('exit', r))
    // Meanwhile the kernel keeps the table: still routed, still contained.
    expect(await grants()).toContain(lab.guests[0]!.ip)
    await new Promise((r) => setTimeout(r, 3000))
    const from = rooterLog.length
    await startRooter()
    expect(rooterLog.slice(from)).toMatch(new RegExp(`restored the routes of ${lab.guests[0]!.ip.replace(/\./g, '\\.')} \\(none\\)`))
    // Two more rounds, so one ran whole with the restarted rooter; then the sample may end.
    const after = roundsDone(0, 'through.json')
    await expect.poll(() => roundsDone(0, 'through.json'), { timeout: 60_000 }).toBeGreaterThanOrEqual(after + 2)
    stopProber(0, 'through.json')
    expect(await waitForTask(s, id, FINAL, 150_000)).toBe('reported')
    const t = await view(s.url, id)
    expect(t.route).toBe('none')
    expect(t.errors).toEqual([])
    // The probe's results arrived (the result server stayed reachable), and nothing else got out.
    expect(Object.entries(probeResult(dataDir, id, 'through.json')).filter(([, ok]) => ok)).toEqual([])
    expect(heard(before)).toEqual([])
    expect(await grants()).not.toContain(lab.guests[0]!.ip)
  }, 200_000)

  it('a rooter that comes back without the run\'s route: the run fails at once with the reason, and the guest got nothing', async () => {
    const before = mark()
    const id = await submitFile(s, 'lost.py', prober({ file: 'lost.json', probes: everywhere(lab, 'lost', null), rounds: 20, every: 3 }),
      { machine: 'lab1', options: 'route=internet', timeout: '120' })
    await running(s.url, id)
    rooter.kill('SIGKILL')
    await new Promise((r) => rooter.once('exit', r))
    // A state that was lost (a new /run after a reboot of the rooter's unit, a hand-edited file).
    rmSync(path.join(lab.dir, 'rooter-state.json'))
    await startRooter()
    const t0 = Date.now()
    expect(await waitForTask(s, id, FINAL, 60_000)).toBe('failed_analysis')
    expect(Date.now() - t0).toBeLessThan(20_000)
    const t = await view(s.url, id)
    expect(t.errors.join('\n')).toMatch(/the rooter no longer routes 10\.211\.2\.11 .*the analysis was stopped so that the guest never runs unrouted/)
    // From the restart on, the guest's internet probes met the base policy: nothing new outside
    // came from it but what it had reached through its route before (with the NAT address).
    for (const e of heard(before) as { where: string; client: string }[]) expect(e.client).toBe(lab.natIp)
  }, 200_000)

  it('a second service on the same rooter clears only its own grants, and cannot touch the first one\'s', async () => {
    const before = mark()
    // It probes until the second service has done its part, so its run holds its grant all along,
    // however slowly that service starts (it took over 30 s with other test files beside it).
    const id = await submitFile(s, 'first.py', prober({ file: 'first.json', probes: everywhere(lab, 'first', null), rounds: 100, every: 1, untilStopped: true }),
      { machine: 'lab0', options: 'route=none', timeout: '150' })
    await running(s.url, id)
    const from = rooterLog.length
    const otherData = lab.dataDir(machines([2]))
    const second = await lab.serve(otherData)
    try {
      await expect.poll(() => /flushed the grants of service [0-9a-f]{8}: none; 1 other grant\(s\) kept/.test(rooterLog.slice(from)), { timeout: 30_000 }).toBe(true)
      expect(await grants()).toContain(lab.guests[0]!.ip)
      // The second service's id cannot turn the first one's route off.
      const answer = await new Promise<string>((resolve) => {
        const c = connect(path.join(lab.dir, 'rooter.sock'))
        let buf = ''
        c.on('data', (b) => { buf += b.toString(); if (buf.includes('\n')) { c.destroy(); resolve(buf) } })
        c.write(JSON.stringify({ op: 'disable', owner: rooterOwner(otherData), guest: lab.guests[0]!.ip }) + '\n')
      })
      expect(JSON.parse(answer)).toEqual({ ok: false, error: `guest: ${lab.guests[0]!.ip} is routed by another service` })
      // Its own runs get routes as usual.
      const mine = await submitFile(second, 'second.py', prober({ file: 'second.json', probes: [['second_http_up', 'http', lab.upstreamIp, 80, null]] }),
        { machine: 'lab2', options: 'route=internet', timeout: '30' })
      expect(await waitForTask(second, mine, FINAL, 150_000)).toBe('reported')
      expect(probeResult(otherData, mine, 'second.json')).toEqual({ second_http_up: true })
    } finally {
      stopProber(0, 'first.json')
      second.proc.kill('SIGTERM')
      await new Promise((r) => second.proc.once('exit', r))
    }
    expect(await waitForTask(s, id, FINAL, 200_000)).toBe('reported')
    expect((await view(s.url, id)).errors).toEqual([])
    expect(Object.entries(probeResult(dataDir, id, 'first.json')).filter(([, ok]) => ok)).toEqual([])
    const got = heard(before) as { where: string; client: string; path?: string }[]
    expect(got.map((e) => `${e.where} ${e.client} ${e.path ?? ''}`)).toEqual([`upstream ${lab.natIp} /c-second_http_up`])
    expect(existsSync(path.join(lab.dir, 'rooter-state.json'))).toBe(true)
  }, 360_000)
})
