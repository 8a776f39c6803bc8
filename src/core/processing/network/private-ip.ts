// Which destination addresses are "private" for network.hosts: Cuckoo 2's list for IPv4
// (processing/network.py `_is_private_ip`: RFC 1918, loopback, link-local, CGNAT, multicast, test
// nets, reserved). Cuckoo's check fails open for IPv6 (every IPv6 address counted as public, even
// fe80::); Aviary treats the IPv6 equivalents (unspecified, loopback, link-local, ULA, multicast,
// documentation) as private.
import { isIPv4 } from 'node:net'

const V4_NETS: [number, number][] = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24',
  '240.0.0.0/4', '255.255.255.255/32', '224.0.0.0/4'
].map((n) => {
  const [addr, bits] = n.split('/')
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0
  return [(v4ToInt(addr ?? '') & mask) >>> 0, mask]
})

function v4ToInt(ip: string): number {
  const p = ip.split('.')
  return ((Number(p[0]) << 24) | (Number(p[1]) << 16) | (Number(p[2]) << 8) | Number(p[3])) >>> 0
}

export function isPrivateIp(ip: string): boolean {
  if (isIPv4(ip)) {
    const n = v4ToInt(ip)
    return V4_NETS.some(([net, mask]) => ((n & mask) >>> 0) === net)
  }
  const s = ip.toLowerCase()
  if (s === '::' || s === '::1') return true
  if (s.startsWith('::ffff:')) return isPrivateIp(s.slice(7))
  return /^fe[89ab]/.test(s) || /^f[cd]/.test(s) || s.startsWith('ff') || s.startsWith('2001:db8:')
}
