// The VirtualBox driver: every operation is a VBoxManage run (settings.virtualbox.path), as in
// Cuckoo's virtualbox machinery, since VirtualBox has no maintained Node binding. A live snapshot
// restores into "saved" and startvm resumes it; stop is a hard `controlvm poweroff`.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { MachineError, type DriverMachine, type DriverCapabilities, type DriverRegistration, type Finding, type MachineDriver, type VmState, type VncEndpoint } from './driver'
import { pollUntil, runTool, ToolError, type ToolResult } from './exec-tool'
import { Type, type Static } from 'typebox'
import type { EngineSettings } from './machines-config'
import { NO_CONSOLE } from '../../shared/api/drivers'

/** machines.json's `virtualbox` section (docs/machines.md), read here with the driver that uses it. */
export const VirtualBoxSection = Type.Object({
  path: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  mode: Type.Optional(Type.Enum(['headless', 'gui']))
}, { additionalProperties: false })
export interface VirtualBoxSettings { path: string; mode: 'headless' | 'gui' }
/** Cuckoo's virtualbox.conf defaults. */
export const VIRTUALBOX_DEFAULTS: VirtualBoxSettings = { path: '/usr/bin/VBoxManage', mode: 'headless' }
export const readVirtualBoxSection = (s: Static<typeof VirtualBoxSection> | undefined): VirtualBoxSettings =>
  ({ path: s?.path ?? VIRTUALBOX_DEFAULTS.path, mode: s?.mode ?? VIRTUALBOX_DEFAULTS.mode })

const STATES: Record<string, VmState> = {
  running: 'running',
  paused: 'paused',
  poweroff: 'poweroff',
  saved: 'saved',
  aborted: 'aborted'
}

export interface VirtualBoxOptions {
  path: string
  mode: 'headless' | 'gui'
  /** Seconds to wait for a state change (machines.json timeouts.vm_state). */
  vmStateSeconds: number
}

export class VirtualBoxDriver implements MachineDriver {
  readonly kind = 'virtualbox' as const
  /** VBoxManage restores snapshots, powers VMs off, takes screenshots and core dumps. */
  static readonly capabilities: Readonly<DriverCapabilities> = Object.freeze({ power: true, revert: true, reset: true, screenshots: true, memoryDump: true, console: false })
  readonly capabilities = VirtualBoxDriver.capabilities
  /** Cuckoo serializes power-ons: concurrent startvm calls upset VBoxSVC. */
  private powerLock: Promise<unknown> = Promise.resolve()

  constructor(private readonly o: VirtualBoxOptions) {}

  static fromSettings(s: EngineSettings): VirtualBoxDriver {
    return new VirtualBoxDriver({ path: s.virtualbox.path, mode: s.virtualbox.mode, vmStateSeconds: s.timeouts.vmState })
  }

  private vbox(args: string[], what: string, signal?: AbortSignal): Promise<ToolResult> {
    return runTool(this.o.path, args, what, Math.max(60, this.o.vmStateSeconds) * 1000, signal)
  }

  async check(m: DriverMachine): Promise<Finding[]> {
    const findings: Finding[] = []
    let listed: string
    try {
      listed = (await this.vbox(['list', 'vms'], 'VBoxManage list vms')).stdout
    } catch (err) {
      return [{ check: 'hypervisor', ok: false, detail: (err as Error).message, fix: `install VirtualBox or set virtualbox.path in machines.json to VBoxManage (now ${this.o.path})` }]
    }
    findings.push({ check: 'hypervisor', ok: true, detail: `${this.o.path} answers` })
    // `"name" {uuid}` per line; the name is what lies between the first pair of quotes.
    const names = listed.split('\n').map((l) => /^"(.*)" \{/.exec(l)?.[1]).filter((n): n is string => n !== undefined && n !== '<inaccessible>')
    if (!names.includes(m.label)) {
      findings.push({ check: 'vm', ok: false, detail: `VirtualBox has no VM named '${m.label}'`, fix: `set the label of '${m.name}' to one of: ${names.join(', ') || '(no VMs registered)'}` })
      return findings
    }
    findings.push({ check: 'vm', ok: true, detail: `VM '${m.label}' exists` })
    findings.push(await this.checkSnapshot(m))
    return findings
  }

  private async checkSnapshot(m: DriverMachine): Promise<Finding> {
    let out = ''
    try {
      out = (await this.vbox(['snapshot', m.label, 'list', '--machinereadable'], 'VBoxManage snapshot list')).stdout
    } catch (err) {
      // With no snapshot at all VBoxManage prints "This machine does not have any snapshots" and exits 1.
      if (!(err instanceof ToolError)) throw err
    }
    const names = [...out.matchAll(/^SnapshotName(?:-\d+)*="(.*)"$/gm)].map((x) => x[1] ?? '')
    const current = /^CurrentSnapshotName="(.*)"$/m.exec(out)?.[1]
    const fix = `take a snapshot of '${m.label}' while it runs with the agent up (VBoxManage snapshot ${m.label} take ${m.snapshot ?? 'clean'} --live)`
    if (m.snapshot) {
      if (names.includes(m.snapshot)) return { check: 'snapshot', ok: true, detail: `snapshot '${m.snapshot}' exists` }
      return { check: 'snapshot', ok: false, detail: `VM '${m.label}' has no snapshot '${m.snapshot}' (it has: ${names.join(', ') || 'none'})`, fix }
    }
    if (current) return { check: 'snapshot', ok: true, detail: `current snapshot '${current}'` }
    return { check: 'snapshot', ok: false, detail: `VM '${m.label}' has no snapshot`, fix }
  }

  async state(m: DriverMachine): Promise<VmState> {
    let out: string
    try {
      out = (await this.vbox(['showvminfo', m.label, '--machinereadable'], `VBoxManage showvminfo ${m.label}`)).stdout
    } catch (err) {
      if (err instanceof ToolError && err.stderr.includes('VBOX_E_OBJECT_NOT_FOUND')) throw new MachineError(`VirtualBox has no VM named '${m.label}'`)
      if (err instanceof ToolError && err.code === 'ENOENT') throw err
      return 'error'
    }
    const raw = /^VMState="(.*)"$/m.exec(out)?.[1]?.toLowerCase() ?? ''
    return STATES[raw] ?? 'error'
  }

  private async waitFor(m: DriverMachine, want: VmState[], signal?: AbortSignal): Promise<void> {
    let last: VmState = 'error'
    const ok = await pollUntil(async () => want.includes((last = await this.state(m))), this.o.vmStateSeconds * 1000, signal)
    if (!ok) throw new MachineError(`VM '${m.label}' is ${last}, not ${want.join(' or ')}, after ${this.o.vmStateSeconds} s`)
  }

  async start(m: DriverMachine, signal?: AbortSignal): Promise<void> {
    const now = await this.state(m)
    if (now === 'running' || now === 'paused') await this.poweroff(m)
    const restore = m.snapshot ? ['snapshot', m.label, 'restore', m.snapshot] : ['snapshot', m.label, 'restorecurrent']
    await this.vbox(restore, `restoring ${m.snapshot ? `snapshot '${m.snapshot}'` : 'the current snapshot'} of '${m.label}'`, signal)
    // A live snapshot comes back "saved" (startvm resumes it); an offline one "poweroff" (it boots).
    await this.waitFor(m, ['saved', 'poweroff'], signal)
    await this.withPowerLock(async () => {
      const r = await this.vbox(['startvm', m.label, '--type', this.o.mode], `starting '${m.label}'`, signal)
      // Cuckoo treats any error output of startvm as a failure, even with exit code 0.
      if (/error/i.test(r.stderr)) throw new MachineError(`starting '${m.label}': ${r.stderr.trim().split('\n')[0]}`)
    })
    await this.waitFor(m, ['running'], signal)
  }

  private async withPowerLock<T>(f: () => Promise<T>): Promise<T> {
    const run = this.powerLock.then(f, f)
    this.powerLock = run.catch(() => undefined)
    return run
  }

  private async poweroff(m: DriverMachine): Promise<void> {
    await this.vbox(['controlvm', m.label, 'poweroff'], `powering off '${m.label}'`)
    await this.waitFor(m, ['poweroff', 'aborted', 'saved'])
  }

  async stop(m: DriverMachine): Promise<void> {
    const now = await this.state(m)
    // saved (restored, never started), poweroff and aborted are all stopped already.
    if (now === 'running' || now === 'paused' || now === 'error') await this.poweroff(m)
  }

  async consoleEndpoint(m: DriverMachine): Promise<VncEndpoint> {
    throw new MachineError(`'${m.name}' is a VirtualBox machine: ${NO_CONSOLE.virtualbox}`)
  }

  async screenshot(m: DriverMachine): Promise<Buffer> {
    const dir = await mkdtemp(path.join(tmpdir(), 'aviary-vbox-shot-'))
    try {
      const file = path.join(dir, 'screen.png')
      await this.vbox(['controlvm', m.label, 'screenshotpng', file], `screenshot of '${m.label}'`)
      return await readFile(file)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }

  async dumpMemory(m: DriverMachine, dest: string): Promise<void> {
    // dumpvmcore works on VirtualBox 5 to 7 (Cuckoo's switch to dumpguestcore for 7 was a mistake).
    await this.vbox(['debugvm', m.label, 'dumpvmcore', '--filename', dest], `memory dump of '${m.label}'`)
    const size = await stat(dest).then((s) => s.size, () => 0)
    if (size === 0) throw new MachineError(`memory dump of '${m.label}': VBoxManage wrote no dump`)
  }

  async close(): Promise<void> {
    await this.powerLock
  }
}

export const virtualboxRegistration: DriverRegistration<'virtualbox'> = {
  kind: 'virtualbox',
  capabilities: VirtualBoxDriver.capabilities,
  make: (s) => VirtualBoxDriver.fromSettings(s),
  settings: (s) => [s.virtualbox, s.timeouts.vmState]
}
