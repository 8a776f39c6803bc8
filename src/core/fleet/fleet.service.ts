// What the UI may do to the machines of a running engine: start, stop and revert one, take a live
// screenshot, and run the doctor. Routes get this narrow interface (api/context.ts), never a
// driver. A start, stop or revert takes the machine's lock as a task would, so the scheduler
// leaves the machine alone meanwhile and a machine running a task is refused (409); the scheduler
// is woken when the lock is released.
import type { MachineRow, MachinesRepository } from '../db/machines.repository'
import type { MachineLocks } from '../db/machine-locks'
import { MachineError, type DriverMachine, type Finding, type MachineDriver, type VncEndpoint } from '../machinery/driver'
import { createLayout } from '../storage/layout'
import type { DriverKind } from '../../shared/api/drivers'
import { decodeFrame, JPEG_QUALITY, loadSharp } from '../capture/screenshots'
import type { DoctorReport } from '../doctor/doctor'
import { notFound } from '../errors'
import { ErrorCodes } from '../../shared/errors'
import { conflict, engineNotRunning } from './fleet-errors'
import { driverRefuses, type MachineAction } from './machine-controls'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Libvirt } from '../builder/libvirt-host'
import { leftoversFinding } from '../builder/upkeep'

/** The doctor (and the guest session it checks agents with) loads when the UI first asks for it. */
const loadDoctor = () => import('../doctor/doctor')

export interface Fleet {
  start(name: string): Promise<MachineRow>
  stop(name: string): Promise<MachineRow>
  /** Back to its snapshot (running, for a live snapshot). */
  revert(name: string): Promise<MachineRow>
  /** A JPEG of the machine's display now. */
  screenshot(name: string): Promise<Buffer>
  /** `aviary doctor`'s findings; deep checks only the machines no task is using. Cached 30 s. */
  doctor(deep: boolean): Promise<DoctorReport>
  /** Prepare mode: revert and start the machine, locked so no task gets it, until keep or discard. */
  prepare(name: string): Promise<PrepareState>
  /** Ends prepare mode: the machine as it is now becomes its snapshot (`keep`), or goes back to the old one. */
  endPrepare(name: string, how: 'keep' | 'discard'): Promise<MachineRow>
  /** The machines being prepared now. */
  preparing(): PrepareState[]
}

export interface PrepareState {
  machine: string
  since: string
  /** How to reach the guest meanwhile, in words (VNC display, serial console, the agent's address). */
  reach: string[]
}

export interface FleetDeps {
  machines: MachinesRepository
  locks: MachineLocks
  driver(kind: DriverKind): MachineDriver
  /** The engine runs (drivers may be used). */
  running(): boolean
  /** A machine's lock was released: tasks waiting for it may start. */
  released(): void
  machinesFile: string
  /** libvirt's URI of kvm machines (machines.json's kvm.uri now). */
  kvmUri(): string
  /** A machine's folder (the marker of prepare mode is kept there, so a restart keeps it locked). */
  machineDir(name: string): string
  /**
   * Opens a machine's live console while it is prepared (the engine registers it with the console
   * hub: injected, so this folder does not import the console's); absent: no console.
   */
  openConsole?(machine: string, endpoint: () => Promise<VncEndpoint>): { close(reason: string): void }
}

const PREPARING = 'preparing.json'

const DOCTOR_CACHE_MS = 30_000

export class FleetService implements Fleet {
  private readonly inFlight = new Set<Promise<unknown>>()
  private readonly doctorCache = new Map<boolean, { at: number; report: Promise<DoctorReport> }>()
  private readonly prepared = new Map<string, PrepareState>()
  /** The live consoles of the machines being prepared. */
  private readonly consoles = new Map<string, { close(reason: string): void }>()

  constructor(private readonly d: FleetDeps) {}

  start(name: string): Promise<MachineRow> {
    return this.withLock(name, 'start', async (driver, dm) => {
      if ((await driver.state(dm).catch(() => 'error')) !== 'running') await driver.start(dm)
    })
  }

  stop(name: string): Promise<MachineRow> {
    return this.withLock(name, 'stop', (driver, dm) => driver.stop(dm))
  }

  revert(name: string): Promise<MachineRow> {
    return this.withLock(name, 'revert', async (driver, dm) => {
      await driver.start(dm) // the drivers' start is a revert to the snapshot, then a start if needed
    })
  }

  async screenshot(name: string): Promise<Buffer> {
    const row = this.machine(name)
    const driver = this.d.driver(row.driver)
    this.refuseWhatDriverCannot(row, driver, 'screenshot')
    const dm = driverMachine(row)
    const state = await driver.state(dm).catch(() => 'error')
    if (state !== 'running') throw conflict(`${row.name} is not running (${state}): there is no screen to show`)
    const frame = await this.track(driver.screenshot(dm).then(decodeFrame)).catch((err: unknown) => {
      throw err instanceof MachineError ? conflict(`screenshot of ${row.name} failed: ${err.message}`) : err
    })
    const sharp = await loadSharp()
    return sharp(frame.data, { raw: { width: frame.width, height: frame.height, channels: frame.channels } })
      .jpeg({ quality: JPEG_QUALITY }).toBuffer()
  }

  doctor(deep: boolean): Promise<DoctorReport> {
    this.ensureRunning()
    const cached = this.doctorCache.get(deep)
    if (cached && Date.now() - cached.at < DOCTOR_CACHE_MS) return cached.report
    const report = this.track(deep ? this.deepDoctor() : loadDoctor().then(({ runDoctor }) => runDoctor({ machinesFile: this.d.machinesFile, deep: false, leftovers: () => this.leftovers() })))
    this.doctorCache.set(deep, { at: Date.now(), report })
    report.catch(() => this.doctorCache.delete(deep))
    return report
  }

  preparing(): PrepareState[] {
    return [...this.prepared.values()]
  }

  async prepare(name: string): Promise<PrepareState> {
    const row = this.machine(name)
    if (row.driver !== 'kvm') throw conflict(`${row.name}: prepare mode needs a kvm machine (a snapshot to replace); this one is ${row.driver}`)
    if (this.prepared.has(name)) throw conflict(`${row.name} is being prepared already: keep or discard first`)
    if (!this.d.locks.tryLock(row.id)) throw conflict(`${row.name} is locked by a running task (or another action): try again when it is released`)
    try {
      const driver = this.d.driver(row.driver)
      await this.track(driver.start(driverMachine(row))).catch((err: unknown) => {
        throw err instanceof MachineError ? conflict(`prepare of ${row.name} failed: ${err.message}`) : err
      })
      await driver.state(driverMachine(row)).then((st) => this.d.machines.setStatus(row.id, st), () => undefined)
      const state: PrepareState = { machine: name, since: new Date().toISOString(), reach: await this.reach(row) }
      this.prepared.set(name, state)
      mkdirSync(this.d.machineDir(name), { recursive: true })
      writeFileSync(path.join(this.d.machineDir(name), PREPARING), JSON.stringify(state) + '\n')
      this.openConsole(row)
      return state
    } catch (err) {
      this.d.machines.unlock(row.id)
      this.d.released()
      throw err
    }
  }

  async endPrepare(name: string, how: 'keep' | 'discard'): Promise<MachineRow> {
    const row = this.machine(name)
    if (!this.prepared.has(name)) throw conflict(`${row.name} is not being prepared`)
    const lv = new Libvirt(this.d.kvmUri())
    const snap = row.snapshot ?? 'clean'
    await this.track((async () => {
      if (how === 'keep') {
        if ((await lv.domState(row.label)) !== 'running') throw conflict(`${row.name} is not running: start it again (prepare) or discard`)
        // The new state is saved under another name before the old snapshot goes, so a failure
        // half way leaves a snapshot to revert to (the leftovers find the spare one).
        const spare = `${snap}-prepared-${Date.now()}`
        await lv.run(['snapshot-create-as', row.label, spare, '--atomic'], `snapshotting ${row.label}`, 600_000)
        await lv.run(['snapshot-delete', row.label, snap], `deleting the old snapshot of ${row.label}`, 600_000)
        await lv.run(['snapshot-create-as', row.label, snap, '--description', 'agent running: every analysis reverts here (kept after prepare mode)', '--atomic'], `snapshotting ${row.label}`, 600_000)
        await lv.run(['snapshot-delete', row.label, spare], `deleting the spare snapshot of ${row.label}`, 600_000)
      } else {
        await lv.run(['snapshot-revert', row.label, snap], `reverting ${row.label}`, 600_000)
      }
      await lv.destroyIfRunning(row.label)
    })()).catch((err: unknown) => {
      throw err instanceof MachineError ? conflict(`${how} of ${row.name} failed: ${err.message}`) : err
    })
    this.prepared.delete(name)
    this.closeConsole(name, how === 'keep' ? 'prepare mode ended: the changes were kept' : 'prepare mode ended: the changes were discarded')
    rmSync(path.join(this.d.machineDir(name), PREPARING), { force: true })
    this.d.machines.setStatus(row.id, 'poweroff')
    this.d.machines.unlock(row.id)
    this.d.released()
    return this.d.machines.findByName(name) ?? row
  }

  /** After a restart (which unlocks every machine): the machines left in prepare mode are locked again. */
  restorePrepared(): void {
    for (const row of this.d.machines.list()) {
      const file = path.join(this.d.machineDir(row.name), PREPARING)
      if (!existsSync(file)) continue
      try {
        const state = JSON.parse(readFileSync(file, 'utf8')) as PrepareState
        if (this.d.locks.tryLock(row.id)) {
          this.prepared.set(row.name, { ...state, machine: row.name })
          this.openConsole(row)
        }
      } catch {
        rmSync(file, { force: true })
      }
    }
  }

  /** Closes the consoles of the machines being prepared (the service stops; the marker stays). */
  closeConsoles(reason: string): void {
    for (const name of [...this.consoles.keys()]) this.closeConsole(name, reason)
  }

  /** The machine's screen in the UI: its driver's VNC endpoint, asked by each new session. */
  private openConsole(row: MachineRow): void {
    if (!this.d.openConsole) return
    this.consoles.get(row.name)?.close('prepare mode started again')
    const dm = driverMachine(row)
    this.consoles.set(row.name, this.d.openConsole(row.name, () => this.d.driver(row.driver).consoleEndpoint(dm)))
  }

  private closeConsole(name: string, reason: string): void {
    this.consoles.get(name)?.close(reason)
    this.consoles.delete(name)
  }

  /** How to reach a machine being prepared besides its live console (the fallback the panel keeps). */
  private async reach(row: MachineRow): Promise<string[]> {
    const uri = this.d.kvmUri()
    const lv = new Libvirt(uri)
    const display = (await lv.run(['domdisplay', row.label], `reading the display of ${row.label}`).catch(() => '')).trim()
    return [
      display ? `its screen: ${display} (e.g. virt-viewer -c ${uri} ${row.label})` : `its screen: virt-viewer -c ${uri} ${row.label}`,
      `its serial console: virsh -c ${uri} console ${row.label}`,
      `its agent: http://${row.ip}:8000 (POST /execute runs a command, as the analyses do)`
    ]
  }

  /** Resolves once no action started here is still using a driver (the engine stops after). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight])
  }

  /** What a crash left in this data folder (builder/upkeep.ts), for the doctor. */
  private leftovers(): Promise<Finding> {
    return leftoversFinding(createLayout(path.dirname(this.d.machinesFile)))
  }

  /** Deep checks revert, start and stop machines: only those no task uses, locked meanwhile. */
  private async deepDoctor(): Promise<DoctorReport> {
    const rows = this.d.machines.list()
    const taken = rows.filter((m) => this.d.locks.tryLock(m.id))
    try {
      const busy = rows.filter((m) => !taken.includes(m))
      const { runDoctor } = await loadDoctor()
      const report = await runDoctor({ machinesFile: this.d.machinesFile, deep: taken.length > 0, only: taken.map((m) => m.name) })
      for (const m of busy) {
        const skipped = { check: 'deep check', ok: true, detail: 'not checked: the machine is in use by a task' }
        const entry = report.machines.find((r) => r.name === m.name)
        if (entry) entry.findings.push(skipped)
        else if (taken.length > 0) report.machines.push({ name: m.name, driver: m.driver, findings: [skipped] })
      }
      return report
    } finally {
      for (const m of taken) this.d.machines.unlock(m.id)
      if (taken.length > 0) this.d.released()
    }
  }

  /** The same refusals the UI's controls show (machine-controls.ts), before the driver is asked. */
  private refuseWhatDriverCannot(row: MachineRow, driver: MachineDriver, action: MachineAction): void {
    const why = driverRefuses(row.driver, driver.capabilities, action)
    if (why !== null) throw conflict(`${row.name}: ${why}`)
  }

  private async withLock(name: string, action: Exclude<MachineAction, 'screenshot'>,
    fn: (driver: MachineDriver, dm: DriverMachine, row: MachineRow) => Promise<void>): Promise<MachineRow> {
    const row = this.machine(name)
    const driver = this.d.driver(row.driver)
    this.refuseWhatDriverCannot(row, driver, action)
    if (!this.d.locks.tryLock(row.id)) {
      throw conflict(`${row.name} is locked by a running task (or another start, stop or revert): try again when it is released`)
    }
    const dm = driverMachine(row)
    try {
      await this.track(fn(driver, dm, row)).catch((err: unknown) => {
        throw err instanceof MachineError ? conflict(`${action} of ${row.name} failed: ${err.message}`) : err
      })
      await driver.state(dm).then((st) => this.d.machines.setStatus(row.id, st), () => undefined)
    } finally {
      this.d.machines.unlock(row.id)
      this.d.released()
    }
    return this.d.machines.findByName(row.name) ?? row
  }

  private machine(name: string): MachineRow {
    const row = this.d.machines.findByName(name)
    if (!row) throw notFound('Machine not found', ErrorCodes.MACHINE_NOT_FOUND)
    this.ensureRunning()
    return row
  }

  private ensureRunning(): void {
    if (!this.d.running()) throw engineNotRunning()
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p)
    const done = () => this.inFlight.delete(p)
    p.then(done, done)
    return p
  }
}

function driverMachine(row: MachineRow): DriverMachine {
  return { name: row.name, label: row.label, ip: row.ip, snapshot: row.snapshot, platform: row.platform, interface: row.interface, options: JSON.parse(row.options) as string[] }
}
