// GET /aviary/machines: the fleet as /machines/list shows it, plus what each machine's driver
// declares it can do, and what the UI may do to each machine here and now, and why not: what its
// driver can do (a physical machine has no hypervisor to power, revert or screenshot it), whether
// the engine that drives it runs, and the machine's state.
import { Type, type Static } from 'typebox'
import { DriverCapabilities } from './drivers'
import { Machine } from './schemas'

export const MachineControl = Type.Object({
  allowed: Type.Boolean(),
  /** Why not, in words for a tooltip (absent when allowed). */
  reason: Type.Optional(Type.String()),
  /**
   * What refuses it (absent when allowed): the machine's driver, for good (the UI does not offer
   * it); the engine, not running; or the machine's state now (the UI offers it disabled).
   */
  by: Type.Optional(Type.Union([Type.Literal('driver'), Type.Literal('engine'), Type.Literal('state')]))
})
export type MachineControl = Static<typeof MachineControl>

export const ControlledMachine = Type.Object({
  ...Machine.properties,
  /** What the machine's driver declares it can do (src/core/machinery). */
  capabilities: DriverCapabilities,
  controls: Type.Object({
    start: MachineControl,
    stop: MachineControl,
    revert: MachineControl,
    /** A live screen: the driver can take one and the machine's last known state is running. */
    screenshot: MachineControl
  })
})
export type ControlledMachine = Static<typeof ControlledMachine>

export const ControlledMachines = Type.Object({
  /** The engine runs: machines can be driven at all (aviary serve without it only lists them). */
  engine: Type.Boolean(),
  machines: Type.Array(ControlledMachine)
})
export type ControlledMachines = Static<typeof ControlledMachines>
