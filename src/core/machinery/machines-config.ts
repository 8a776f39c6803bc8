// The machines an instance analyzes on come from `<data>/machines.json` (documented in
// docs/machines.md). It is read at start; a bad file stops the service with a message that
// names the field, rather than starting with a fleet the user did not describe.
import { readFileSync, writeFileSync, existsSync } from 'node:fs'
import { isIP } from 'node:net'
import { Type, type Static } from 'typebox'
import Ajv from 'ajv'

const Name = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' })
export const DRIVERS = ['kvm', 'virtualbox', 'physical'] as const

const MachineEntry = Type.Object({
  name: Name,
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  platform: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  ip: Type.String(),
  tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }))),
  snapshot: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  interface: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  resultserver_ip: Type.Optional(Type.String()),
  resultserver_port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  driver: Type.Optional(Type.Enum([...DRIVERS])),
  options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 })))
}, { additionalProperties: false })

const MachinesFile = Type.Object({
  driver: Type.Optional(Type.Enum([...DRIVERS])),
  interface: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  resultserver: Type.Optional(Type.Object({
    ip: Type.String(),
    port: Type.Integer({ minimum: 1, maximum: 65535 })
  }, { additionalProperties: false })),
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
  driver: (typeof DRIVERS)[number]
  options: string[]
}

export class MachinesConfigError extends Error {}

// Ajv is what Fastify validates requests with: already in memory, nothing more to load.
const checker = new Ajv({ allErrors: false, strict: false }).compile<MachinesFile>(MachinesFile)
const TEMPLATE = { driver: 'kvm', resultserver: { ip: '192.168.122.1', port: 2042 }, machines: [] }

/** Reads the machines file; writes an empty template first when there is none. */
export function loadMachinesConfig(file: string): MachineConfig[] {
  if (!existsSync(file)) writeFileSync(file, JSON.stringify(TEMPLATE, null, 2) + '\n', { mode: 0o644 })
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new MachinesConfigError(`machines.json is not valid JSON: ${(err as Error).message}`)
  }
  return parseMachinesConfig(raw)
}

export function parseMachinesConfig(raw: unknown): MachineConfig[] {
  if (!checker(raw)) {
    const first = checker.errors?.[0]
    const where = first?.instancePath ? first.instancePath.slice(1).replace(/\//g, '.') : 'the top level'
    const extra = first?.keyword === 'additionalProperties' ? ` '${String(first.params.additionalProperty)}'` : ''
    throw new MachinesConfigError(`machines.json: ${where}: ${first?.message ?? 'invalid'}${extra}`)
  }
  const file = raw
  const seen = new Set<string>()
  return file.machines.map((m, i) => {
    const at = `machines.json: machines.${i}`
    if (seen.has(m.name)) throw new MachinesConfigError(`${at}.name: '${m.name}' is used twice`)
    seen.add(m.name)
    const resultserverIp = m.resultserver_ip ?? file.resultserver?.ip ?? '192.168.122.1'
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
      resultserver_port: m.resultserver_port ?? file.resultserver?.port ?? 2042,
      driver: m.driver ?? file.driver ?? 'kvm',
      options: m.options ?? []
    }
  })
}
