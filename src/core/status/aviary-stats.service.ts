// The dashboard's numbers (GET /aviary/stats): tasks by status and per day, machines, and the
// host's disk (of the data directory), CPU load and memory.
import { statfs } from 'node:fs/promises'
import os from 'node:os'
import type { AviaryStats, DayCounts } from '../../shared/api/ui-schemas'
import type { TaskStats } from '../db/task-stats'
import type { MachinesRepository } from '../db/machines.repository'

const pad = (n: number): string => (n < 10 ? `0${n}` : String(n))
/** Local date, as the stored timestamps have it. */
export const localDate = (d: Date): string => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`

export class AviaryStatsService {
  constructor(
    private readonly tasks: TaskStats,
    private readonly machines: MachinesRepository,
    private readonly dataDir: string
  ) {}

  async stats(days: number, today = new Date()): Promise<AviaryStats> {
    const dates: string[] = []
    for (let i = days - 1; i >= 0; i--) {
      // Calendar arithmetic on the local date (not 24 h steps: a DST day has 23 or 25 hours).
      dates.push(localDate(new Date(today.getFullYear(), today.getMonth(), today.getDate() - i)))
    }
    const { added, finished } = this.tasks.perDay(dates[0]!)
    const perDay: DayCounts[] = dates.map((date) => ({ date, added: added.get(date) ?? 0, finished: finished.get(date) ?? 0 }))
    const counts = this.tasks.counts()
    return {
      tasks: { total: counts.total, by_status: counts.byStatus },
      days: perDay,
      machines: this.machines.availability(),
      disk: await disk(this.dataDir),
      cpu: { load: os.loadavg(), cores: os.availableParallelism() },
      memory: { total: os.totalmem(), free: os.freemem() }
    }
  }
}

async function disk(dir: string): Promise<{ total: number; free: number; used: number }> {
  try {
    const s = await statfs(dir)
    const total = s.blocks * s.bsize
    const free = s.bavail * s.bsize
    return { total, free, used: total - s.bfree * s.bsize }
  } catch {
    return { total: 0, free: 0, used: 0 }
  }
}
