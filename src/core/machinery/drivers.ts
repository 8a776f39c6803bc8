// The engine's drivers, one per kind, made on first use: a fleet without kvm machines never loads
// or connects to libvirt, and one without VirtualBox never looks for VBoxManage. A new DriverSet
// is made when machines.json's settings change; the old one is closed.
import type { MachineDriver } from './driver'
import { KvmDriver } from './kvm'
import type { DriverKind, EngineSettings } from './machines-config'
import { PhysicalDriver } from './physical'
import { VirtualBoxDriver } from './virtualbox'

export interface DriverSet {
  get(kind: DriverKind): MachineDriver
  close(): Promise<void>
}

const FACTORIES: Record<DriverKind, (s: EngineSettings) => MachineDriver> = {
  kvm: (s) => KvmDriver.fromSettings(s),
  virtualbox: (s) => VirtualBoxDriver.fromSettings(s),
  physical: (s) => PhysicalDriver.fromSettings(s)
}

export function createDrivers(settings: EngineSettings): DriverSet {
  const made = new Map<DriverKind, MachineDriver>()
  return {
    get(kind) {
      let d = made.get(kind)
      if (!d) {
        d = FACTORIES[kind](settings)
        made.set(kind, d)
      }
      return d
    },
    async close() {
      const all = [...made.values()]
      made.clear()
      await Promise.all(all.map((d) => d.close()))
    }
  }
}
