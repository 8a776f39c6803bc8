// A lab for the machines `aviary machines create linux` makes: real libvirt/QEMU guests (TCG) on a
// libvirt network the builder's own setup code makes, in the root network namespace (where
// libvirtd puts bridges and taps), judged from outside the guests:
//   network   avlx: bridge avlx-br0, host 10.216.0.1/24, <forward mode='open'/> (setup.ts)
//   upstream  "the internet": a namespace avlxup behind a veth (avlxu0 10.217.0.1/30 ↔ up1
//             10.217.0.2/30), serving HTTP, a UDP echo and DNS on 198.51.100.7 (lab-servers.mjs),
//             routed from the host by a /32; the host forwards between avlx-br0 and avlxu0 (their
//             own `forwarding` sysctls: the host's other interfaces are left as they are, and the
//             global ip_forward libvirt turns on when it starts the network is put back)
//   listener  TCP 7216 and UDP 7217 on every host address, v4 and v6 (host-listener.mjs)
//   rooter    `aviary rooter` for 10.216.0.0/24 on a socket of the lab's: the only firewall
// Every name is avlx*, so nothing of other tests (avkvm*, avrl*) or of a real install (aviary*)
// is touched. A test that must run beside linux-machines.test.ts gives the lab a network of its
// own (`{ network, subnet }`): its domains, bridge and upstream names then start with that name. Images and the package cache live in out/linux-guest/ and outlast the runs.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { ensureLibvirtd } from '../fixtures/libvirtd'
import { Libvirt } from '../../src/core/builder/libvirt-host'
import { ensureGuestNetwork, guestNetwork, qemuAccessSteps, type GuestNetwork } from '../../src/core/builder/setup'

const run = promisify(execFile)
const ROOT = path.resolve('.')
export const URI = 'qemu:///system'
export const NETWORK = guestNetwork('avlx', '10.216.0.0/24')
export const UPSTREAM_IP = '198.51.100.7'
export const LISTEN_PORT = 7216
/** Where the built images and the package cache stay between runs (like out/test-guest/). */
export const PERSISTENT = path.join(ROOT, 'out/linux-guest')
/** The host's links that labs need forwarding on, one empty file each (see restoreForwarding). */
const FORWARDING = path.join(tmpdir(), 'aviary-avlx-forwarding')

export interface AvlxLab {
  lv: Libvirt
  /** The lab's libvirt network (NETWORK unless another was asked for). */
  network: GuestNetwork
  /** A data folder of the test's own, its images/ and cache/ the persistent ones. */
  dataDir: string
  dir: string
  seen(which: 'upstream' | 'host'): { proto: string; port: number; client: string; path?: string; local?: string }[]
  startUpstream(): Promise<void>
  startListener(): Promise<void>
  startRooter(): Promise<ChildProcess>
  rooterSocket: string
  close(): Promise<void>
}

async function removeOurDomains(lv: Libvirt, network: string): Promise<void> {
  for (const d of (await lv.domainNames()).filter((n) => n.startsWith(`${network}-`))) await lv.remove(d)
}

/**
 * The lab on NETWORK (avlx, 10.216.0.0/24), or on a network of another name and subnet, so two
 * tests can run at once. startUpstream is for the default lab (its transit link is 10.217.0.0/30).
 */
export async function createAvlxLab(o: { network?: string; subnet?: string } = {}): Promise<AvlxLab> {
  const net = o.network === undefined ? NETWORK : guestNetwork(o.network, o.subnet ?? NETWORK.cidr)
  const NS = `${net.name}up`
  const UPLINK = `${net.name}u0`
  await ensureLibvirtd(URI)
  const lv = new Libvirt(URI)
  await removeOurDomains(lv, net.name)
  // libvirt turns IPv4 forwarding on for the whole host when it starts a network that forwards
  // (<forward mode='open'/> as NAT's), and new network namespaces inherit it: other tests (the
  // doctor's) expect the host as it was. It is put back at once; the lab forwards on its own two
  // links only (startUpstream), and puts it back again when it closes.
  const forwarding = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim()
  const restoreForwarding = async (): Promise<void> => {
    if (readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim() === forwarding) return
    // Writing ip_forward sets every interface's own `forwarding` to the same value (Linux copies
    // conf/all to each device), so putting it back to 0 also stopped another lab's links, which a
    // lab running beside this one (linux-machines beside a prepare-mode test then) saw as an unreachable
    // upstream. Each lab lists its links in FORWARDING before it sets them, and whoever puts
    // ip_forward back sets the listed links again at once.
    await run('sysctl', ['-qw', `net.ipv4.ip_forward=${forwarding}`])
    const links = readdirSync(FORWARDING).filter((l) => existsSync(`/proc/sys/net/ipv4/conf/${l}/forwarding`))
    if (links.length > 0) await run('sysctl', ['-qw', ...links.map((l) => `net.ipv4.conf.${l}.forwarding=1`)])
  }
  mkdirSync(FORWARDING, { recursive: true })
  const forwardLinks = [net.bridge, UPLINK]
  await ensureGuestNetwork(lv, net)
  await restoreForwarding()
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-avlx-'))
  const dataDir = path.join(dir, 'data')
  mkdirSync(dataDir)
  for (const sub of ['images', 'cache']) {
    mkdirSync(path.join(PERSISTENT, sub), { recursive: true })
    symlinkSync(path.join(PERSISTENT, sub), path.join(dataDir, sub))
  }
  mkdirSync(path.join(dataDir, 'machines'))
  // What `aviary setup` does for a data folder in a private home: libvirt's QEMU may pass through.
  for (const s of qemuAccessSteps(dataDir)) await run(s.cmd![0]!, s.cmd!.slice(1))
  const children = new Set<ChildProcess>()
  const bg = (cmd: string[], ready: string, what: string): Promise<ChildProcess> => new Promise((resolve, reject) => {
    const c = spawn(cmd[0]!, cmd.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    children.add(c)
    let out = ''
    const on = (b: Buffer): void => {
      out += b.toString()
      if (out.includes(ready)) resolve(c)
    }
    c.stdout!.on('data', on)
    c.stderr!.on('data', on)
    c.once('exit', (code) => reject(new Error(`${what} exited (${code}): ${out.slice(-2000)}`)))
  })
  const rooterSocket = path.join(dir, 'rooter.sock')
  let rooterStarted = false
  const removeUpstream = async (): Promise<void> => {
    for (const pid of await run('ip', ['netns', 'pids', NS]).then((r) => r.stdout.split(/\s+/).filter(Boolean), () => [])) {
      try { process.kill(Number(pid), 'SIGKILL') } catch { /* gone */ }
    }
    await run('ip', ['netns', 'del', NS]).catch(() => undefined)
    await run('ip', ['route', 'del', `${UPSTREAM_IP}/32`, 'dev', UPLINK]).catch(() => undefined)
    await run('ip', ['link', 'del', UPLINK]).catch(() => undefined)
  }
  await removeUpstream()
  const seen = (which: 'upstream' | 'host'): ReturnType<AvlxLab['seen']> => {
    const f = path.join(dir, `${which}.log`)
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as ReturnType<AvlxLab['seen']>[number]) : []
  }
  return {
    lv, network: net, dataDir, dir, seen, rooterSocket,
    startUpstream: async () => {
      const ip = (...a: string[]): Promise<unknown> => run('ip', a)
      await ip('netns', 'add', NS)
      await ip('link', 'add', UPLINK, 'type', 'veth', 'peer', 'name', 'up1', 'netns', NS)
      await ip('addr', 'add', '10.217.0.1/30', 'dev', UPLINK)
      await ip('link', 'set', UPLINK, 'up')
      await ip('-n', NS, 'addr', 'add', '10.217.0.2/30', 'dev', 'up1')
      await ip('-n', NS, 'link', 'set', 'up1', 'up')
      await ip('-n', NS, 'link', 'set', 'lo', 'up')
      await ip('-n', NS, 'addr', 'add', `${UPSTREAM_IP}/32`, 'dev', 'lo')
      await ip('-n', NS, 'route', 'add', 'default', 'via', '10.217.0.1')
      await ip('route', 'add', `${UPSTREAM_IP}/32`, 'via', '10.217.0.2', 'dev', UPLINK)
      for (const l of forwardLinks) writeFileSync(path.join(FORWARDING, l), '')
      await run('sysctl', ['-qw', ...forwardLinks.map((l) => `net.ipv4.conf.${l}.forwarding=1`)])
      await bg(['ip', 'netns', 'exec', NS, process.execPath, 'test/guests/lab-servers.mjs', '--ip', UPSTREAM_IP, '--name', 'upstream', '--log', path.join(dir, 'upstream.log'), '--dns'], 'ready', 'the upstream')
    },
    startListener: async () => {
      await bg([process.execPath, 'test/guests/host-listener.mjs', '--log', path.join(dir, 'host.log'), '--port', String(LISTEN_PORT)], 'ready', 'the host listener')
    },
    startRooter: () => {
      rooterStarted = true
      return bg([process.execPath, 'bin/aviary.js', 'rooter', '--guest-network', net.cidr, '--socket', rooterSocket], 'listening on', 'the rooter')
    },
    close: async () => {
      for (const c of children) {
        try { process.kill(-c.pid!, 'SIGTERM') } catch { /* gone */ }
      }
      await new Promise((r) => setTimeout(r, 500))
      // The rooter leaves its table when it stops (guests stay contained); this lab takes it away,
      // if it started one: the table is the host's (inet aviary), and a lab without a rooter
      // (a prepare-mode test's, then) removed the one linux-machines' rooter was using beside it.
      if (rooterStarted) await run(process.execPath, ['bin/aviary.js', 'rooter', 'remove', '--socket', rooterSocket], { cwd: ROOT }).catch(() => undefined)
      await removeOurDomains(lv, net.name).catch(() => undefined)
      for (const l of forwardLinks) rmSync(path.join(FORWARDING, l), { force: true })
      await removeUpstream()
      await lv.run(['net-destroy', net.name], `stopping ${net.name}`).catch(() => undefined)
      await lv.run(['net-undefine', net.name], `removing ${net.name}`).catch(() => undefined)
      await restoreForwarding()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
