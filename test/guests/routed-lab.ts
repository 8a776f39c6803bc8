// A lab for the routes (docs/network.md), all in network namespaces a test makes and removes:
//   host      the analysis host: a bridge for the guests (10.211.L.1/24), a link to the internet
//             (up0, 203.0.113.1/24, default route), a link to a LAN (lan0, 192.168.77.1/24),
//             forwarding on. The rooter (root) and the service (as nobody) run here; the test
//             reaches the service over a management link (10.212.L.2 here, 10.212.L.1 in the root
//             namespace).
//   upstream  "the internet": 203.0.113.2 on the link, 198.51.100.7 on its loopback with HTTP,
//             HTTPS, UDP echo and a DNS server answering every name with 198.51.100.7
//   lan       "the LAN": 192.168.77.2 with HTTP, HTTPS and UDP echo
//   vpn       the far end of a VPN (vpn0, 192.0.2.1/24 on the host, routing table 100 of the host
//             holding its default route): it also answers as 198.51.100.7, so a guest on the VPN
//             route reaches "the internet" there, and the lab tells the two paths apart
//   ipv6      (option) fd11:211:L::1/64 on the bridge and fd11:211:L::(10+i)/64 on each guest, as a
//             hand-made bridge or a host-only network with IPv6 has; link-local addresses exist
//             on every lab link either way
//   listener  (hostListener()) TCP 7000 and UDP 7001 on every host address, v4 and v6: the analyst
//             host's own services, logged (seen('host'))
//   guests    on the bridge (10.211.L.10+i), resolving through the upstream's DNS, each with a
//             private /tmp and a private copy of the system's trust store (/etc/ssl,
//             /usr/local/share/ca-certificates), so the analyzer's CA changes stay inside
// Names: avrl<L>h, avrl<L>u, avrl<L>l, avrl<L>v, avrl<L>g<i>; root-namespace link avrl<L>m. L is 1..9.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { ip, killGroup, spawnIsolated, type ExecOptions } from './netns-guest'

const run = promisify(execFile)
const NOBODY = 65534

export interface LabGuest {
  ns: string
  ip: string
  /** The guest's veth on the host's bridge: where capture listens. */
  hostIf: string
  tmpDir: string
  exec(cmd: string[], opts?: ExecOptions): ChildProcess
  startAgent(): Promise<void>
}

export interface RoutedLab {
  dir: string
  host: string
  net: string
  bridgeIp: string
  mgmtIp: string
  upstreamIp: string
  natIp: string
  /** The host's address on the VPN link: what the VPN's far end sees. */
  vpnNatIp: string
  lanIp: string
  guests: LabGuest[]
  /** What the upstream, LAN, VPN servers and the host's listener saw (JSON lines). */
  seen(which: 'upstream' | 'lan' | 'vpn' | 'host'): { proto: string; port: number; client: string; path?: string; name?: string; host?: string; local?: string }[]
  /** Starts the host's listener (TCP 7000, UDP 7001 on every address of the host namespace). */
  hostListener(): Promise<void>
  /** The host's IPv6 link-local address on the bridge. */
  bridgeLinkLocal(): Promise<string>
  /** Runs a command in the host namespace (as root). */
  inHost(cmd: string[]): Promise<string>
  /** Starts the rooter; `onOutput` gets everything it writes, from its first line. */
  startRooter(onOutput?: (text: string) => void): Promise<ChildProcess>
  /** `aviary serve` in the host namespace as nobody; `dataDir` must be nobody's. */
  serve(dataDir: string): Promise<{ proc: ChildProcess; url: string }>
  /** A data directory nobody owns, with this machines.json. */
  dataDir(machines: unknown): string
  /** A copy of tcpdump that may capture without root (cap_net_raw, cap_net_admin), for nobody. */
  tcpdump: string
  close(): Promise<void>
}

const PROJECT = path.resolve('.')

export async function createRoutedLab(o: { index: number; guests: number; ipv6?: boolean }): Promise<RoutedLab> {
  const L = o.index
  if (!Number.isInteger(L) || L < 1 || L > 9) throw new Error('routed lab index must be 1..9')
  const host = `avrl${L}h`
  const upstream = `avrl${L}u`
  const lan = `avrl${L}l`
  const vpn = `avrl${L}v`
  const mgmt = `avrl${L}m`
  const net = `10.211.${L}`
  const guestNs = Array.from({ length: o.guests }, (_, i) => `avrl${L}g${i}`)
  const children = new Set<ChildProcess>()
  const dir = mkdtempSync(path.join(tmpdir(), `aviary-lab${L}-`))
  chmodSync(dir, 0o755)

  const cleanup = async (): Promise<void> => {
    for (const c of children) killGroup(c)
    children.clear()
    for (const ns of [host, upstream, lan, vpn, ...guestNs]) {
      const pids = await run('ip', ['netns', 'pids', ns]).then((r) => r.stdout.split(/\s+/).filter(Boolean), () => [])
      for (const pid of pids) { try { process.kill(Number(pid), 'SIGKILL') } catch { /* gone */ } }
      await run('ip', ['netns', 'del', ns]).catch(() => undefined)
      rmSync(path.join('/etc/netns', ns), { recursive: true, force: true })
    }
    await run('ip', ['link', 'del', mgmt]).catch(() => undefined)
  }
  await cleanup()
  const bg = (ns: string, cmd: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess => {
    const c = spawn('ip', ['netns', 'exec', ns, ...cmd], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env })
    children.add(c)
    return c
  }
  const ready = (c: ChildProcess, word: string, what: string): Promise<void> => new Promise((resolve, reject) => {
    let out = ''
    const on = (b: Buffer): void => {
      out += b.toString()
      if (out.includes(word)) resolve()
    }
    c.stdout?.on('data', on)
    c.stderr?.on('data', on)
    c.once('exit', (code) => reject(new Error(`${what} exited (${code}): ${out.slice(-2000)}`)))
  })

  try {
    for (const ns of [host, upstream, lan, vpn]) {
      await ip('netns', 'add', ns)
      await ip('-n', ns, 'link', 'set', 'lo', 'up')
    }
    // management link: root ↔ host
    await ip('link', 'add', mgmt, 'type', 'veth', 'peer', 'name', 'mgmt0')
    await ip('link', 'set', 'mgmt0', 'netns', host)
    await ip('addr', 'add', `10.212.${L}.1/30`, 'dev', mgmt)
    await ip('link', 'set', mgmt, 'up')
    await ip('-n', host, 'addr', 'add', `10.212.${L}.2/30`, 'dev', 'mgmt0')
    await ip('-n', host, 'link', 'set', 'mgmt0', 'up')
    // the guests' bridge
    await ip('-n', host, 'link', 'add', 'br0', 'type', 'bridge')
    await ip('-n', host, 'addr', 'add', `${net}.1/24`, 'dev', 'br0')
    await ip('-n', host, 'link', 'set', 'br0', 'up')
    if (o.ipv6 === true) await ip('-n', host, '-6', 'addr', 'add', `fd11:211:${L}::1/64`, 'dev', 'br0', 'nodad')
    // the internet
    await ip('-n', host, 'link', 'add', 'up0', 'type', 'veth', 'peer', 'name', 'up1', 'netns', upstream)
    await ip('-n', host, 'addr', 'add', '203.0.113.1/24', 'dev', 'up0')
    await ip('-n', host, 'link', 'set', 'up0', 'up')
    await ip('-n', upstream, 'addr', 'add', '203.0.113.2/24', 'dev', 'up1')
    await ip('-n', upstream, 'link', 'set', 'up1', 'up')
    await ip('-n', upstream, 'addr', 'add', '198.51.100.7/32', 'dev', 'lo')
    await ip('-n', upstream, 'route', 'add', 'default', 'via', '203.0.113.1')
    await ip('-n', host, 'route', 'add', 'default', 'via', '203.0.113.2')
    // the LAN
    await ip('-n', host, 'link', 'add', 'lan0', 'type', 'veth', 'peer', 'name', 'lan1', 'netns', lan)
    await ip('-n', host, 'addr', 'add', '192.168.77.1/24', 'dev', 'lan0')
    await ip('-n', host, 'link', 'set', 'lan0', 'up')
    await ip('-n', lan, 'addr', 'add', '192.168.77.2/24', 'dev', 'lan1')
    await ip('-n', lan, 'link', 'set', 'lan1', 'up')
    await ip('-n', lan, 'route', 'add', 'default', 'via', '192.168.77.1')
    // the VPN: its own link and routing table
    await ip('-n', host, 'link', 'add', 'vpn0', 'type', 'veth', 'peer', 'name', 'vpn1', 'netns', vpn)
    await ip('-n', host, 'addr', 'add', '192.0.2.1/24', 'dev', 'vpn0')
    await ip('-n', host, 'link', 'set', 'vpn0', 'up')
    await ip('-n', host, 'route', 'add', 'default', 'via', '192.0.2.2', 'dev', 'vpn0', 'table', '100')
    await ip('-n', vpn, 'addr', 'add', '192.0.2.2/24', 'dev', 'vpn1')
    await ip('-n', vpn, 'link', 'set', 'vpn1', 'up')
    await ip('-n', vpn, 'addr', 'add', '198.51.100.7/32', 'dev', 'lo')
    await ip('-n', vpn, 'route', 'add', 'default', 'via', '192.0.2.1')
    await run('ip', ['netns', 'exec', host, 'sysctl', '-qw', 'net.ipv4.ip_forward=1'])

    // the servers, with a certificate of the lab's own
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'server.key'), '-out', path.join(dir, 'server.crt'),
      '-days', '2', '-subj', '/CN=upstream.example', '-addext', 'subjectAltName=DNS:upstream.example,DNS:lan.example,IP:198.51.100.7,IP:192.168.77.2'], { stdio: 'ignore' })
    chmodSync(path.join(dir, 'server.crt'), 0o644)
    const servers = path.resolve('test/guests/lab-servers.mjs')
    for (const [ns, addr, name, dns] of [[upstream, '198.51.100.7', 'upstream', true], [lan, '192.168.77.2', 'lan', false], [vpn, '198.51.100.7', 'vpn', true]] as const) {
      const c = bg(ns, [process.execPath, servers, '--ip', addr, '--name', name, '--log', path.join(dir, `${name}.log`),
        '--cert', path.join(dir, 'server.crt'), '--key', path.join(dir, 'server.key'), ...(dns ? ['--dns'] : [])])
      await ready(c, 'ready', `${name} servers`)
    }

    // tcpdump that nobody may run
    const tcpdump = path.join(dir, 'tcpdump')
    cpSync(execFileSync('sh', ['-c', 'command -v tcpdump'], { encoding: 'utf8' }).trim(), tcpdump)
    chmodSync(tcpdump, 0o755)
    execFileSync('setcap', ['cap_net_raw,cap_net_admin=eip', tcpdump])

    // the guests
    const guests: LabGuest[] = []
    for (const [i, ns] of guestNs.entries()) {
      const gip = `${net}.${10 + i}`
      const hostIf = `vg${i}`
      await ip('netns', 'add', ns)
      await ip('-n', ns, 'link', 'set', 'lo', 'up')
      await ip('-n', host, 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
      await ip('-n', host, 'link', 'set', hostIf, 'master', 'br0')
      await ip('-n', host, 'link', 'set', hostIf, 'up')
      await ip('-n', ns, 'addr', 'add', `${gip}/24`, 'dev', 'eth0')
      await ip('-n', ns, 'link', 'set', 'eth0', 'up')
      await ip('-n', ns, 'route', 'add', 'default', 'via', `${net}.1`)
      if (o.ipv6 === true) await ip('-n', ns, '-6', 'addr', 'add', `fd11:211:${L}::${10 + i}/64`, 'dev', 'eth0', 'nodad')
      mkdirSync(path.join('/etc/netns', ns), { recursive: true })
      writeFileSync(path.join('/etc/netns', ns, 'resolv.conf'), 'nameserver 198.51.100.7\noptions timeout:1 attempts:1\n')
      const gdir = path.join(dir, `guest${i}`)
      const tmp = path.join(gdir, 'tmp')
      mkdirSync(tmp, { recursive: true })
      chmodSync(tmp, 0o1777)
      // The guest's own trust store: the analyzer's changes to it (the proxy's CA) stay in this copy.
      const ssl = path.join(gdir, 'etc-ssl')
      const local = path.join(gdir, 'local-ca')
      cpSync('/etc/ssl', ssl, { recursive: true, verbatimSymlinks: true })
      // Not the host's egress proxy CA, which a VM would not have: where this runs (CI's machines
      // too), a .pth file in Python's site-packages appends that CA (certs/sandboxing-egress-ca.pem)
      // to certifi's bundle, /etc/ssl/certs/ca-certificates.crt for Debian's python3, at every start
      // of Python whose bundle does not end with it. A Python sample then wrote the bundle right
      // after the analyzer had appended the proxy's CA: the analyzer rightly left that write in
      // place, and the store was not as before. Without the file the hook does nothing.
      rmSync(path.join(ssl, 'certs', 'sandboxing-egress-ca.pem'), { force: true })
      mkdirSync(local, { recursive: true })
      const binds: [string, string][] = [[ssl, '/etc/ssl'], [local, '/usr/local/share/ca-certificates']]
      const exec = (cmd: string[], eo: ExecOptions = {}): ChildProcess => {
        const c = spawnIsolated(ns, tmp, cmd, eo, binds)
        children.add(c)
        return c
      }
      const startAgent = async (): Promise<void> => {
        exec([process.execPath, path.join(PROJECT, 'bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000'], { cwd: PROJECT })
        const end = Date.now() + 30_000
        while (!(await run('ip', ['netns', 'exec', ns, 'ss', '-Hltn', 'sport = :8000']).then((r) => r.stdout.includes('8000'), () => false))) {
          if (Date.now() > end) throw new Error(`the agent of ${ns} did not listen`)
          await new Promise((r) => setTimeout(r, 100))
        }
      }
      guests.push({ ns, ip: gip, hostIf, tmpDir: tmp, exec, startAgent })
    }

    const lab: RoutedLab = {
      dir, host, net, bridgeIp: `${net}.1`, mgmtIp: `10.212.${L}.2`, upstreamIp: '198.51.100.7', natIp: '203.0.113.1', vpnNatIp: '192.0.2.1', lanIp: '192.168.77.2',
      guests, tcpdump,
      seen: (which) => {
        const f = path.join(dir, `${which}.log`)
        return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []
      },
      inHost: async (cmd) => (await run('ip', ['netns', 'exec', host, ...cmd])).stdout,
      hostListener: async () => {
        const c = bg(host, [process.execPath, path.resolve('test/guests/host-listener.mjs'), '--log', path.join(dir, 'host.log'), '--port', '7000'])
        await ready(c, 'ready', 'the host listener')
      },
      bridgeLinkLocal: async () => {
        const links = JSON.parse((await run('ip', ['-n', host, '-j', '-6', 'addr', 'show', 'dev', 'br0', 'scope', 'link'])).stdout) as { addr_info?: { family?: string; local?: string }[] }[]
        const a = links.flatMap((l) => l.addr_info ?? []).find((x) => x.family === 'inet6')?.local
        if (a === undefined) throw new Error('the bridge has no IPv6 link-local address')
        return a
      },
      startRooter: async (onOutput) => {
        const c = bg(host, [process.execPath, path.join(PROJECT, 'bin/aviary.js'), 'rooter', '--guest-network', `${net}.0/24`, '--interface', 'up0',
          '--vpn', 'vpn0:100', '--inetsim', `${net}.1`, '--socket', path.join(dir, 'rooter.sock'), '--group', 'nogroup'],
        // INetSim's configuration folder then lands in the lab's folder, which close() removes:
        // the lab ends the rooter with SIGKILL, and no next rooter comes to remove it.
        { ...process.env, TMPDIR: dir })
        if (onOutput) c.stderr?.on('data', (b: Buffer) => onOutput(b.toString()))
        await ready(c, 'listening on', 'the rooter')
        return c
      },
      dataDir: (machines) => {
        const d = path.join(dir, `data-${Math.random().toString(36).slice(2, 8)}`)
        mkdirSync(d)
        writeFileSync(path.join(d, 'machines.json'), JSON.stringify(machines))
        chownSync(d, NOBODY, NOBODY)
        chownSync(path.join(d, 'machines.json'), NOBODY, NOBODY)
        return d
      },
      serve: (dataDir) => new Promise((resolve, reject) => {
        const proc = spawn('ip', ['netns', 'exec', host, 'setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups',
          process.execPath, path.join(PROJECT, 'bin/aviary.js'), 'serve', '-H', `10.212.${L}.2`, '-p', '0', '--data', dataDir],
        { cwd: PROJECT, env: { ...process.env, HOME: dataDir }, stdio: ['ignore', 'ignore', 'pipe'], detached: true })
        children.add(proc)
        let err = ''
        proc.stderr!.on('data', (b: Buffer) => {
          err = (err + b.toString()).slice(-8192)
          const m = /analysis API on (http:\/\/\S+)/.exec(err)
          if (m) resolve({ proc, url: m[1]! })
        })
        proc.once('exit', (code) => reject(new Error(`aviary serve exited (${code}): ${err}`)))
      }),
      close: async () => {
        await cleanup()
        rmSync(dir, { recursive: true, force: true })
      }
    }
    return lab
  } catch (err) {
    await cleanup()
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
}
