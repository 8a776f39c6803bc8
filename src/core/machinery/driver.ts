// The one interface every machinery driver implements (kvm, virtualbox, physical). The scheduler
// and the doctor talk to machines only through it, and one contract suite
// (contract.suite.ts) runs every driver through the same checks.
import type { DriverKind, MachineConfig } from './machines-config'

/**
 * What the hypervisor says of a VM, in Cuckoo's words: `poweroff` covers shut off and shutdown,
 * `saved` is VirtualBox's restored-but-not-started state, `error` anything unexpected.
 */
export type VmState = 'running' | 'paused' | 'poweroff' | 'saved' | 'aborted' | 'error'

/** The part of a machine's configuration a driver needs. */
export type DriverMachine = Pick<MachineConfig, 'name' | 'label' | 'ip' | 'snapshot' | 'platform' | 'interface' | 'options'>

/** A check of `aviary doctor`: what was checked, whether it passed, and if not why and how to fix it. */
export interface Finding {
  check: string
  ok: boolean
  /** What was seen (on failure: the reason). */
  detail: string
  /** On failure: what the user should do. */
  fix?: string
}

export interface DriverCapabilities {
  /** The driver powers the machine on and off (a hypervisor); a physical machine is its owner's to power. */
  power: boolean
  /** start() reverts a snapshot (physical machines have none). */
  snapshots: boolean
  screenshots: boolean
  memoryDump: boolean
}

/** What each kind of driver can do, known without making one (the UI's machine controls read it). */
export const DRIVER_CAPABILITIES: Readonly<Record<DriverKind, Readonly<DriverCapabilities>>> = {
  kvm: { power: true, snapshots: true, screenshots: true, memoryDump: true },
  virtualbox: { power: true, snapshots: true, screenshots: true, memoryDump: true },
  physical: { power: false, snapshots: false, screenshots: false, memoryDump: false }
}

export class MachineError extends Error {}

export interface MachineDriver {
  readonly kind: DriverKind
  readonly capabilities: DriverCapabilities

  /** The hypervisor is reachable, the VM exists, and so does its snapshot (named, else a current one). */
  check(m: DriverMachine): Promise<Finding[]>

  state(m: DriverMachine): Promise<VmState>

  /**
   * Reverts the VM to its snapshot (the named one, else the current one) and resolves once it
   * runs. Throws MachineError with a message fit for the task's errors. `signal` aborts waiting.
   */
  start(m: DriverMachine, signal?: AbortSignal): Promise<void>

  /** Powers the VM off and resolves once it is off. Stopping a stopped VM is not an error. */
  stop(m: DriverMachine): Promise<void>

  /** One frame of the VM's display as the hypervisor gives it (PNG or PPM bytes). */
  screenshot(m: DriverMachine): Promise<Buffer>

  /** A memory-only dump of the running VM written to `dest` (an ELF core for libvirt). */
  dumpMemory(m: DriverMachine, dest: string): Promise<void>

  /** Releases connections; the driver is not used afterwards. */
  close(): Promise<void>
}
