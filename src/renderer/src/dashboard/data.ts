// What the Dashboard shows, from either source: Aviary's own GET /aviary/stats, or the
// /cuckoo/status every Cuckoo-compatible server has (no per-day history, fewer states). Both are
// reduced to one shape here so the charts do not care where the numbers came from.
import { fetchJson, HttpError, type ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { AviaryStats } from '../../../shared/api/ui-schemas'

export type { AviaryStats }

/** The parts of /cuckoo/status the Dashboard reads (Cuckoo 2 and Aviary both answer them). */
export interface CuckooStatus {
  tasks?: Record<string, number>
  machines?: { available?: number; total?: number }
  diskspace?: Record<string, { total?: number; free?: number; used?: number }>
  cpuload?: number[]
  cpu_count?: number
  memtotal?: number | null
  memavail?: number | null
}

export interface Usage { total: number; used: number; free: number }

export interface DashboardData {
  source: 'stats' | 'status'
  /** Count per task state, in the order the states happen. */
  states: { status: string; count: number }[]
  total: number
  perDay: { day: string; added: number; finished: number }[] | null
  machines: { available: number; total: number } | null
  disk: Usage | null
  cpu: { load: number[]; cores: number | null } | null
  memory: Usage | null
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

export function fromStats(s: AviaryStats): DashboardData {
  const states = Object.entries(s.tasks.by_status).map(([status, count]) => ({ status, count }))
  return {
    source: 'stats',
    states,
    total: s.tasks.total,
    perDay: s.days.map((d) => ({ day: d.date, added: d.added, finished: d.finished })),
    machines: s.machines,
    disk: s.disk,
    cpu: { load: s.cpu.load, cores: s.cpu.cores },
    memory: { total: s.memory.total, free: s.memory.free, used: s.memory.total - s.memory.free }
  }
}

export function fromCuckooStatus(s: CuckooStatus): DashboardData {
  const tasks = s.tasks ?? {}
  const states = Object.entries(tasks).filter(([k, v]) => k !== 'total' && num(v) !== null).map(([status, count]) => ({ status, count }))
  const counted = states.reduce((a, b) => a + b.count, 0)
  const total = num(tasks.total) ?? counted
  // Cuckoo's status counts four states only; failed and recovered tasks are in the total alone.
  if (total > counted) states.push({ status: 'other', count: total - counted })
  // Cuckoo reports three folders that usually share a disk; the analyses folder is the one that fills.
  const d = s.diskspace?.analyses ?? Object.values(s.diskspace ?? {})[0]
  const dt = num(d?.total), df = num(d?.free)
  const disk = dt !== null && df !== null ? { total: dt, free: df, used: num(d?.used) ?? dt - df } : null
  const load = Array.isArray(s.cpuload) ? s.cpuload.filter((v) => num(v) !== null) : []
  const mt = num(s.memtotal), ma = num(s.memavail)
  const ma2 = num(s.machines?.available), mtot = num(s.machines?.total)
  return {
    source: 'status',
    states,
    total,
    perDay: null,
    machines: ma2 !== null && mtot !== null ? { available: ma2, total: mtot } : null,
    disk,
    cpu: load.length > 0 ? { load, cores: num(s.cpu_count) } : null,
    // memtotal/memavail are in kB.
    memory: mt !== null && ma !== null ? { total: mt * 1024, free: ma * 1024, used: (mt - ma) * 1024 } : null
  }
}

/**
 * Aviary's stats, else (a plain Cuckoo server answers 404 there, an older one maybe 405) the
 * Cuckoo status.
 */
export async function loadDashboard(c: ConnectionId, signal?: AbortSignal): Promise<DashboardData> {
  try {
    return fromStats(await fetchJson(c, '/aviary/stats', AviaryStats, {}, signal))
  } catch (err) {
    if (!(err instanceof HttpError) || (err.status !== 404 && err.status !== 405)) throw err
  }
  // Only `tasks` is checked of another server's status; fromCuckooStatus reads the rest with care.
  return fromCuckooStatus((await (await clientOf(c)).status({ signal })) as CuckooStatus)
}
