// `aviary setup`: everything the machine builder needs root for, in one command, each step said
// exactly (`--print` shows them and does nothing). Everything else (building images, making and
// running machines, the service) runs as the user.
//   1. groups: the user into `libvirt` (to use qemu:///system: defining and running domains) and,
//      where /dev/kvm exists, `kvm`; the rooter's socket group `aviary` is step 4's
//   2. subordinate ids for the user, if it has none (mmdebstrap builds images in a user namespace)
//   3. the guests' network, owned by Aviary: a libvirt network with `<forward mode='open'/>` on a
//      bridge of its own (libvirt adds no firewall rule for it), started and set to autostart
//   4. the rooter (`aviary rooter install`), with this network among its guest networks (those it
//      had are kept): its default deny is the network's only firewall
//   5. the data folder: libvirt's QEMU (user libvirt-qemu) may pass through the folders above
//      `machines/` and `images/` (an ACL entry, `setfacl -m u:libvirt-qemu:x`, as virt-manager
//      does for images in a home folder; Debian 12 makes homes 0700)
//   6. tcpdump may capture as the user (cap_net_raw, cap_net_admin), for each task's pcap
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs'
import { networkInterfaces } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { createLayout } from '../storage/layout'
import { Libvirt, ipToInt, parseNetworkXml, toIp } from './libvirt-host'
import { networkXml } from './libvirt-xml'
import { BuildInputError } from './linux-plan'

const run = promisify(execFile)

export const DEFAULT_NETWORK = { name: 'aviary', cidr: '10.80.0.0/24' }
const ROOTER_CONFIG = '/etc/aviary/rooter.json'

export interface GuestNetwork {
  name: string
  bridge: string
  hostIp: string
  prefix: number
  /** The network's own address, e.g. 10.80.0.0/24. */
  cidr: string
}

/** The network of `name` and `cidr` (host address: the first of the network); the bridge `<name>-br0`. */
export function guestNetwork(name: string, cidr: string): GuestNetwork {
  if (!/^[a-z][a-z0-9]{0,8}$/.test(name)) throw new BuildInputError('network', `${JSON.stringify(name)}: lower-case letters and digits, starting with a letter, at most 9`)
  const m = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(cidr)
  const prefix = Number(m?.[2])
  if (!m || m[1]!.split('.').some((o) => Number(o) > 255) || prefix < 16 || prefix > 28) {
    throw new BuildInputError('subnet', `${JSON.stringify(cidr)} is not an IPv4 network from /16 to /28, e.g. ${DEFAULT_NETWORK.cidr}`)
  }
  const base = (ipToInt(m[1]!) & (~0 << (32 - prefix))) >>> 0
  return { name, bridge: `${name}-br0`, hostIp: toIp(base + 1), prefix, cidr: `${toIp(base)}/${prefix}` }
}

/** Host addresses inside `n` that are not the network's own bridge: the subnet is taken. */
function clashes(n: GuestNetwork): string[] {
  const base = ipToInt(n.cidr.split('/')[0]!)
  const size = 2 ** (32 - n.prefix)
  return Object.entries(networkInterfaces()).flatMap(([ifname, addrs]) => (addrs ?? [])
    .filter((a) => a.family === 'IPv4' && ifname !== n.bridge && ((ipToInt(a.address) - base) >>> 0) < size)
    .map((a) => `${a.address} on ${ifname}`))
}

/**
 * Where libvirt's system daemon records each guest's MAC address (`<bridge>.macs`) when the guest
 * starts. libvirt 9.0 makes this folder only when it runs dnsmasq for some network; ours has
 * neither DHCP nor DNS, so on a host where no other network ever ran dnsmasq the folder is not
 * there, and starting any machine fails: "Failed to create file
 * '/var/lib/libvirt/dnsmasq/<bridge>.macs.new'". Seen on a fresh host: the first machine built.
 */
export const LIBVIRT_MAC_DIR = '/var/lib/libvirt/dnsmasq'

/**
 * Defines, starts and autostarts the network; a network of that name with another bridge or
 * address is refused. Makes libvirt's MAC folder (`macDir`; LIBVIRT_MAC_DIR for the system
 * daemon, none otherwise) if it is missing, which takes root, as `aviary setup` is run.
 */
export async function ensureGuestNetwork(lv: Libvirt, n: GuestNetwork, macDir: string | null = lv.uri === 'qemu:///system' ? LIBVIRT_MAC_DIR : null): Promise<'made' | 'there'> {
  if (macDir !== null && !existsSync(macDir)) mkdirSync(macDir, { recursive: true, mode: 0o755 })
  const xml = await lv.netXml(n.name)
  let made: 'made' | 'there' = 'there'
  if (xml === null) {
    const taken = clashes(n)
    if (taken.length > 0) throw new BuildInputError('subnet', `${n.cidr} is in use on this host (${taken.join(', ')}): choose another with --subnet`)
    await lv.define('net-define', networkXml(n), `defining the network ${n.name}`)
    made = 'made'
  } else {
    const have = parseNetworkXml(xml)
    if (!have || have.bridge !== n.bridge || have.hostIp !== n.hostIp || have.prefix !== n.prefix) {
      throw new BuildInputError('network', `libvirt has a network '${n.name}' already, on ${have?.bridge ?? '?'} with ${have?.hostIp ?? '?'}/${have?.prefix ?? '?'}; ` +
        `choose another name (--network) or that subnet (--subnet)`)
    }
  }
  if (!(await lv.netActive(n.name))) await lv.run(['net-start', n.name], `starting the network ${n.name}`)
  await lv.run(['net-autostart', n.name], `setting the network ${n.name} to start with libvirt`)
  return made
}

export interface SetupOptions {
  user: string
  data?: string
  network?: string
  subnet?: string
  /** The `aviary` command to run `rooter install` with (default: this process's). */
  aviary?: string[]
  print?: boolean
  log?: (line: string) => void
}

export interface Step {
  say: string
  cmd?: string[]
  act?: () => Promise<void>
}

async function out(cmd: string, args: string[]): Promise<string> {
  return (await run(cmd, args, { encoding: 'utf8' })).stdout
}

/** The steps of `aviary setup`, in order: shown by --print, run otherwise. */
export async function setupSteps(o: SetupOptions): Promise<Step[]> {
  if (!/^[a-z_][a-z0-9_-]{0,31}\$?$/.test(o.user)) throw new BuildInputError('user', `${JSON.stringify(o.user)} is not a user name`)
  const pw = (await out('getent', ['passwd', o.user]).catch(() => '')).trim().split(':')
  if (pw.length < 7) throw new BuildInputError('user', `there is no user '${o.user}' on this host`)
  const home = pw[5]!
  const net = guestNetwork(o.network ?? DEFAULT_NETWORK.name, o.subnet ?? DEFAULT_NETWORK.cidr)
  const data = path.resolve(o.data ?? path.join(home, '.local/share/aviary'))
  const layout = createLayout(data)
  const root = pw[2] === '0'
  const groups = root ? [] : ['libvirt', ...(existsSync('/dev/kvm') ? ['kvm'] : [])]
  const steps: Step[] = groups.map((g) => ({ say: `${o.user} joins group ${g}`, cmd: ['usermod', '--append', '--groups', g, o.user] }))

  const subuid = existsSync('/etc/subuid') ? readFileSync('/etc/subuid', 'utf8') : ''
  if (!root && !subuid.split('\n').some((l) => l.split(':')[0] === o.user)) {
    const top = Math.max(100000, ...subuid.split('\n').map((l) => l.split(':')).filter((f) => f.length === 3).map((f) => Number(f[1]) + Number(f[2])))
    const range = `${top}-${top + 65535}`
    steps.push({ say: `${o.user} gets subordinate ids ${range} (mmdebstrap builds images in a user namespace)`, cmd: ['usermod', '--add-subuids', range, '--add-subgids', range, o.user] })
  }

  steps.push({
    say: `the guests' network '${net.name}': bridge ${net.bridge}, host ${net.hostIp}/${net.prefix}, <forward mode='open'/>, no DHCP, no DNS; started and autostarted ` +
      `(and libvirt's ${LIBVIRT_MAC_DIR}, which it makes only for networks with dnsmasq)\n${networkXml(net)}`,
    act: async () => {
      const how = await ensureGuestNetwork(new Libvirt('qemu:///system'), net)
      o.log?.(how === 'made' ? `made the network ${net.name}` : `the network ${net.name} was there`)
    }
  })

  let rooterFile: { guest_networks?: string[]; interfaces?: string[]; vpn?: Record<string, number>; inetsim?: { address: string } } = {}
  try {
    rooterFile = JSON.parse(readFileSync(ROOTER_CONFIG, 'utf8')) as typeof rooterFile
  } catch {
    /* no rooter installed yet */
  }
  const nets = [...new Set([...(rooterFile.guest_networks ?? []), net.cidr])]
  const aviary = o.aviary ?? [process.execPath, process.argv[1] ?? 'aviary']
  steps.push({
    say: `the rooter with ${nets.join(', ')} among its guest networks (denied by default), and ${o.user} in its group aviary`,
    cmd: [...aviary, 'rooter', 'install', ...nets.flatMap((c) => ['--guest-network', c]), ...(rooterFile.interfaces ?? []).flatMap((i) => ['--interface', i]),
      ...Object.entries(rooterFile.vpn ?? {}).flatMap(([i, t]) => ['--vpn', `${i}:${t}`]), ...(rooterFile.inetsim ? ['--inetsim', rooterFile.inetsim.address] : []), '--user', o.user]
  }, { say: 'the rooter restarted on its new configuration (its grants survive: docs/network.md)', cmd: ['systemctl', 'restart', 'aviary-rooter.service'] })

  for (const dir of [layout.machinesDir, layout.imagesDir, layout.cacheDir]) {
    steps.push({ say: `${dir}, owned by ${o.user}`, act: async () => {
      mkdirSync(dir, { recursive: true })
      await run('chown', [`${o.user}:`, dir])
    } })
  }
  steps.push(...qemuAccessSteps(data))
  const tcpdump = (await out('sh', ['-c', 'command -v tcpdump']).catch(() => '/usr/bin/tcpdump')).trim() || '/usr/bin/tcpdump'
  steps.push({ say: `${tcpdump} may capture for the user's service`, cmd: ['setcap', 'cap_net_raw,cap_net_admin=eip', tcpdump] })
  return steps
}

/**
 * What lets libvirt's QEMU (user libvirt-qemu) reach the machines' disks and the images under
 * `data`: search permission on every folder on the way that others may not pass through.
 */
export function qemuAccessSteps(data: string): Step[] {
  const layout = createLayout(data)
  const above: string[] = []
  for (let d = layout.root; d !== path.dirname(d); d = path.dirname(d)) above.unshift(d)
  const steps: Step[] = []
  for (const d of [...above, layout.machinesDir, layout.imagesDir]) {
    const open = existsSync(d) && (statSync(d).mode & 0o001) !== 0
    if (!open) steps.push({ say: `libvirt-qemu may pass through ${d}`, cmd: ['setfacl', '--modify', 'user:libvirt-qemu:x', d] })
  }
  return steps
}

/** Runs (or, with `print`, shows) the steps; returns the lines to print. */
export async function runSetup(o: SetupOptions): Promise<string[]> {
  const steps = await setupSteps(o)
  const lines: string[] = []
  for (const [i, s] of steps.entries()) {
    lines.push(`${i + 1}. ${s.say}${s.cmd ? `\n   ${s.cmd.join(' ')}` : ''}`)
    if (o.print) continue
    o.log?.(`${i + 1}/${steps.length} ${s.say.split('\n')[0]}`)
    if (s.act) await s.act()
    if (s.cmd) await run(s.cmd[0]!, s.cmd.slice(1), { encoding: 'utf8' }).catch((err: { stderr?: string; message: string }) => {
      throw new Error(`${s.cmd!.join(' ')}: ${(err.stderr ?? err.message).trim()}`)
    })
  }
  if (!o.print) lines.push(`Done. ${o.user} must log in again (or run \`newgrp libvirt\`) for the new groups to apply; then: aviary machines create linux`)
  return lines
}
