// The one interface every machinery driver implements (kvm, virtualbox, physical). The scheduler
// and the doctor talk to machines only through it, and one contract suite
// (contract.suite.ts) runs every driver through the same checks.
import type { DriverCapabilities, DriverKind } from '../../shared/api/drivers'
import type { EngineSettings, MachineConfig } from './machines-config'

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

/**
 * What a driver can do, declared by each driver (its file) and read by the engine, the run, the
 * doctor, the fleet and the UI's machine controls instead of its kind's name. The contract suite
 * checks every driver against its declaration. Fields: src/shared/api/drivers.ts.
 */
export type { DriverCapabilities }

/** A driver kind as drivers.ts registers it: its capabilities are known without making a driver. */
export interface DriverRegistration<K extends DriverKind = DriverKind> {
  readonly kind: K
  readonly capabilities: Readonly<DriverCapabilities>
  /** A driver for these settings; it connects to nothing until first used. */
  make(s: EngineSettings): MachineDriver
  /** The part of the settings the driver is made from: when it changes, the engine makes new drivers. */
  settings(s: EngineSettings): unknown
}

export class MachineError extends Error {}

/** Where a machine's VNC server listens: an address the host reaches, or a UNIX socket. */
export type VncEndpoint = { host: string; port: number } | { path: string }

export interface MachineDriver {
  readonly kind: DriverKind
  readonly capabilities: Readonly<DriverCapabilities>

  /** The hypervisor is reachable, the VM exists, and so does its snapshot (named, else a current one). */
  check(m: DriverMachine): Promise<Finding[]>

  state(m: DriverMachine): Promise<VmState>

  /**
   * Makes the machine ready for an analysis and resolves once it runs: with `revert`, reverts it to
   * its snapshot (the named one, else the current one); without `power`, waits for it to answer.
   * Throws MachineError with a message fit for the task's errors. `signal` aborts waiting.
   */
  start(m: DriverMachine, signal?: AbortSignal): Promise<void>

  /** With `power`, powers the machine off and resolves once it is off (stopping a stopped one is fine); else leaves it alone. */
  stop(m: DriverMachine): Promise<void>

  /** One frame of the VM's display as the hypervisor gives it (PNG or PPM bytes); without `screenshots`, a MachineError. */
  screenshot(m: DriverMachine): Promise<Buffer>

  /**
   * Where the running machine's VNC server listens, for the live console (src/core/console); only
   * the service connects to it. Without `console`, a MachineError saying why not.
   */
  consoleEndpoint(m: DriverMachine): Promise<VncEndpoint>

  /** A memory-only dump of the running VM written to `dest` (an ELF core for libvirt); without `memoryDump`, a MachineError. */
  dumpMemory(m: DriverMachine, dest: string): Promise<void>

  /** Releases connections; the driver is not used afterwards. */
  close(): Promise<void>
}
