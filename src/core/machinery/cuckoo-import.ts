// `aviary import-cuckoo <conf dir>`: turns a Cuckoo 2 configuration (cuckoo.conf plus the conf of
// the machinery it uses: kvm.conf, virtualbox.conf or physical.conf) into machines.json, so an
// existing fleet moves over without retyping it. What has no place in Aviary is reported as a
// warning rather than dropped silently; the result always passes parseFleetConfig.
import { existsSync, readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import path from 'node:path'
import { parseIni, type IniSections } from './cuckoo-ini'
import { parseFleetConfig } from './machines-config'
import { DRIVER_KINDS as DRIVERS, type DriverKind } from '../../shared/api/drivers'

export class CuckooImportError extends Error {}

interface MachineJson {
  name: string
  label?: string
  platform?: string
  ip: string
  tags?: string[]
  snapshot?: string
  interface?: string
  resultserver_ip?: string
  resultserver_port?: number
  options?: string[]
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
/** Per-machine keys Cuckoo knows that Aviary has no use for (or no way to honour). */
const DROPPED_MACHINE_KEYS = ['osprofile']

export function importCuckooConf(confDir: string): { json: string; warnings: string[] } {
  // Accept Cuckoo's working directory (~/.cuckoo) as well as its conf/ folder.
  const dir = existsSync(path.join(confDir, 'conf', 'cuckoo.conf')) ? path.join(confDir, 'conf') : confDir
  const read = (name: string): IniSections | null => {
    const file = path.join(dir, name)
    if (!existsSync(file)) return null
    try {
      return parseIni(readFileSync(file, 'utf8'), name)
    } catch (err) {
      throw new CuckooImportError((err as Error).message)
    }
  }
  const cuckoo = read('cuckoo.conf')
  if (!cuckoo) throw new CuckooImportError(`no cuckoo.conf in ${confDir}`)
  const warnings: string[] = []
  const get = (s: IniSections, section: string, key: string): string | undefined => {
    const v = s.get(section)?.get(key)
    return v === undefined || v === '' ? undefined : v
  }
  const int = (file: string, key: string, v: string | undefined, min: number, max: number): number | undefined => {
    if (v === undefined) return undefined
    const n = Number(v)
    if (Number.isInteger(n) && n >= min && n <= max) return n
    warnings.push(`${file} ${key} = ${v}: not a whole number from ${min} to ${max}; Aviary's default is used`)
    return undefined
  }

  const out: Record<string, unknown> = {}
  const machinery = (get(cuckoo, 'cuckoo', 'machinery') ?? 'virtualbox').toLowerCase()
  const driver = (DRIVERS as readonly string[]).includes(machinery) ? (machinery as DriverKind) : null
  if (driver) out.driver = driver
  else warnings.push(`cuckoo.conf machinery = ${machinery}: Aviary has drivers for ${DRIVERS.join(', ')} only; no machines were imported`)

  const rs: Record<string, number | string> = {}
  const rsIp = get(cuckoo, 'resultserver', 'ip')
  if (rsIp !== undefined) {
    if (isIP(rsIp)) rs.ip = rsIp
    else warnings.push(`cuckoo.conf resultserver ip = ${rsIp}: not an IP address; Aviary's default is used`)
  }
  const rsPort = int('cuckoo.conf', 'resultserver port', get(cuckoo, 'resultserver', 'port'), 0, 65535)
  if (rsPort !== undefined) rs.port = rsPort
  const upload = int('cuckoo.conf', 'resultserver upload_max_size', get(cuckoo, 'resultserver', 'upload_max_size'), 1, Number.MAX_SAFE_INTEGER)
  if (upload !== undefined) rs.upload_max_size = upload
  if (Object.keys(rs).length > 0) out.resultserver = rs

  const timeouts: Record<string, number> = {}
  for (const [key, max] of [['default', 86400], ['critical', 86400], ['vm_state', 3600]] as const) {
    const v = int('cuckoo.conf', `timeouts ${key}`, get(cuckoo, 'timeouts', key), 1, max)
    if (v !== undefined) timeouts[key] = v
  }
  if (Object.keys(timeouts).length > 0) out.timeouts = timeouts
  const maxMachines = int('cuckoo.conf', 'cuckoo max_machines_count', get(cuckoo, 'cuckoo', 'max_machines_count'), 0, Number.MAX_SAFE_INTEGER)
  if (maxMachines !== undefined) out.max_machines = maxMachines
  // The capture tool lives in auxiliary.conf [sniffer] (tcpdump = /usr/sbin/tcpdump).
  const aux = read('auxiliary.conf')
  const tcpdump = aux ? get(aux, 'sniffer', 'tcpdump') : undefined
  if (tcpdump !== undefined) out.tcpdump = tcpdump
  if (aux && /^(no|off|false|0)$/i.test(get(aux, 'sniffer', 'enabled') ?? '')) {
    warnings.push("auxiliary.conf [sniffer] enabled = no is not carried over: Aviary captures each analysis on its machine's interface")
  }

  for (const other of DRIVERS) {
    if (other !== driver && existsSync(path.join(dir, `${other}.conf`))) {
      warnings.push(`${other}.conf was not imported: cuckoo.conf uses machinery = ${machinery}`)
    }
  }

  const machines: MachineJson[] = []
  if (driver) {
    const file = `${driver}.conf`
    const conf = read(file)
    if (!conf) {
      warnings.push(`${file} is missing: no machines were imported`)
    } else {
      const top = driver
      const iface = get(conf, top, 'interface')
      if (iface !== undefined) out.interface = iface
      if (driver === 'kvm') {
        const dsn = get(conf, top, 'dsn')
        if (dsn !== undefined) out.kvm = { uri: dsn }
      }
      if (driver === 'virtualbox') {
        const vbox: Record<string, string> = {}
        const p = get(conf, top, 'path')
        if (p !== undefined) vbox.path = p
        const mode = get(conf, top, 'mode')?.toLowerCase()
        if (mode === 'headless' || mode === 'gui') vbox.mode = mode
        else if (mode !== undefined) warnings.push(`virtualbox.conf mode = ${mode}: Aviary knows headless and gui; headless is used`)
        if (Object.keys(vbox).length > 0) out.virtualbox = vbox
      }
      if (driver === 'physical') {
        if (get(conf, top, 'user') !== undefined || get(conf, top, 'password') !== undefined || get(conf, 'fog', 'hostname') !== undefined) {
          warnings.push('physical.conf user/password and [fog]: Aviary does not shut down or re-image physical machines; they were not imported')
        }
      }
      const names = (get(conf, top, 'machines') ?? '').split(',').map((s) => s.trim()).filter(Boolean)
      const ips = new Map<string, string>()
      for (const section of names) {
        const m = machineFrom(conf, file, section, driver, warnings)
        if (!m) continue
        const other = ips.get(m.ip)
        if (other !== undefined) {
          warnings.push(`${file} [${section}]: ip ${m.ip} is also ${other}'s; Aviary tells guests apart by address, so it was not imported`)
          continue
        }
        if (machines.some((x) => x.name === m.name)) {
          warnings.push(`${file} [${section}]: the name '${m.name}' is used twice; it was not imported`)
          continue
        }
        ips.set(m.ip, m.name)
        machines.push(m)
      }
    }
  }
  out.machines = machines
  // Proof that the engine will take it; a failure here is a bug of this importer.
  parseFleetConfig(JSON.parse(JSON.stringify(out)))
  return { json: JSON.stringify(out, null, 2) + '\n', warnings }
}

function machineFrom(conf: IniSections, file: string, section: string, driver: DriverKind, warnings: string[]): MachineJson | null {
  const s = conf.get(section)
  if (!s) {
    warnings.push(`${file}: machine '${section}' is listed in machines but has no [${section}] section; it was not imported`)
    return null
  }
  const v = (key: string): string | undefined => {
    const x = s.get(key)
    return x === undefined || x === '' ? undefined : x
  }
  const ip = v('ip')
  if (ip === undefined || !isIP(ip)) {
    warnings.push(`${file} [${section}]: ip ${ip ?? '(none)'} is not an IP address; it was not imported`)
    return null
  }
  let name = section
  if (!NAME.test(name) || name.length > 64) {
    name = section.replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64) || 'machine'
    warnings.push(`${file} [${section}]: renamed to '${name}' (names are letters, digits, '_', '.', '-')`)
  }
  const m: MachineJson = { name, ip }
  const label = v('label')
  if (label !== undefined) m.label = label.slice(0, 255)
  const platform = v('platform')
  if (platform !== undefined) m.platform = platform
  if (driver !== 'physical') {
    const snapshot = v('snapshot')
    if (snapshot !== undefined) m.snapshot = snapshot
  }
  const iface = v('interface')
  if (iface !== undefined) m.interface = iface
  const rsIp = v('resultserver_ip')
  if (rsIp !== undefined) {
    if (isIP(rsIp)) m.resultserver_ip = rsIp
    else warnings.push(`${file} [${section}]: resultserver_ip ${rsIp} is not an IP address; the global one is used`)
  }
  const rsPort = v('resultserver_port')
  if (rsPort !== undefined) {
    const n = Number(rsPort)
    if (Number.isInteger(n) && n >= 1 && n <= 65535) m.resultserver_port = n
    else warnings.push(`${file} [${section}]: resultserver_port ${rsPort} is not a port; the global one is used`)
  }
  const tags = (v('tags') ?? '').split(',').map((t) => t.trim()).filter((t) => t.length > 0 && t.length <= 64)
  if (tags.length > 0) m.tags = [...new Set(tags)]
  // Cuckoo splits options on commas and/or whitespace (nictrace, noagent, ...).
  const options = (v('options') ?? '').split(/[\s,]+/).filter((o) => o.length > 0 && o.length <= 64)
  if (options.length > 0) m.options = options
  for (const key of DROPPED_MACHINE_KEYS) {
    if (v(key) !== undefined) warnings.push(`${file} [${section}]: ${key} = ${v(key)} is not used by Aviary (memory analysis takes its profile elsewhere)`)
  }
  return m
}
