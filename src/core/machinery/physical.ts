// The physical driver: a real computer (or a VM nobody here controls) already running the agent at
// its IP. There is no hypervisor: "running" means the agent port accepts a TCP connection, start()
// only waits for that, and nothing is reset between analyses (re-imaging is the owner's business;
// Cuckoo's FOG/`net rpc shutdown` dance is not carried over). Cuckoo's own status probe used
// XML-RPC, which the HTTP agent answers with 404; a TCP connect works with every agent.
import { Socket } from 'node:net'
import { MachineError, type DriverMachine, type DriverCapabilities, type DriverRegistration, type Finding, type MachineDriver, type VmState, type VncEndpoint } from './driver'
import { pollUntil } from './exec-tool'
import type { EngineSettings } from './machines-config'
import { AGENT_PORT } from '../../guest-protocol/agent-api'
import { NO_CONSOLE } from '../../shared/api/drivers'

export interface PhysicalOptions {
  /** Seconds start() waits for the agent (machines.json timeouts.vm_state). */
  vmStateSeconds: number
  /** The agent's port; default AGENT_PORT, where Cuckoo's agent listens. */
  agentPort?: number
  /** How long one connection attempt may take, in ms. Default 2000. */
  connectTimeoutMs?: number
}

/** Resolves true when `ip:port` accepts a TCP connection within `timeoutMs`. */
export function portAnswers(ip: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket()
    const done = (ok: boolean): void => {
      s.destroy()
      resolve(ok)
    }
    s.setTimeout(timeoutMs, () => done(false))
    s.once('error', () => done(false))
    s.connect(port, ip, () => done(true))
  })
}

export class PhysicalDriver implements MachineDriver {
  readonly kind = 'physical' as const
  /** No hypervisor: nothing to power, revert, reset, screenshot or dump; the machine is its owner's. */
  static readonly capabilities: Readonly<DriverCapabilities> = Object.freeze({ power: false, revert: false, reset: false, screenshots: false, memoryDump: false, console: false })
  readonly capabilities = PhysicalDriver.capabilities
  private readonly port: number
  private readonly connectMs: number

  constructor(private readonly o: PhysicalOptions) {
    this.port = o.agentPort ?? AGENT_PORT
    this.connectMs = o.connectTimeoutMs ?? 2000
  }

  static fromSettings(s: EngineSettings): PhysicalDriver {
    return new PhysicalDriver({ vmStateSeconds: s.timeouts.vmState })
  }

  async check(m: DriverMachine): Promise<Finding[]> {
    if (await portAnswers(m.ip, this.port, this.connectMs)) {
      return [{ check: 'agent', ok: true, detail: `the agent answers on ${m.ip}:${this.port}` }]
    }
    return [{
      check: 'agent', ok: false, detail: `nothing answers on ${m.ip}:${this.port}`,
      fix: `start the machine '${m.name}' and its agent (listening on port ${this.port}), and check that this host reaches ${m.ip}`
    }]
  }

  async state(m: DriverMachine): Promise<VmState> {
    return (await portAnswers(m.ip, this.port, this.connectMs)) ? 'running' : 'poweroff'
  }

  async start(m: DriverMachine, signal?: AbortSignal): Promise<void> {
    const up = await pollUntil(() => portAnswers(m.ip, this.port, this.connectMs), this.o.vmStateSeconds * 1000, signal, 500)
    if (!up) throw new MachineError(`the physical machine '${m.name}' did not answer on ${m.ip}:${this.port} within ${this.o.vmStateSeconds} s`)
  }

  async stop(_m: DriverMachine): Promise<void> {
    // Nothing to do: a physical machine is not powered off between analyses.
  }

  async consoleEndpoint(m: DriverMachine): Promise<VncEndpoint> {
    throw new MachineError(`'${m.name}' is a physical machine: ${NO_CONSOLE.physical}`)
  }

  async screenshot(m: DriverMachine): Promise<Buffer> {
    throw new MachineError(`the physical driver cannot take screenshots of '${m.name}' (no hypervisor)`)
  }

  async dumpMemory(m: DriverMachine, _dest: string): Promise<void> {
    throw new MachineError(`the physical driver cannot dump the memory of '${m.name}' (no hypervisor)`)
  }

  async close(): Promise<void> {}
}

export const physicalRegistration: DriverRegistration<'physical'> = {
  kind: 'physical',
  capabilities: PhysicalDriver.capabilities,
  make: (s) => PhysicalDriver.fromSettings(s),
  settings: (s) => s.timeouts.vmState
}
