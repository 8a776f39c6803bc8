// What the UI may do to a machine (GET /aviary/machines), from what its driver can do, whether the
// engine runs, and the machine's last known state; each refusal says why, for a tooltip. The same
// rules the fleet enforces (fleet.service.ts), said before the click rather than as a 409 after it.
import type { Machine } from '../../shared/api/schemas'
import type { ControlledMachine, MachineControl } from '../../shared/api/machine-controls'
import { DRIVER_CAPABILITIES } from '../machinery/driver'
import type { DriverKind } from '../machinery/machines-config'

const yes: MachineControl = { allowed: true }
const no = (reason: string, by: NonNullable<MachineControl['by']>): MachineControl => ({ allowed: false, reason, by })

export function withControls(m: Machine, engine: boolean): ControlledMachine {
  const caps = DRIVER_CAPABILITIES[m.driver as DriverKind] as (typeof DRIVER_CAPABILITIES)[DriverKind] | undefined
  if (!caps) {
    const unknown = no(`the ${m.driver} driver is not known to this service`, 'driver')
    return { ...m, controls: { start: unknown, stop: unknown, revert: unknown, screenshot: unknown } }
  }
  if (!engine) {
    const off = no('the analysis engine is not running on this service: machines are listed, not driven', 'engine')
    return { ...m, controls: { start: off, stop: off, revert: off, screenshot: off } }
  }
  const power = caps.power ? yes : no(`a ${m.driver} machine is powered by its owner: Aviary only waits for its agent, and never switches it on or off`, 'driver')
  const revert = caps.snapshots ? yes : no(`a ${m.driver} machine has no snapshot to revert to`, 'driver')
  const screenshot = !caps.screenshots ? no(`the ${m.driver} driver cannot take screenshots (there is no hypervisor)`, 'driver')
    : m.status !== 'running' ? no(`the machine is not running (${m.status ?? 'state unknown'}): there is no screen to show`, 'state')
      : yes
  return { ...m, controls: { start: power, stop: power, revert, screenshot } }
}
