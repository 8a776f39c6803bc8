// The KVM driver: libvirt through @unraid/libvirt for what it binds (domain lookup, state,
// destroy: one connection, ~2 ms a call) and `virsh -c <uri>` for what it does not (snapshots,
// screenshots, memory dumps: ~20 ms a process). Like Cuckoo's kvm machinery it reverts a snapshot
// and never boots a clean guest itself; unlike it, an offline snapshot is started after the revert
// (`--running`) instead of timing out, and a running domain is destroyed first instead of refused.
import type { Domain, Hypervisor } from '@unraid/libvirt'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { MachineError, type DriverMachine, type DriverCapabilities, type DriverRegistration, type Finding, type MachineDriver, type VmState, type VncEndpoint } from './driver'
import { pollUntil, runTool, ToolError } from './exec-tool'
import { domainType, hostAccel } from './accel'
import { Type, type Static } from 'typebox'
import type { EngineSettings } from './machines-config'

/** machines.json's `kvm` section (docs/machines.md), read here with the driver that uses it. */
export const KvmSection = Type.Object({ uri: Type.Optional(Type.String({ minLength: 1 })) }, { additionalProperties: false })
export interface KvmSettings { uri: string }
/** Cuckoo's kvm.conf default. */
export const KVM_DEFAULTS: KvmSettings = { uri: 'qemu:///system' }
export const readKvmSection = (s: Static<typeof KvmSection> | undefined): KvmSettings => ({ uri: s?.uri ?? KVM_DEFAULTS.uri })

export interface KvmOptions {
  uri: string
  /** Seconds to wait for a state change (machines.json timeouts.vm_state). */
  vmStateSeconds: number
  /** The virsh executable. Default 'virsh' from PATH. */
  virsh?: string
}

/**
 * libvirt's virDomainState numbers (a stable ABI: NOSTATE 0, RUNNING 1, BLOCKED 2, PAUSED 3,
 * SHUTDOWN 4, SHUTOFF 5, CRASHED 6, PMSUSPENDED 7) in Cuckoo's words
 * (abstracts.py LibVirtMachinery._status). Numbers, not the binding's enum, so that this module
 * loads the native binding only when a kvm machine is first used.
 */
const STATES: readonly VmState[] = ['error', 'running', 'running', 'paused', 'poweroff', 'poweroff', 'aborted', 'paused']

export function toVmState(s: number): VmState {
  return STATES[s] ?? 'error'
}

/** The binding's errors carry libvirt's message after a prefix; keep libvirt's own words. */
function libvirtMessage(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err)
  return msg.replace(/^(LibvirtError|Error):\s*/, '').split('\n')[0] ?? msg
}

export class KvmDriver implements MachineDriver {
  readonly kind = 'kvm' as const
  /** libvirt reverts snapshots, powers domains off, takes screenshots and memory-only dumps. */
  static readonly capabilities: Readonly<DriverCapabilities> = Object.freeze({ power: true, revert: true, reset: true, screenshots: true, memoryDump: true, console: true })
  readonly capabilities = KvmDriver.capabilities
  private hv: Promise<Hypervisor> | null = null
  private readonly virshPath: string

  constructor(private readonly o: KvmOptions) {
    this.virshPath = o.virsh ?? 'virsh'
  }

  static fromSettings(s: EngineSettings): KvmDriver {
    return new KvmDriver({ uri: s.kvm.uri, vmStateSeconds: s.timeouts.vmState })
  }

  /** The one connection, opened on first use; a failed open is retried on the next call. */
  private connect(): Promise<Hypervisor> {
    if (!this.hv) {
      const opening = (async () => {
        let hv: Hypervisor
        try {
          const { Hypervisor: Binding } = await import('@unraid/libvirt')
          hv = new Binding({ uri: this.o.uri })
        } catch (err) {
          throw new MachineError(`the libvirt binding (@unraid/libvirt) cannot load: ${libvirtMessage(err)}`)
        }
        try {
          await hv.connectOpen()
        } catch (err) {
          throw new MachineError(`cannot connect to libvirt at ${this.o.uri}: ${libvirtMessage(err)}`)
        }
        return hv
      })()
      this.hv = opening
      opening.catch(() => {
        if (this.hv === opening) this.hv = null
      })
    }
    return this.hv
  }

  private async domain(m: DriverMachine): Promise<Domain> {
    const hv = await this.connect()
    try {
      return await hv.domainLookupByName(m.label)
    } catch (err) {
      const msg = libvirtMessage(err)
      if (/not found|no domain/i.test(msg)) throw new MachineError(`libvirt (${this.o.uri}) has no domain named '${m.label}'`)
      // Anything else may be a dead connection (libvirtd restarted): the next call opens a new one.
      if (this.hv) {
        const old = this.hv
        this.hv = null
        void old.then((h) => h.connectClose()).catch(() => undefined)
      }
      throw new MachineError(`looking up domain '${m.label}': ${msg}`)
    }
  }

  private virsh(args: string[], what: string, timeoutMs = Math.max(60, this.o.vmStateSeconds) * 1000, signal?: AbortSignal): Promise<string> {
    return runTool(this.virshPath, ['-q', '-c', this.o.uri, ...args], what, timeoutMs, signal).then((r) => r.stdout)
  }

  async check(m: DriverMachine): Promise<Finding[]> {
    let hv: Hypervisor
    try {
      hv = await this.connect()
    } catch (err) {
      return [{ check: 'hypervisor', ok: false, detail: (err as Error).message, fix: `start libvirtd, or set kvm.uri in machines.json (now ${this.o.uri})` }]
    }
    const findings: Finding[] = [{ check: 'hypervisor', ok: true, detail: `libvirt answers at ${this.o.uri}` }]
    try {
      await this.domain(m)
    } catch (err) {
      const names = await Promise.all((await hv.connectListAllDomains()).map((d) => d.getName())).catch(() => [] as string[])
      findings.push({ check: 'vm', ok: false, detail: (err as Error).message, fix: `set the label of '${m.name}' to one of: ${names.join(', ') || '(no domains defined)'}` })
      return findings
    }
    findings.push({ check: 'vm', ok: true, detail: `domain '${m.label}' exists` })
    const accel = await this.checkAccelerator(m).catch(() => null)
    if (accel) findings.push(accel)
    findings.push(await this.checkSnapshot(m))
    return findings
  }

  /** KVM or TCG: what the domain asks for, against what libvirt can give (accel.ts). */
  private async checkAccelerator(m: DriverMachine): Promise<Finding | null> {
    const type = domainType(await this.virsh(['dumpxml', m.label], 'reading the domain'))
    if (type !== 'kvm' && type !== 'qemu') return null // libvirt's test hypervisor, or another one
    const host = await hostAccel(this.o.uri, this.virshPath)
    const check = 'accelerator'
    if (type === 'kvm') {
      return host.type === 'kvm'
        ? { check, ok: true, detail: 'KVM (hardware virtualization)' }
        : { check, ok: false, detail: `domain '${m.label}' asks for KVM, which this host cannot give: ${host.reason}`, fix: `make KVM work here, or switch the domain to TCG: virsh -c ${this.o.uri} edit ${m.label} (type='qemu')` }
    }
    return host.type === 'kvm'
      ? { check, ok: true, detail: `TCG (software emulation), although this host has KVM: make the machine again, or set type='kvm' (virsh -c ${this.o.uri} edit ${m.label})` }
      : { check, ok: true, detail: host.reason }
  }

  private async checkSnapshot(m: DriverMachine): Promise<Finding> {
    const fix = `take a snapshot of '${m.label}' while it runs with the agent up: virsh -c ${this.o.uri} snapshot-create-as ${m.label} ${m.snapshot ?? 'clean'}`
    const names = (await this.virsh(['snapshot-list', m.label, '--name'], 'listing snapshots')).split('\n').map((s) => s.trim()).filter(Boolean)
    if (m.snapshot && !names.includes(m.snapshot)) {
      return { check: 'snapshot', ok: false, detail: `domain '${m.label}' has no snapshot '${m.snapshot}' (it has: ${names.join(', ') || 'none'})`, fix }
    }
    const name = m.snapshot ?? (await this.currentSnapshot(m))
    if (!name) return { check: 'snapshot', ok: false, detail: `domain '${m.label}' has no snapshot`, fix }
    const info = await this.virsh(['snapshot-info', m.label, name], 'reading the snapshot')
    const live = /^State:\s+(running|paused)/m.test(info)
    return {
      check: 'snapshot', ok: true,
      detail: `snapshot '${name}'${m.snapshot ? '' : ' (current)'} ${live ? 'is a running one' : 'is of a shut off domain: each analysis boots the guest'}`
    }
  }

  /** The current snapshot, else the newest one (as Cuckoo falls back), else null. */
  private async currentSnapshot(m: DriverMachine): Promise<string | null> {
    try {
      const name = (await this.virsh(['snapshot-current', m.label, '--name'], 'reading the current snapshot')).trim()
      if (name) return name
    } catch (err) {
      if (!(err instanceof ToolError)) throw err
    }
    // `snapshot-list`: "name  YYYY-MM-DD HH:MM:SS +ZZZZ  state" per line.
    const rows = (await this.virsh(['snapshot-list', m.label], 'listing snapshots')).split('\n')
      .map((l) => /^\s*(\S+)\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)/.exec(l))
      .filter((x): x is RegExpExecArray => x !== null)
      .sort((a, b) => (b[2] ?? '').localeCompare(a[2] ?? ''))
    return rows[0]?.[1] ?? null
  }

  async state(m: DriverMachine): Promise<VmState> {
    return this.stateOf(await this.domain(m), m).catch(() => 'error' as const)
  }

  private async stateOf(d: Domain, m: DriverMachine): Promise<VmState> {
    try {
      return toVmState((await d.getInfo()).state)
    } catch (err) {
      throw new MachineError(`reading the state of '${m.label}': ${libvirtMessage(err)}`)
    }
  }

  private async waitFor(m: DriverMachine, want: VmState, signal?: AbortSignal): Promise<void> {
    let last: VmState = 'error'
    const ok = await pollUntil(async () => (last = await this.state(m)) === want, this.o.vmStateSeconds * 1000, signal)
    if (!ok) throw new MachineError(`domain '${m.label}' is ${last}, not ${want}, after ${this.o.vmStateSeconds} s`)
  }

  async start(m: DriverMachine, signal?: AbortSignal): Promise<void> {
    if ((await this.state(m)) !== 'poweroff') await this.stop(m)
    const name = m.snapshot ?? (await this.currentSnapshot(m))
    if (!name) throw new MachineError(`domain '${m.label}' has no snapshot to revert to`)
    // --running: a running snapshot resumes as it was; an offline one is booted after the revert.
    await this.virsh(['snapshot-revert', m.label, name, '--running'], `reverting '${m.label}' to snapshot '${name}'`, undefined, signal)
    // QEMU honours --running; libvirt's test driver leaves an offline snapshot shut off: boot it.
    const d = await this.domain(m)
    if ((await this.stateOf(d, m)) === 'poweroff') {
      await d.create().catch((err: unknown) => {
        throw new MachineError(`starting '${m.label}' after reverting to '${name}': ${libvirtMessage(err)}`)
      })
    }
    await this.waitFor(m, 'running', signal)
  }

  async stop(m: DriverMachine): Promise<void> {
    const d = await this.domain(m)
    if ((await this.stateOf(d, m)) === 'poweroff') return
    try {
      await d.destroy()
    } catch (err) {
      // It may have gone off between the two calls; anything else is a real failure.
      if ((await this.stateOf(d, m)) !== 'poweroff') throw new MachineError(`powering off '${m.label}': ${libvirtMessage(err)}`)
    }
    await this.waitFor(m, 'poweroff')
  }

  async screenshot(m: DriverMachine): Promise<Buffer> {
    const dir = await mkdtemp(path.join(tmpdir(), 'aviary-kvm-shot-'))
    try {
      const file = path.join(dir, 'screen')
      await this.virsh(['screenshot', m.label, file], `screenshot of '${m.label}'`)
      return await readFile(file)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }

  /**
   * The VNC server of the running domain, from its live XML (libvirt fills in the port an autoport
   * display got). A display on a remote hypervisor's host (qemu+ssh://) or without VNC has none
   * that this host can carry, and says so.
   */
  async consoleEndpoint(m: DriverMachine): Promise<VncEndpoint> {
    const xml = await this.virsh(['dumpxml', m.label], `reading the display of '${m.label}'`)
    const found = vncOfDomainXml(xml)
    if (typeof found === 'string') throw new MachineError(`'${m.label}': ${found}`)
    if ('host' in found && !/^(qemu|test):\/\/\/|^qemu\+unix:\/\/\//.test(this.o.uri)) {
      throw new MachineError(`'${m.label}' runs on another host (${this.o.uri}): its VNC server is not reachable from here`)
    }
    return found
  }

  async dumpMemory(m: DriverMachine, dest: string): Promise<void> {
    // A memory-only ELF core (Cuckoo's coreDump with VIR_DUMP_MEMORY_ONLY); large guests take a while.
    // libvirtd writes the file; created here first (as Cuckoo does) it keeps our owner and mode.
    // With a remote uri (qemu+ssh://) the dump lands on the hypervisor's host, not this one.
    await writeFile(dest, '')
    try {
      await this.virsh(['dump', m.label, dest, '--memory-only', '--format', 'elf'], `memory dump of '${m.label}'`, 1_800_000)
      const size = await stat(dest).then((s) => s.size, () => 0)
      if (size === 0) throw new MachineError(`memory dump of '${m.label}': libvirt wrote no dump`)
    } catch (err) {
      // No empty or partial memory.dmp left behind to be mistaken for a dump.
      await rm(dest, { force: true })
      throw err
    }
  }

  async close(): Promise<void> {
    const hv = this.hv
    this.hv = null
    if (hv) await hv.then((h) => h.connectClose(), () => undefined)
  }
}

/**
 * The VNC endpoint of a running domain's XML, or why there is none. Read with a pattern, not an XML
 * parser: the project has none among its dependencies, and libvirt writes this element in one form
 * (`<graphics type='vnc' port='5900' autoport='yes' listen='127.0.0.1'>` with `<listen
 * type='address' address=…/>` or `<listen type='socket' socket=…/>` inside).
 */
export function vncOfDomainXml(xml: string): VncEndpoint | string {
  const m = /<graphics\b[^>]*\btype=['"]vnc['"][^>]*?(\/>|>([\s\S]*?)<\/graphics>)/.exec(xml)
  if (!m) return 'the domain has no VNC display (add <graphics type=\'vnc\' listen=\'127.0.0.1\'/>)'
  const tag = m[0]
  const attr = (s: string, name: string): string | undefined => new RegExp(`\\b${name}=['"]([^'"]*)['"]`).exec(s)?.[1]
  const socket = /<listen\b[^>]*\btype=['"]socket['"][^>]*>/.exec(tag)
  if (socket) {
    const p = attr(socket[0], 'socket')
    if (p) return { path: p.replace(/&apos;/g, "'").replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&') }
  }
  const head = /<graphics\b[^>]*>/.exec(tag)?.[0] ?? tag
  const port = Number(attr(head, 'port') ?? '-1')
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return 'the domain\'s VNC display has no port yet (is it running?)'
  let host = attr(head, 'listen') ?? attr(/<listen\b[^>]*\btype=['"]address['"][^>]*>/.exec(tag)?.[0] ?? '', 'address') ?? '127.0.0.1'
  // A display listening on every address is reached on loopback from this host.
  if (host === '0.0.0.0' || host === '' ) host = '127.0.0.1'
  if (host === '::') host = '::1'
  return { host, port }
}

export const kvmRegistration: DriverRegistration<'kvm'> = {
  kind: 'kvm',
  capabilities: KvmDriver.capabilities,
  make: (s) => KvmDriver.fromSettings(s),
  settings: (s) => [s.kvm, s.timeouts.vmState]
}
