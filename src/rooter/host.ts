// What the rooter reads of the host when it builds rules: its own IPv4 networks (the internet
// route never reaches them), the interfaces on the guest networks (denied by default), whether it
// forwards, and the VPN policy rules it adds and removes.
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 10_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${file} ${args.join(' ')}: ${(stderr || err.message).trim().split('\n')[0]}`))
      else resolve(stdout)
    })
  })
}

const toInt = (ip: string): number => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0)
const toIp = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.')

interface Link {
  ifname: string
  addr_info?: { family: string; local: string; prefixlen: number }[]
}

const inNetwork = (ip: string, net: { address: string; prefix: number }): boolean => {
  const mask = net.prefix === 0 ? 0 : (~0 << (32 - net.prefix)) >>> 0
  return ((toInt(ip) & mask) >>> 0) === ((toInt(net.address) & mask) >>> 0)
}

/**
 * The host's interfaces with an IPv4 address on one of `networks` (where guests' packets arrive),
 * and whether each carries IPv6 (any inet6 address, link-local included).
 */
export async function guestInterfaces(networks: { address: string; prefix: number }[]): Promise<{ name: string; ipv6: boolean }[]> {
  const links = JSON.parse(await run('ip', ['-j', 'addr'])) as Link[]
  const out: { name: string; ipv6: boolean }[] = []
  for (const l of links) {
    if (l.ifname === 'lo') continue
    const info = l.addr_info ?? []
    if (info.some((a) => a.family === 'inet' && networks.some((n) => inNetwork(a.local, n)))) {
      out.push({ name: l.ifname, ipv6: info.some((a) => a.family === 'inet6') })
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name))
}

/** The interfaces this host's IPv4 default routes leave through. */
export async function defaultRouteInterfaces(): Promise<string[]> {
  const routes = JSON.parse(await run('ip', ['-j', '-4', 'route', 'show', 'default'])) as { dev?: string }[]
  return [...new Set(routes.map((r) => r.dev).filter((d): d is string => typeof d === 'string'))]
}

/** The networks of this host's IPv4 addresses, as CIDR (`ip -j -4 addr`), loopback left out. */
export async function hostNetworks(): Promise<string[]> {
  const links = JSON.parse(await run('ip', ['-j', '-4', 'addr'])) as { ifname: string; addr_info?: { local: string; prefixlen: number }[] }[]
  const out = new Set<string>()
  for (const l of links) {
    if (l.ifname === 'lo') continue
    for (const a of l.addr_info ?? []) {
      const p = a.prefixlen
      const base = (toInt(a.local) & (p === 0 ? 0 : (~0 << (32 - p)))) >>> 0
      if (p > 0) out.add(`${toIp(base)}/${p}`)
    }
  }
  return [...out]
}

export function forwarding(): boolean {
  try {
    return readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim() === '1'
  } catch {
    return false
  }
}

/** The priority of Aviary's policy rules (`ip rule`), so a flush finds them all and no other. */
export const RULE_PRIORITY = 7700

export async function addVpnRule(guest: string, table: number): Promise<void> {
  await run('ip', ['-4', 'rule', 'add', 'from', `${guest}/32`, 'lookup', String(table), 'priority', String(RULE_PRIORITY)])
}

export async function deleteVpnRule(guest: string, table: number): Promise<void> {
  await run('ip', ['-4', 'rule', 'del', 'from', `${guest}/32`, 'lookup', String(table), 'priority', String(RULE_PRIORITY)]).catch(() => undefined)
}

/** Removes every policy rule of Aviary's priority. */
export async function deleteAllVpnRules(): Promise<void> {
  for (let i = 0; i < 1024; i++) {
    const ok = await run('ip', ['-4', 'rule', 'del', 'priority', String(RULE_PRIORITY)]).then(() => true, () => false)
    if (!ok) return
  }
}

/** Whether `ifname` exists. */
export function hasInterface(ifname: string): boolean {
  try {
    readFileSync(`/sys/class/net/${ifname}/operstate`, 'utf8')
    return true
  } catch {
    return false
  }
}
