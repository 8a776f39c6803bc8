// Options the host or its fleet cannot honour, and why, read from what the service already says:
// each machine's driver capabilities (GET /aviary/machines) and the doctor's findings about the
// rooter and the routes (GET /aviary/doctor). The Submit form disables such an option and says
// why, instead of a task that fails later ("the physical driver cannot dump a machine's memory",
// "no rooter listens…"). When the service does not say (a Cuckoo server, a dispatcher, an older
// Aviary), everything stays offered.
import type { Machine } from '../machines/api'
import type { DoctorReport } from '../machines/api'
import type { RouteOffer } from './network'

/** Why no machine that could run this task can dump its memory, or null when one can (or nothing says). */
export function memoryDumpBlocked(machines: readonly Machine[] | undefined, chosen: string): string | null {
  if (machines === undefined || machines.length === 0) return null
  const candidates = chosen === '' ? machines : machines.filter((m) => m.name === chosen)
  if (candidates.length === 0 || candidates.some((m) => m.capabilities === undefined || m.capabilities.memoryDump)) return null
  const drivers = [...new Set(candidates.map((m) => String(m.driver)))].sort().join(', ')
  return chosen === ''
    ? `No machine here can dump its memory: their driver${drivers.includes(',') ? 's' : ''} (${drivers}) cannot.`
    : `${chosen} cannot dump its memory: its driver (${drivers}) cannot.`
}

/** Route kinds whose traffic the rooter forwards (internet, vpn, inetsim): without it, no task gets them. */
const FORWARDED = new Set(['internet', 'vpn', 'inetsim'])

/**
 * Why each route cannot be used now, by name (routes missing from the map are usable): a route the
 * doctor found broken, with its finding; a forwarding route when the rooter does not answer or
 * speaks another version.
 */
export function blockedRoutes(routes: readonly RouteOffer[], doctor: Pick<DoctorReport, 'routes'> | undefined): Map<string, string> {
  const out = new Map<string, string>()
  const findings = doctor?.routes ?? []
  const rooter = findings.find((f) => (f.check === 'rooter' || f.check === 'rooter version') && !f.ok)
  for (const r of routes) {
    const own = findings.find((f) => f.check === `route ${r.name}` && !f.ok)
    if (own !== undefined) out.set(r.name, own.detail)
    else if (rooter !== undefined && FORWARDED.has(r.kind)) out.set(r.name, `needs the rooter: ${rooter.detail}`)
  }
  return out
}
