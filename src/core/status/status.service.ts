// /cuckoo/status and /sandbox/status: one object that is a superset of both generations.
import os from 'node:os'
import type { ServiceStatus } from '../../shared/api/schemas'
import { diskSpace } from '../../shared/disk-space'
import type { TasksRepository } from '../db/tasks.repository'
import type { MachinesRepository } from '../db/machines.repository'
import type { StorageLayout } from '../storage/layout'
import { findTools } from './tools'

export const PROTOCOL_VERSION = 1

export class StatusService {
  private readonly tools: string[]

  constructor(
    private readonly tasks: TasksRepository,
    private readonly machines: MachinesRepository,
    private readonly layout: StorageLayout,
    private readonly version: string
  ) {
    this.tools = findTools()
  }

  async status(): Promise<ServiceStatus> {
    const [analyses, binaries, temporary] = await Promise.all(
      [this.layout.analysesRoot, this.layout.binaries, this.layout.tmp].map(async (dir) => (await diskSpace(dir)) ?? NO_DISK)
    )
    const total = os.totalmem()
    const free = os.freemem() // libuv reads MemAvailable on Linux
    return {
      cpu_count: os.availableParallelism(),
      cpuload: os.loadavg(),
      diskspace: { analyses: analyses!, binaries: binaries!, temporary: temporary! },
      hostname: os.hostname(),
      machines: this.machines.availability(),
      memavail: Math.round(free / 1024),
      memory: total > 0 ? Math.round((100 - (100 * free) / total) * 10) / 10 : null,
      memtotal: Math.round(total / 1024),
      processes: { aviary: process.pid },
      protocol_version: PROTOCOL_VERSION,
      tasks: this.tasks.counts(),
      tools: this.tools,
      version: this.version
    }
  }
}

/** What a folder that cannot be read reports. */
const NO_DISK = { free: 0, total: 0, used: 0 }
