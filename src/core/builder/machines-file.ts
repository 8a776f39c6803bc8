// Registering what the builder made in machines.json, the file the user also edits by hand: read
// as it is (every key the user wrote is kept), checked whole with the service's own parser before
// and after the change, written to a temporary file and renamed over, so a running service (which
// reloads the file when it changes) never reads half of it.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { parseFleetConfig, type FleetConfig } from '../machinery/machines-config'

type Raw = Record<string, unknown> & { machines?: Record<string, unknown>[] }

export type MachineEntry = {
  name: string
  label: string
  platform: string
  ip: string
  snapshot: string
  interface: string
  resultserver_ip: string
  driver: 'kvm'
  tags?: string[]
}

/** A new install's file: what the service writes on its first start (machinery/machines-config.ts). */
const EMPTY = { driver: 'kvm', resultserver: { ip: '192.168.122.1', port: 2042 }, routing: { default: 'none' }, machines: [] }

function readRaw(file: string): Raw {
  if (!existsSync(file)) return structuredClone(EMPTY)
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Raw
  parseFleetConfig(raw) // a file the service would refuse is not changed: its error names the field
  return raw
}

/** The fleet as the service reads it (the empty one when there is no file yet). */
export function readFleet(file: string): FleetConfig {
  return parseFleetConfig(readRaw(file))
}

function write(file: string, raw: Raw): void {
  parseFleetConfig(raw)
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, JSON.stringify(raw, null, 2) + '\n', { mode: 0o644 })
  renameSync(tmp, file)
}

export interface AddResult {
  /** True when the file had no `routing` section and got `{"default": "none"}`. */
  addedRouting: boolean
}

/**
 * Adds `entries`; refuses a name or address the file has meanwhile. A file without a `routing`
 * section gets `{"default": "none"}`: on a network the rooter denies by default, a guest whose task
 * is not routed cannot even reach the result server.
 */
export function addMachines(file: string, entries: MachineEntry[]): AddResult {
  const raw = readRaw(file)
  const machines = raw.machines ?? []
  for (const e of entries) {
    const same = machines.find((m) => m.name === e.name)
    if (same) throw new Error(`machines.json has a machine '${e.name}' already`)
    const ip = machines.find((m) => m.ip === e.ip)
    if (ip) throw new Error(`machines.json gave ${e.ip} to '${String(ip.name)}' meanwhile`)
  }
  const addedRouting = raw.routing === undefined
  write(file, { ...raw, ...(addedRouting ? { routing: { default: 'none' } } : {}), machines: [...machines, ...entries] })
  return { addedRouting }
}

/** Removes the machines named (a build's undo); others stay as they are. */
export function removeMachines(file: string, names: string[]): void {
  if (!existsSync(file)) return
  const raw = readRaw(file)
  const machines = raw.machines ?? []
  const kept = machines.filter((m) => !names.includes(String(m.name)))
  if (kept.length !== machines.length) write(file, { ...raw, machines: kept })
}
