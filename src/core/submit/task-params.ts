// Turns the validated form fields shared by every create route into task settings (both defined
// in src/shared/api/task-fields.ts). The schema has already checked types and ranges; what needs
// the fleet or a calendar is checked here.
import { badRequest } from '../errors'
import type { MachinesRepository } from '../db/machines.repository'
import type { TaskForm, TaskSettings } from '../../shared/api/task-fields'
import { formatDatetime, parseClock } from '../../shared/time'
import type { RoutingSettings } from '../network/routing-config'
import { chooseRoute, RouteChoiceError } from '../network/task-route'

/** The task's fields as the create routes' schema has validated them (src/shared/api/task-fields.ts). */
export type TaskFields = TaskForm

export type TaskParams = TaskSettings

// What the analyst's free-text fields may not hold (they reach the guest's analysis.conf): C0
// controls but tab and line ends, and DEL. Not the display set (src/shared/invisible.ts): that one
// is for showing a sample's text, and is applied wherever these fields are shown.
// eslint-disable-next-line no-control-regex -- control characters are what is refused
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/

export function parseFlag(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes|on)$/i.test(value)
}

export function parseTaskParams(f: TaskFields, machines: MachinesRepository, routing: RoutingSettings | null = null): TaskParams {
  for (const field of ['options', 'custom', 'owner', 'tags'] as const) {
    if (f[field] !== undefined && CONTROL.test(f[field])) throw badRequest(field, 'control characters are not allowed')
  }
  // The route (options route=<name>, mitm=1) must be one this host offers.
  try {
    chooseRoute(f.options ?? null, routing)
  } catch (err) {
    if (err instanceof RouteChoiceError) throw badRequest('options', err.message)
    throw err
  }
  let machine: string | null = null
  if (f.machine !== undefined) {
    const row = machines.findByNameOrId(f.machine)
    if (!row) {
      const known = machines.list().map((m) => m.name)
      throw badRequest('machine', `no configured machine is named '${f.machine}'; ` +
        (known.length ? `known: ${known.join(', ')}` : 'no machines are configured (see machines.json)'))
    }
    machine = row.name
  }
  let clock: string | null = null
  if (f.clock !== undefined) {
    const date = parseClock(f.clock)
    if (!date) throw badRequest('clock', `'${f.clock}' is not a real date; use MM-DD-YYYY HH:MM:SS`)
    clock = formatDatetime(date)
  }
  return {
    package: f.package ?? null,
    timeout: f.timeout ?? 0,
    priority: f.priority ?? 1,
    options: f.options ?? null,
    machine,
    platform: f.platform ?? null,
    tags: parseTags(f.tags),
    custom: f.custom ?? null,
    owner: f.owner ?? '',
    memory: parseFlag(f.memory),
    enforce_timeout: parseFlag(f.enforce_timeout),
    clock
  }
}

/** Comma-separated, each stripped, empty pieces dropped, duplicates once (Cuckoo 2 rules). */
export function parseTags(raw: string | undefined): string[] {
  if (!raw) return []
  return [...new Set(raw.split(',').map((t) => t.trim()).filter(Boolean))]
}

/** Options `k=v,k2=v2` as Cuckoo parses them: pieces without `=` are ignored. */
export function parseOptions(raw: string | null): Map<string, string> {
  const out = new Map<string, string>()
  for (const piece of (raw ?? '').split(',')) {
    const eq = piece.indexOf('=')
    if (eq > 0) out.set(piece.slice(0, eq).trim(), piece.slice(eq + 1).trim())
  }
  return out
}

/** Appends `key=value` to an options string. */
export function withOption(options: string | null, key: string, value: string): string {
  const piece = `${key}=${value.replace(/,/g, '_')}`
  return options ? `${options},${piece}` : piece
}

/** An options string without any `key=…` piece (null when nothing is left). */
export function withoutOption(options: string | null, key: string): string | null {
  const kept = (options ?? '').split(',').filter((piece) => {
    const eq = piece.indexOf('=')
    return !(eq > 0 && piece.slice(0, eq).trim() === key)
  })
  const out = kept.join(',')
  return out === '' ? null : out
}
