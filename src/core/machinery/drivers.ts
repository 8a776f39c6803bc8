// The registration of every driver kind (README.md here: adding a driver), and the engine's drivers,
// one per kind, made on first use: a fleet without kvm machines never loads or connects to
// libvirt, and one without VirtualBox never looks for VBoxManage. A new DriverSet is made when the
// settings a driver is made from change (driverSettingsChanged); the old one is closed.
import type { DriverCapabilities, DriverKind } from '../../shared/api/drivers'
import type { DriverRegistration, MachineDriver } from './driver'
import { kvmRegistration } from './kvm'
import type { EngineSettings } from './machines-config'
import { physicalRegistration } from './physical'
import { virtualboxRegistration } from './virtualbox'

/** Every kind of src/shared/api/drivers.ts, registered: the compiler refuses a kind without its driver. */
const REGISTRY: { readonly [K in DriverKind]: DriverRegistration<K> } = {
  kvm: kvmRegistration,
  virtualbox: virtualboxRegistration,
  physical: physicalRegistration
}

/** What drivers of this kind can do, without making one (the UI's machine controls read it). */
export function capabilitiesOf(kind: DriverKind): Readonly<DriverCapabilities> {
  return REGISTRY[kind].capabilities
}

/** True when a driver of some kind would be made differently under `b` than under `a`. */
export function driverSettingsChanged(a: EngineSettings, b: EngineSettings): boolean {
  return Object.values(REGISTRY).some((r) => JSON.stringify(r.settings(a)) !== JSON.stringify(r.settings(b)))
}

export interface DriverSet {
  get(kind: DriverKind): MachineDriver
  close(): Promise<void>
}

export function createDrivers(settings: EngineSettings): DriverSet {
  const made = new Map<DriverKind, MachineDriver>()
  return {
    get(kind) {
      let d = made.get(kind)
      if (!d) {
        d = REGISTRY[kind].make(settings)
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
