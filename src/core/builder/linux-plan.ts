// What `aviary machines create linux` is asked for, checked once with the field named in every
// refusal, and the plan it turns into: each machine's name, domain, address, MAC and tap, taken
// from the network Aviary owns and the addresses machines.json uses already.
import { ipToInt, toIp, type NetworkInfo } from './libvirt-host'

/** What the user gives (CLI flags, or a form of the UI). */
export interface LinuxMachinesRequest {
  /** The machine's name (default `linux`); with `count` > 1, machines `<name>-1` … `<name>-<count>`. */
  name?: string
  count?: number
  memoryMiB?: number
  /** Default: 1 under TCG (emulation gains nothing from a second vCPU on a small host), 2 with KVM. */
  vcpus?: number
  /** The libvirt network `aviary setup` made (default `aviary`). */
  network?: string
  /** Build the image again even when it is built (the package cache keeps it offline). */
  rebuild?: boolean
  /** Fetch new package lists (needs Debian's archive) and build the image again. */
  refresh?: boolean
}

export interface LinuxMachinesSpec {
  names: string[]
  memoryMiB: number
  vcpus: number | null
  network: string
  rebuild: boolean
  refresh: boolean
}

export class BuildInputError extends Error {
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`)
  }
}

/** machines.json's rule for names (machinery/machines-config.ts), and room for `-<count>`. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$/
/** libvirt network names the builder derives bridge and tap names from (15 characters at most). */
const NETWORK = /^[a-z][a-z0-9]{0,8}$/
export const MAX_COUNT = 32

export function checkLinuxRequest(r: LinuxMachinesRequest): LinuxMachinesSpec {
  const name = r.name ?? 'linux'
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new BuildInputError('name', `${JSON.stringify(name)} is not a machine name: letters, digits, '_', '.', '-', starting with a letter or digit, at most 48`)
  }
  const count = r.count ?? 1
  if (!Number.isInteger(count) || count < 1 || count > MAX_COUNT) throw new BuildInputError('count', `${String(count)} is not a whole number from 1 to ${MAX_COUNT}`)
  const memoryMiB = r.memoryMiB ?? 1024
  if (!Number.isInteger(memoryMiB) || memoryMiB < 256 || memoryMiB > 65536) throw new BuildInputError('memory', `${String(memoryMiB)} MiB is not a whole number from 256 to 65536`)
  if (r.vcpus !== undefined && (!Number.isInteger(r.vcpus) || r.vcpus < 1 || r.vcpus > 32)) throw new BuildInputError('vcpus', `${String(r.vcpus)} is not a whole number from 1 to 32`)
  const network = r.network ?? 'aviary'
  if (typeof network !== 'string' || !NETWORK.test(network)) {
    throw new BuildInputError('network', `${JSON.stringify(network)} is not a network the builder can use: lower-case letters and digits, starting with a letter, at most 9 (the bridge and taps are named after it)`)
  }
  return {
    names: count === 1 ? [name] : Array.from({ length: count }, (_, i) => `${name}-${i + 1}`),
    memoryMiB, vcpus: r.vcpus ?? null, network, rebuild: r.rebuild === true || r.refresh === true, refresh: r.refresh === true
  }
}

export interface PlannedMachine {
  name: string
  /** The libvirt domain: `<network>-<name>`. */
  label: string
  ip: string
  mac: string
  /** The guest NIC's host side: `<network>-t<host number in hex>`, where capture listens. */
  tap: string
}

/**
 * The next free addresses of the network (from .101 on a /24 and larger, as Cuckoo's guides
 * number guests; from the host's address + 1 on smaller ones), skipping the host's and every
 * address in `used`; a MAC of QEMU's range made of the address (unique on the network).
 */
export function planMachines(spec: LinuxMachinesSpec, net: NetworkInfo, used: Set<string>): PlannedMachine[] {
  const size = 2 ** (32 - net.prefix)
  const base = (ipToInt(net.hostIp) & (net.prefix === 0 ? 0 : (~0 << (32 - net.prefix)))) >>> 0
  const first = size >= 256 ? 101 : (ipToInt(net.hostIp) - base) + 1
  const out: PlannedMachine[] = []
  for (let off = first; off < size - 1 && out.length < spec.names.length; off++) {
    const ip = toIp(base + off)
    if (ip === net.hostIp || used.has(ip)) continue
    const n = base + off
    const name = spec.names[out.length]!
    out.push({
      name,
      label: `${spec.network}-${name}`,
      ip,
      mac: `52:54:00:${[16, 8, 0].map((s) => ((n >>> s) & 255).toString(16).padStart(2, '0')).join(':')}`,
      tap: `${spec.network}-t${off.toString(16)}`
    })
  }
  if (out.length < spec.names.length) {
    throw new BuildInputError('count', `the network ${net.name} (${toIp(base)}/${net.prefix}) has ${out.length} free addresses left, not ${spec.names.length}`)
  }
  return out
}
