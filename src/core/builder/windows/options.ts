// What `aviary machines create windows` is asked for, checked once: everything a user types ends
// up in Autounattend.xml (user, password, computer name, product key, addresses, time zone,
// locale), in a domain XML (name, network, MAC) or in file paths, so each value is held to the
// vocabulary Windows or libvirt accepts and refused otherwise with the field named. The XML writer
// escapes every value as well (xml.ts): validation keeps Windows from choking, escaping keeps the
// file well formed whatever got through.
import { randomBytes } from 'node:crypto'
import { isIPv4 } from 'node:net'
import { AGENT_PORT } from '../../../guest-protocol/agent-api'

export type WindowsVersion = '10' | '11'
/** `bios`: SeaBIOS, MBR. `uefi`: OVMF as a read-only ROM, GPT (see domain-xml.ts for why not pflash). */
export type Firmware = 'bios' | 'uefi'

/** What the user gives (CLI flags, or a UI form later). Strings as typed; numbers already parsed. */
export interface WindowsMachineInput {
  name?: string
  version?: string
  firmware?: string
  edition?: string
  user?: string
  password?: string
  computerName?: string
  productKey?: string
  ip?: string
  prefix?: number
  gateway?: string
  dns?: string[]
  mac?: string
  network?: string
  memoryMiB?: number
  cpus?: number
  diskGiB?: number
  timeZone?: string
  locale?: string
  agentPort?: number
}

/** The checked settings every generator reads. */
export interface WindowsMachineSpec {
  name: string
  version: WindowsVersion
  firmware: Firmware
  /** As typed: an edition's name or index in install.wim; null lets the reader choose (editions.ts). */
  edition: string | null
  user: string
  password: string
  computerName: string
  productKey: string | null
  ip: string
  prefix: number
  gateway: string
  dns: string[]
  /** Lower case, colon-separated (libvirt's form). */
  mac: string
  network: string
  memoryMiB: number
  cpus: number
  diskGiB: number
  timeZone: string
  locale: string
  agentPort: number
}

/** A refused value; `field` is the option's name as the user typed it (`--<field>` on the CLI). */
export class WindowsSpecError extends Error {
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`)
  }
}

// Accounts Windows already has: reusing one fails late, in OOBE, where nobody watches.
const RESERVED_USERS = new Set(['administrator', 'guest', 'defaultaccount', 'wdagutilityaccount', 'system', 'none', 'everyone', 'administrators', 'users'])

/** Control characters, and the Unicode ones that do not show (XML 1.0 forbids most C0 ones anyway). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/

function oneOf<T extends string>(field: string, v: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(v)) throw new WindowsSpecError(field, `'${v}' is not one of ${allowed.join(', ')}`)
  return v as T
}

function intIn(field: string, v: number, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) throw new WindowsSpecError(field, `must be a whole number from ${min} to ${max}, got ${v}`)
  return v
}

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0)
}

function intToIpv4(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.')
}

function checkIpv4(field: string, v: string): string {
  // isIPv4 alone takes nothing but dotted quads; leading zeros would read as octal to some tools.
  if (!isIPv4(v) || v.split('.').some((p) => p.length > 1 && p.startsWith('0'))) throw new WindowsSpecError(field, `'${v}' is not an IPv4 address`)
  return v
}

/** A MAC in QEMU's locally administered range, as libvirt gives new NICs. */
export function randomMac(): string {
  const b = randomBytes(3)
  return ['52', '54', '00', ...[...b].map((x) => x.toString(16).padStart(2, '0'))].join(':')
}

/** A name as Windows makes one (`DESKTOP-` and 7 letters and digits): nothing to tell it from a bought PC's. */
export function randomComputerName(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
  return 'DESKTOP-' + [...randomBytes(7)].map((x) => alphabet[x % alphabet.length]).join('')
}

export function checkWindowsInput(i: WindowsMachineInput): WindowsMachineSpec {
  const name = i.name ?? ''
  // machines.json's rule for names, which also makes a safe libvirt domain and file name.
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) {
    throw new WindowsSpecError('name', `'${name}' must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit`)
  }
  const version = oneOf<WindowsVersion>('windows-version', i.version ?? '10', ['10', '11'])
  const firmware = oneOf<Firmware>('firmware', i.firmware ?? (version === '11' ? 'uefi' : 'bios'), ['bios', 'uefi'])
  if (version === '11' && firmware !== 'uefi') throw new WindowsSpecError('firmware', 'Windows 11 installs only on UEFI firmware')

  let edition: string | null = null
  if (i.edition !== undefined) {
    edition = i.edition.trim()
    if (edition === '' || edition.length > 128 || CONTROL.test(edition)) throw new WindowsSpecError('edition', 'must be an edition name or index as the ISO lists it, up to 128 characters')
  }

  const user = i.user ?? 'user'
  // Windows refuses " / \ [ ] : ; | = , + * ? < > @ and names of dots and spaces only; a narrower set
  // also keeps the name harmless on a command line.
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,19}$/.test(user)) {
    throw new WindowsSpecError('user', `'${user}' must be 1-20 letters, digits, '.', '_' or '-', starting with a letter or digit`)
  }
  if (RESERVED_USERS.has(user.toLowerCase())) throw new WindowsSpecError('user', `'${user}' is an account or group Windows already has`)

  const password = i.password ?? ''
  // Auto-logon needs a password it can type; any printable character is fine (the XML escapes it).
  if (password.length < 1 || password.length > 127) throw new WindowsSpecError('password', 'must be 1-127 characters')
  if (CONTROL.test(password)) throw new WindowsSpecError('password', 'must not hold control or invisible characters')

  const computerName = i.computerName ?? randomComputerName()
  // NetBIOS: at most 15 characters; Windows refuses an all-digit name.
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,13}[A-Za-z0-9])?$/.test(computerName) || /^\d+$/.test(computerName)) {
    throw new WindowsSpecError('computer-name', `'${computerName}' must be 1-15 letters, digits or inner '-', not digits only`)
  }

  let productKey: string | null = null
  if (i.productKey !== undefined && i.productKey !== '') {
    productKey = i.productKey.trim().toUpperCase()
    if (!/^[0-9A-Z]{5}(?:-[0-9A-Z]{5}){4}$/.test(productKey)) throw new WindowsSpecError('product-key', 'must be five groups of five letters or digits, XXXXX-XXXXX-XXXXX-XXXXX-XXXXX')
  }

  if (i.ip === undefined) throw new WindowsSpecError('ip', 'is required: the guest\'s static IPv4 address on its network')
  const ip = checkIpv4('ip', i.ip)
  const prefix = intIn('prefix', i.prefix ?? 24, 8, 30)
  const mask = (0xffffffff << (32 - prefix)) >>> 0
  const net = (ipv4ToInt(ip) & mask) >>> 0
  const broadcast = (net | (~mask >>> 0)) >>> 0
  const inNet = (a: string): boolean => ((ipv4ToInt(a) & mask) >>> 0) === net
  if (ipv4ToInt(ip) === net || ipv4ToInt(ip) === broadcast) throw new WindowsSpecError('ip', `${ip} is the network's or broadcast address of /${prefix}`)
  // The host's end of a libvirt network is its first address, as on `default` (192.168.122.1).
  const gateway = checkIpv4('gateway', i.gateway ?? intToIpv4(net + 1))
  if (!inNet(gateway)) throw new WindowsSpecError('gateway', `${gateway} is not in ${intToIpv4(net)}/${prefix}, the guest's network`)
  if (gateway === ip) throw new WindowsSpecError('gateway', `${gateway} is the guest's own address`)
  const dns = (i.dns ?? [gateway]).map((d) => checkIpv4('dns', d))
  if (dns.length < 1 || dns.length > 3) throw new WindowsSpecError('dns', 'give one to three DNS servers')

  const mac = (i.mac ?? randomMac()).toLowerCase().replace(/-/g, ':')
  if (!/^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/.test(mac) || (parseInt(mac.slice(0, 2), 16) & 1) === 1) {
    throw new WindowsSpecError('mac', `'${i.mac ?? ''}' is not a unicast MAC address such as 52:54:00:12:34:56`)
  }

  const network = i.network ?? 'default'
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(network)) throw new WindowsSpecError('network', `'${network}' is not a libvirt network name`)

  // Windows 11's own floor (setup refuses less): 4 GiB, 2 processors, 64 GB of disk.
  const min = version === '11' ? { memoryMiB: 4096, cpus: 2, diskGiB: 64 } : { memoryMiB: 2048, cpus: 1, diskGiB: 32 }
  const memoryMiB = intIn('memory', i.memoryMiB ?? 4096, min.memoryMiB, 262144)
  const cpus = intIn('cpus', i.cpus ?? 2, min.cpus, 64)
  const diskGiB = intIn('disk', i.diskGiB ?? 64, min.diskGiB, 4096)

  const timeZone = i.timeZone ?? 'UTC'
  // Windows' time zone ids ("W. Europe Standard Time", "UTC", "UTC-02").
  if (!/^[A-Za-z0-9][A-Za-z0-9 ().+-]{0,63}$/.test(timeZone)) throw new WindowsSpecError('time-zone', `'${timeZone}' is not a Windows time zone id such as "W. Europe Standard Time"`)
  const locale = i.locale ?? 'en-US'
  if (!/^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,2}$/.test(locale)) throw new WindowsSpecError('locale', `'${locale}' is not a language tag such as en-US`)
  const agentPort = intIn('agent-port', i.agentPort ?? AGENT_PORT, 1, 65535)

  return { name, version, firmware, edition, user, password, computerName, productKey, ip, prefix, gateway, dns, mac, network, memoryMiB, cpus, diskGiB, timeZone, locale, agentPort }
}
