// The dashboard's numbers (GET /aviary/stats): tasks by status and per day, machines, and the
// host's disk (of the data directory), CPU load and memory.
import os from 'node:os'
import type { AviaryStats, DayCounts } from '../../shared/api/ui-schemas'
import { diskSpace } from '../../shared/disk-space'
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
      disk: (await diskSpace(this.dataDir)) ?? { total: 0, free: 0, used: 0 },
      cpu: { load: os.loadavg(), cores: os.availableParallelism() },
      memory: { total: os.totalmem(), free: os.freemem() }
    }
  }
}
