// Machines: the configured fleet, mirrored into the database at start so tasks, locks and
// status changes refer to rows. Machines dropped from the config stay (old tasks name them)
// but are no longer listed or used.
import type { Db } from './database'
import type { MachineConfig } from '../machinery/machines-config'
import type { DriverKind } from '../../shared/api/drivers'
import { now } from '../../shared/time'

export interface MachineRow {
  id: number
  name: string
  label: string
  platform: string
  ip: string
  tags: string
  snapshot: string | null
  interface: string | null
  resultserver_ip: string
  resultserver_port: number
  /** Written from machines.json, whose schema allows only the registered kinds. */
  driver: DriverKind
  options: string
  locked: number
  locked_changed_on: string | null
  status: string | null
  status_changed_on: string | null
  configured: number
}

export class MachinesRepository {
  private readonly db: Db
  private readonly listStmt
  private readonly byName
  private readonly counts

  constructor(db: Db) {
    this.db = db
    this.listStmt = db.prepare<[], MachineRow>('SELECT * FROM machines WHERE configured = 1 ORDER BY id')
    this.byName = db.prepare<[string], MachineRow>('SELECT * FROM machines WHERE configured = 1 AND name = ?')
    this.counts = db.prepare<[], { total: number; available: number }>(
      'SELECT count(*) AS total, coalesce(sum(locked = 0), 0) AS available FROM machines WHERE configured = 1'
    )
  }

  /** Makes the configured machines the listed ones; ids of known names are kept. */
  sync(machines: MachineConfig[]): void {
    const upsert = this.db.prepare(
      `INSERT INTO machines (name, label, platform, ip, tags, snapshot, interface, resultserver_ip,
         resultserver_port, driver, options, configured)
       VALUES (@name, @label, @platform, @ip, @tags, @snapshot, @interface, @resultserver_ip,
         @resultserver_port, @driver, @options, 1)
       ON CONFLICT(name) DO UPDATE SET label = excluded.label, platform = excluded.platform, ip = excluded.ip,
         tags = excluded.tags, snapshot = excluded.snapshot, interface = excluded.interface,
         resultserver_ip = excluded.resultserver_ip, resultserver_port = excluded.resultserver_port,
         driver = excluded.driver, options = excluded.options, configured = 1`
    )
    this.db.transaction(() => {
      this.db.prepare('UPDATE machines SET configured = 0').run()
      for (const m of machines) {
        upsert.run({ ...m, tags: JSON.stringify(m.tags), options: JSON.stringify(m.options) })
      }
    })()
  }

  list(): MachineRow[] {
    return this.listStmt.all()
  }

  findByName(name: string): MachineRow | undefined {
    return this.byName.get(name)
  }

  /** Older clients name a machine by its id. */
  findByNameOrId(value: string): MachineRow | undefined {
    return this.byName.get(value) ?? (/^\d+$/.test(value) ? this.list().find((m) => m.id === Number(value)) : undefined)
  }

  findById(id: number): MachineRow | undefined {
    return this.db.prepare<[number], MachineRow>('SELECT * FROM machines WHERE id = ?').get(id)
  }

  /** Configured machines, locked or not: what the scheduler matches tasks against. */
  configured(): MachineRow[] {
    return this.listStmt.all()
  }

  unlock(id: number): void {
    this.db.prepare(`UPDATE machines SET locked = 0, locked_changed_on = ? WHERE id = ? AND locked = 1`).run(now(), id)
  }

  /** At start nothing runs yet: locks left by a crash are stale. Returns the machines that were locked. */
  unlockAll(): MachineRow[] {
    return this.db.transaction(() => {
      const locked = this.db.prepare<[], MachineRow>('SELECT * FROM machines WHERE locked = 1').all()
      this.db.prepare('UPDATE machines SET locked = 0, locked_changed_on = ? WHERE locked = 1').run(now())
      return locked
    })()
  }

  /** The hypervisor's word for the machine (running, poweroff, ...), stamped when it changes. */
  setStatus(id: number, status: string): void {
    this.db.prepare('UPDATE machines SET status = @status, status_changed_on = @now WHERE id = @id AND status IS NOT @status')
      .run({ id, status, now: now() })
  }

  availability(): { total: number; available: number } {
    return this.counts.get() as { total: number; available: number }
  }
}
