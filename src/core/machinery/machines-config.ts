// The machines an instance analyzes on, and how analyses run on them, come from
// `<data>/machines.json` (documented in docs/machines.md). It is read at start and again when it
// changes; a bad file is refused with a message that names the field, rather than running with a
// fleet the user did not describe.
import { readFileSync, writeFileSync, existsSync } from 'node:fs'
import { isIP } from 'node:net'
import { Type, type Static } from 'typebox'
import Ajv from 'ajv'
import { parseRouting, RoutingConfigError, RoutingSection, type RoutingSettings } from '../network/routing-config'
import { DRIVER_KINDS, type DriverKind } from '../../shared/api/drivers'
// Each driver's own section (its schema, defaults and reading) lives with the driver.
import { KVM_DEFAULTS, KvmSection, readKvmSection, type KvmSettings } from './kvm'
import { readVirtualBoxSection, VIRTUALBOX_DEFAULTS, VirtualBoxSection, type VirtualBoxSettings } from './virtualbox'

const Name = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' })
const Port = Type.Integer({ minimum: 1, maximum: 65535 })
const Seconds = Type.Number({ minimum: 0, maximum: 86400 })
const Bytes = Type.Integer({ minimum: 1 })
const Path = Type.String({ minLength: 1, maxLength: 4096 })

const MachineEntry = Type.Object({
  name: Name,
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  platform: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  ip: Type.String(),
  tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }))),
  snapshot: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  interface: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  resultserver_ip: Type.Optional(Type.String()),
  resultserver_port: Type.Optional(Port),
  driver: Type.Optional(Type.Enum([...DRIVER_KINDS])),
  options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 })))
}, { additionalProperties: false })

const Analyzer = Type.Object({
  /** A folder: Aviary's analyzer (analyzer.cjs) or Cuckoo's analyzer/<platform> (analyzer.py). */
  path: Path,
  /** Cuckoo's monitor folder (monitor/latest or monitor/<hash>), copied into bin/ of the zip. */
  monitor: Type.Optional(Path)
}, { additionalProperties: false })

const MachinesFile = Type.Object({
  driver: Type.Optional(Type.Enum([...DRIVER_KINDS])),
  interface: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  resultserver: Type.Optional(Type.Object({
    ip: Type.Optional(Type.String()),
    port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
    upload_max_size: Type.Optional(Bytes),
    task_max_size: Type.Optional(Bytes)
  }, { additionalProperties: false })),
  timeouts: Type.Optional(Type.Object({
    default: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400 })),
    critical: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400 })),
    vm_state: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 }))
  }, { additionalProperties: false })),
  screenshots: Type.Optional(Type.Object({ interval: Type.Optional(Seconds) }, { additionalProperties: false })),
  max_machines: Type.Optional(Type.Integer({ minimum: 0 })),
  tcpdump: Type.Optional(Path),
  kvm: Type.Optional(KvmSection),
  virtualbox: Type.Optional(VirtualBoxSection),
  analyzers: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z0-9_-]{1,32}$' }), Analyzer)),
  routing: Type.Optional(RoutingSection),
  machines: Type.Array(MachineEntry)
}, { additionalProperties: false })
type MachinesFile = Static<typeof MachinesFile>

export interface MachineConfig {
  name: string
  label: string
  platform: string
  ip: string
  tags: string[]
  snapshot: string | null
  interface: string | null
  resultserver_ip: string
  resultserver_port: number
  driver: DriverKind
  options: string[]
}

export interface AnalyzerConfig {
  path: string
  monitor: string | null
}

/** How analyses run: everything in machines.json but the machines themselves. */
export interface EngineSettings {
  resultserver: { ip: string; port: number; uploadMaxSize: number; taskMaxSize: number }
  timeouts: { default: number; critical: number; vmState: number }
  /** Seconds between hypervisor screenshots; 0 turns them off. */
  screenshotInterval: number
  /** Machines running at once; 0 = no limit. `--max-machines` overrides it. */
  maxMachines: number
  tcpdump: string
  kvm: KvmSettings
  virtualbox: VirtualBoxSettings
  /** Per platform; a platform without an entry gets Aviary's own analyzer. */
  analyzers: Record<string, AnalyzerConfig>
  /** The routes of analyses (network/routing-config.ts); null: no `routing` section, nothing is routed. */
  routing: RoutingSettings | null
}

export interface FleetConfig {
  machines: MachineConfig[]
  settings: EngineSettings
}

export class MachinesConfigError extends Error {}

export const DEFAULT_SETTINGS: EngineSettings = {
  // Cuckoo's defaults (cuckoo.conf, kvm.conf), so an imported setup behaves as it did.
  resultserver: { ip: '192.168.122.1', port: 2042, uploadMaxSize: 128 * 1024 ** 2, taskMaxSize: 4 * 1024 ** 3 },
  timeouts: { default: 120, critical: 60, vmState: 60 },
  screenshotInterval: 1,
  maxMachines: 0,
  // Looked up in PATH: Debian has it in /usr/bin, Cuckoo's default was /usr/sbin.
  tcpdump: 'tcpdump',
  kvm: KVM_DEFAULTS,
  virtualbox: VIRTUALBOX_DEFAULTS,
  analyzers: {},
  routing: null
}

// Ajv is what Fastify validates requests with: already in memory, nothing more to load.
const checker = new Ajv({ allErrors: false, strict: false }).compile<MachinesFile>(MachinesFile)
// A new install routes every task `none` (no network) until the user offers more (docs/network.md).
const TEMPLATE = { driver: 'kvm', resultserver: { ip: '192.168.122.1', port: 2042 }, routing: { default: 'none' }, machines: [] }

/** Reads the machines file; writes an empty template first when there is none. */
export function loadFleetConfig(file: string): FleetConfig {
  if (!existsSync(file)) writeFileSync(file, JSON.stringify(TEMPLATE, null, 2) + '\n', { mode: 0o644 })
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new MachinesConfigError(`machines.json is not valid JSON: ${(err as Error).message}`)
  }
  return parseFleetConfig(raw)
}

function routingOf(r: RoutingSection | undefined): RoutingSettings | null {
  try {
    return parseRouting(r)
  } catch (err) {
    if (err instanceof RoutingConfigError) throw new MachinesConfigError(err.message)
    throw err
  }
}

export function parseFleetConfig(raw: unknown): FleetConfig {
  if (!checker(raw)) {
    const first = checker.errors?.[0]
    const where = first?.instancePath ? first.instancePath.slice(1).replace(/\//g, '.') : 'the top level'
    const extra = first?.keyword === 'additionalProperties' ? ` '${String(first.params.additionalProperty)}'` : ''
    throw new MachinesConfigError(`machines.json: ${where}: ${first?.message ?? 'invalid'}${extra}`)
  }
  const file = raw
  const d = DEFAULT_SETTINGS
  const rs = file.resultserver ?? {}
  const settings: EngineSettings = {
    resultserver: {
      ip: rs.ip ?? d.resultserver.ip,
      port: rs.port ?? d.resultserver.port,
      uploadMaxSize: rs.upload_max_size ?? d.resultserver.uploadMaxSize,
      taskMaxSize: rs.task_max_size ?? d.resultserver.taskMaxSize
    },
    timeouts: {
      default: file.timeouts?.default ?? d.timeouts.default,
      critical: file.timeouts?.critical ?? d.timeouts.critical,
      vmState: file.timeouts?.vm_state ?? d.timeouts.vmState
    },
    screenshotInterval: file.screenshots?.interval ?? d.screenshotInterval,
    maxMachines: file.max_machines ?? d.maxMachines,
    tcpdump: file.tcpdump ?? d.tcpdump,
    kvm: readKvmSection(file.kvm),
    virtualbox: readVirtualBoxSection(file.virtualbox),
    analyzers: Object.fromEntries(Object.entries(file.analyzers ?? {}).map(([platform, a]) => [platform, { path: a.path, monitor: a.monitor ?? null }])),
    routing: routingOf(file.routing)
  }
  if (!isIP(settings.resultserver.ip)) {
    throw new MachinesConfigError(`machines.json: resultserver.ip: '${settings.resultserver.ip}' is not an IP address`)
  }
  const seen = new Set<string>()
  const machines = file.machines.map((m, i): MachineConfig => {
    const at = `machines.json: machines.${i}`
    if (seen.has(m.name)) throw new MachinesConfigError(`${at}.name: '${m.name}' is used twice`)
    seen.add(m.name)
    const resultserverIp = m.resultserver_ip ?? settings.resultserver.ip
    for (const [field, value] of [['ip', m.ip], ['resultserver_ip', resultserverIp]] as const) {
      if (!isIP(value)) throw new MachinesConfigError(`${at}.${field}: '${value}' is not an IP address`)
    }
    return {
      name: m.name,
      label: m.label ?? m.name,
      platform: m.platform ?? 'windows',
      ip: m.ip,
      tags: [...new Set(m.tags ?? [])],
      snapshot: m.snapshot ?? null,
      interface: m.interface ?? file.interface ?? null,
      resultserver_ip: resultserverIp,
      resultserver_port: m.resultserver_port ?? settings.resultserver.port,
      driver: m.driver ?? file.driver ?? 'kvm',
      options: m.options ?? []
    }
  })
  const ips = new Map<string, string>()
  for (const m of machines) {
    const other = ips.get(m.ip)
    // The result server tells tasks apart by the guest's address: two machines cannot share one.
    if (other) throw new MachinesConfigError(`machines.json: machines '${other}' and '${m.name}' have the same ip ${m.ip}`)
    ips.set(m.ip, m.name)
  }
  return { machines, settings }
}
