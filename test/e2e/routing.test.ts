// The routes with real parts (test/guests/routed-lab.ts): the rooter as root and `aviary serve` as
// nobody in the lab's host namespace, real guests on its bridge running the real agent, an
// upstream namespace playing the internet and a LAN. Each guest runs a sample that probes TCP,
// UDP, ICMP and DNS towards the upstream, the host and the LAN, and uploads what it saw; the test
// reads that, the servers' own logs (who reached them, from which address) and the reports.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { createRoutedLab, type RoutedLab } from '../guests/routed-lab'
import { stages, submitFile, waitForTask } from './e2e-helpers'

const FINAL = ['reported', 'failed_analysis', 'failed_processing']

/** A Python sample that tries everything and writes /tmp/probe.json (a dropped file). */
function probe(lab: RoutedLab, tag: string): string {
  return `import json, socket, ssl, subprocess, urllib.error, urllib.request
R = {}
def tcp(name, host, port):
    try:
        socket.create_connection((host, port), timeout=2).close(); R[name] = True
    except Exception:
        R[name] = False
def udp(name, host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    try:
        s.sendto(b'probe', (host, port)); R[name] = s.recvfrom(100)[0] == b'probe'
    except Exception:
        R[name] = False
def icmp(name, host):
    R[name] = subprocess.run(['ping', '-c1', '-W2', host], capture_output=True).returncode == 0
def get(name, url):
    try:
        ctx = ssl._create_unverified_context()
        R[name] = urllib.request.urlopen(url, timeout=4, context=ctx).read().decode('latin1')[:300]
    except urllib.error.HTTPError as e:
        R[name] = str(e.code) + ' ' + e.read().decode('latin1')[:300]
    except Exception as e:
        R[name] = None
try:
    R['dns'] = socket.gethostbyname('${tag}.example')
except Exception:
    R['dns'] = None
for where, host in (('upstream', '${lab.upstreamIp}'), ('host', '${lab.bridgeIp}'), ('lan', '${lab.lanIp}')):
    tcp('tcp_' + where, host, 80)
    udp('udp_' + where, host, 7)
    icmp('icmp_' + where, host)
get('http_name', 'http://${tag}.example/from-${tag}')
get('http_page', 'http://${tag}.example/index.html')
get('https_name', 'https://${tag}.example/from-${tag}')
json.dump(R, open('/tmp/probe-${tag}.json', 'w'))
`
}

describe('routes, with the rooter as root and the service as nobody', () => {
  let lab: RoutedLab
  let s: { proc: import('node:child_process').ChildProcess; url: string }
  let dataDir: string
  let rooterLog = ''

  beforeAll(async () => {
    lab = await createRoutedLab({ index: 1, guests: 5 })
    for (const g of lab.guests) await g.startAgent()
    const rooter = await lab.startRooter()
    rooter.stderr!.on('data', (b: Buffer) => { rooterLog += b.toString() })
    dataDir = lab.dataDir({
      driver: 'physical',
      tcpdump: lab.tcpdump,
      resultserver: { port: 0 },
      screenshots: { interval: 0 },
      timeouts: { critical: 30 },
      routing: { default: 'none', rooter: path.join(lab.dir, 'rooter.sock'), internet: { interface: 'up0' }, inetsim: { ip: lab.bridgeIp },
        vpn: [{ name: 'vpn0', interface: 'vpn0' }] },
      machines: lab.guests.map((g, i) => ({ name: `lab${i}`, ip: g.ip, platform: 'linux', interface: g.hostIf, resultserver_ip: lab.bridgeIp }))
    })
    s = await lab.serve(dataDir)
  }, 120_000)

  afterAll(async () => {
    await lab?.close()
  }, 60_000)

  const view = async (id: number): Promise<{ status: string; route: string | null; errors: string[] }> =>
    ((await (await fetch(`${s.url}/tasks/view/${id}`)).json()) as { task: { status: string; route: string | null; errors: string[] } }).task
  const probeResult = (id: number, tag: string): Record<string, unknown> => {
    const dir = path.join(dataDir, 'storage', 'analyses', String(id), 'files')
    const f = readdirSync(dir).find((n) => n.endsWith(`_probe-${tag}.json`))
    if (!f) throw new Error(`task ${id} uploaded no probe result: ${readdirSync(dir).join(', ')}`)
    return JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as Record<string, unknown>
  }
  const report = async (id: number): Promise<{ network: Record<string, unknown[]> }> =>
    (await (await fetch(`${s.url}/tasks/report/${id}/json`)).json()) as { network: Record<string, unknown[]> }

  it('runs as nobody, offers the routes, and refuses what it cannot honour, saying why', async () => {
    const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${s.proc.pid}/status`, 'utf8'))?.[1]
    expect(uid).toBe('65534')
    const routes = (await (await fetch(`${s.url}/aviary/routes`)).json()) as { default: string; routes: { name: string }[] }
    expect(routes.default).toBe('none')
    expect(routes.routes.map((r) => r.name)).toEqual(['none', 'drop', 'internet', 'inetsim', 'vpn0'])
    const form = new FormData()
    form.set('file', new Blob(['x']), 'x.sh')
    form.set('options', 'route=none,mitm=1')
    const res = await fetch(`${s.url}/tasks/create/file`, { method: 'POST', body: form })
    expect(res.status).toBe(400)
    // (a route it does not offer runs on none instead: test/e2e/route-fallback.test.ts)
    expect(((await res.json()) as { message: string }).message).toBe("options: mitm=1 needs a route with traffic to decrypt (internet, inetsim or a VPN), not 'none'")
  })

  it('none, internet, inetsim and a VPN: each guest reaches exactly what its route allows', async () => {
    const tasks = [
      { i: 0, route: 'none', tag: 'none0' },
      { i: 1, route: 'internet', tag: 'inter1' },
      { i: 2, route: 'inetsim', tag: 'inet2' },
      { i: 4, route: 'vpn0', tag: 'vpn4' }
    ]
    const ids = await Promise.all(tasks.map((t) => submitFile(s, `probe-${t.tag}.py`, probe(lab, t.tag), { machine: `lab${t.i}`, options: `route=${t.route}`, timeout: '60' })))
    for (const id of ids) expect(await waitForTask(s, id, FINAL, 150_000)).toBe('reported')
    const upstream = lab.seen('upstream')

    // none: nothing but the result server (the probe result did arrive) and the agent.
    expect((await view(ids[0]!)).route).toBe('none')
    const none = probeResult(ids[0]!, 'none0')
    for (const k of ['tcp_upstream', 'udp_upstream', 'icmp_upstream', 'tcp_host', 'udp_host', 'icmp_host', 'tcp_lan', 'udp_lan', 'icmp_lan']) expect(none[k], k).toBe(false)
    expect(none.dns).toBeNull()
    expect(none.http_name).toBeNull()
    expect(upstream.some((e) => e.name === 'none0.example')).toBe(false)
    // The route says what it dropped (analysis.log is written as the run ends: read it once complete).
    await expect.poll(() => readFileSync(path.join(dataDir, 'storage', 'analyses', String(ids[0]), 'analysis.log'), 'utf8'), { timeout: 10_000 })
      .toMatch(/route none off; it dropped [1-9]\d* packets/)

    // internet: the upstream, through NAT; never the host or the LAN.
    expect((await view(ids[1]!)).route).toBe('internet')
    const inter = probeResult(ids[1]!, 'inter1')
    expect(inter).toMatchObject({ tcp_upstream: true, udp_upstream: true, icmp_upstream: true, dns: lab.upstreamIp })
    expect(inter).toMatchObject({ tcp_host: false, udp_host: false, icmp_host: false, tcp_lan: false, udp_lan: false, icmp_lan: false })
    expect(String(inter.http_name)).toContain(`upstream answers ${lab.natIp}`)
    const fromInter = upstream.filter((e) => e.path === '/from-inter1')
    expect(fromInter.length).toBeGreaterThan(0)
    for (const e of fromInter) expect(e.client).toBe(lab.natIp)
    expect(lab.seen('lan')).toEqual([])

    // inetsim: every name resolves to INetSim, which answers HTTP and HTTPS; the upstream hears nothing.
    expect((await view(ids[2]!)).route).toBe('inetsim')
    const inet = probeResult(ids[2]!, 'inet2')
    expect(inet.dns).toBe(lab.bridgeIp)
    expect(inet).toMatchObject({ tcp_upstream: true, udp_upstream: true }) // INetSim answers for any address
    expect(String(inet.http_page)).toMatch(/INetSim default HTML page/)
    expect(inet.https_name).not.toBeNull()
    expect(upstream.some((e) => e.name === 'inet2.example' || e.path === '/from-inet2')).toBe(false)
    const r = await report(ids[2]!)
    expect(JSON.stringify(r.network.dns)).toContain('inet2.example')
    expect(JSON.stringify(r.network.http)).toContain('/from-inet2')
    expect(JSON.stringify(r.network.tls)).toContain('inet2.example') // the HTTPS, by its SNI

    // vpn0: out through the VPN's link and its routing table, never the internet link.
    expect((await view(ids[3]!)).route).toBe('vpn0')
    const v = probeResult(ids[3]!, 'vpn4')
    expect(v).toMatchObject({ tcp_upstream: true, udp_upstream: true, icmp_upstream: true, dns: lab.upstreamIp, tcp_host: false, tcp_lan: false, icmp_lan: false })
    expect(String(v.http_name)).toContain(`vpn answers ${lab.vpnNatIp}`)
    expect(lab.seen('vpn').some((e) => e.path === '/from-vpn4' && e.client === lab.vpnNatIp)).toBe(true)
    expect(upstream.some((e) => e.path === '/from-vpn4' || e.name === 'vpn4.example')).toBe(false)
  }, 240_000)

  it('mitm=1: a sample\'s HTTPS is decrypted in the report, and a pinning sample shows as a refused handshake', async () => {
    const pinned = readFileSync(path.join(lab.dir, 'server.crt'), 'utf8')
    const sample = `import ssl, urllib.request
got = urllib.request.urlopen('https://upstream.example/secret', timeout=10).read()
open('/tmp/got.txt', 'wb').write(got)
ctx = ssl.create_default_context(cadata='''${pinned}''')
try:
    urllib.request.urlopen('https://upstream.example/pinned', context=ctx, timeout=10)
    open('/tmp/pinned.txt', 'w').write('accepted')
except Exception as e:
    open('/tmp/pinned.txt', 'w').write('refused: ' + str(e))
`
    const id = await submitFile(s, 'tls.py', sample, { machine: 'lab3', options: 'route=internet,mitm=1', timeout: '60' })
    expect(await waitForTask(s, id, FINAL, 150_000)).toBe('reported')
    const t = await view(id)
    expect(t.errors).toEqual([])
    const r = await report(id) as unknown as { network: { https_ex: { uri: string; status: number; response_body: string; request_headers: [string, string][] }[]; mitm: string[] } }
    const secret = r.network.https_ex.find((e) => e.uri === 'https://upstream.example/secret')
    expect(secret).toMatchObject({ status: 200 })
    expect(secret!.response_body).toBe('secret payload over tls\n')
    expect(secret!.request_headers.some(([k, v]) => k.toLowerCase() === 'host' && v === 'upstream.example')).toBe(true)
    expect(r.network.mitm.some((l) => /^the guest \(.*\) refused the proxy's certificate for upstream\.example \(TLS alert: unknown ca\)/.test(l))).toBe(true)
    const flows = await fetch(`${s.url}/aviary/tasks/${id}/flows`)
    expect(flows.status).toBe(200)
    expect((await flows.arrayBuffer()).byteLength).toBeGreaterThan(100)
    // The CA was trusted for the run only.
    expect(readdirSync(path.join(lab.dir, 'guest3', 'local-ca'))).toEqual([])

    // With inetsim, the proxy's upstream is INetSim: decrypted, and INetSim's answer.
    const fake = await submitFile(s, 'fake.py', "import urllib.request\nurllib.request.urlopen('https://fake.example/page.html', timeout=10).read()\n",
      { machine: 'lab2', options: 'route=inetsim,mitm=1', timeout: '60' })
    expect(await waitForTask(s, fake, FINAL, 150_000)).toBe('reported')
    expect((await view(fake)).errors).toEqual([])
    const rf = await report(fake) as unknown as { network: { https_ex: { uri: string; status: number; response_body: string }[] } }
    const page = rf.network.https_ex.find((e) => e.uri.endsWith('/page.html'))
    expect(page, JSON.stringify(rf.network.https_ex.map((e) => e.uri))).toMatchObject({ status: 200 })
    expect(page!.uri).toBe('https://fake.example/page.html')
    expect(page!.response_body).toMatch(/INetSim default HTML page/)
  }, 200_000)

  it('kill -9 of the service during a routed task: no rule survives the restart', async () => {
    const sample = '#!/bin/sh\nif [ -e /tmp/routed-marker ]; then exit 0; fi\ntouch /tmp/routed-marker\nsleep 60\n'
    const id = await submitFile(s, 'long.sh', sample, { machine: 'lab0', options: 'route=internet', timeout: '90' })
    const deadline = Date.now() + 60_000
    while (!(await stages(s, id)).includes('sample_running')) {
      if (Date.now() > deadline) throw new Error(`task ${id} did not start`)
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(await lab.inHost(['nft', 'list', 'map', 'inet', 'aviary', 'guest_fwd'])).toContain(lab.guests[0]!.ip)
    s.proc.kill('SIGKILL')
    await new Promise((r) => s.proc.once('exit', r))
    const before = rooterLog.length
    s = await lab.serve(dataDir)
    // The restarted service has the rooter clear what the dead one left, before any run.
    const until = Date.now() + 30_000
    while (!/flushed the grants of service [0-9a-f]{8}: 10\.211\.1\.10;/.test(rooterLog.slice(before))) {
      if (Date.now() > until) throw new Error(`the rooter was not asked to flush: ${rooterLog.slice(before)}`)
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(await waitForTask(s, id, FINAL, 150_000)).toBe('reported')
    expect((await view(id)).route).toBe('internet')
    for (const map of ['guest_in', 'guest_fwd', 'guest_back', 'guest_pre', 'guest_post']) {
      expect(await lab.inHost(['nft', 'list', 'map', 'inet', 'aviary', map]), map).not.toContain(lab.guests[0]!.ip)
    }
    expect(await lab.inHost(['nft', 'list', 'table', 'inet', 'aviary'])).not.toMatch(/chain g_/)
  }, 240_000)
})
