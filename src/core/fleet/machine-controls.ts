// What may be done to a machine from the UI (GET /aviary/machines), and the fleet's refusals
// (fleet.service.ts): one set of rules, from what the machine's driver declares it can do
// (machinery/drivers.ts), whether the engine runs, and the machine's last known state. Each
// refusal says why, for a tooltip before the click and for the 409 after it.
import type { Machine } from '../../shared/api/schemas'
import type { ControlledMachine, MachineControl } from '../../shared/api/machine-controls'
import type { DriverCapabilities, DriverKind } from '../../shared/api/drivers'
import { capabilitiesOf } from '../machinery/drivers'

export type MachineAction = 'start' | 'stop' | 'revert' | 'screenshot'

const yes: MachineControl = { allowed: true }
const no = (reason: string, by: NonNullable<MachineControl['by']>): MachineControl => ({ allowed: false, reason, by })

/** Why a machine of this kind can never have `action` done to it by Aviary, or null when its driver can. */
export function driverRefuses(kind: DriverKind, caps: Readonly<DriverCapabilities>, action: MachineAction): string | null {
  switch (action) {
    case 'start':
    case 'stop':
      return caps.power ? null : `a ${kind} machine is powered by its owner: Aviary only waits for its agent, and never switches it on or off`
    case 'revert':
      return caps.revert ? null : `a ${kind} machine has no snapshot to revert to`
    case 'screenshot':
      return caps.screenshots ? null : `the ${kind} driver cannot take screenshots${caps.power ? '' : ' (there is no hypervisor)'}`
  }
}

export function withControls(m: Machine, engine: boolean): ControlledMachine {
  const capabilities = capabilitiesOf(m.driver)
  const control = (action: MachineAction): MachineControl => {
    const refused = driverRefuses(m.driver, capabilities, action)
    if (refused !== null) return no(refused, 'driver')
    if (!engine) return no('the analysis engine is not running on this service: machines are listed, not driven', 'engine')
    if (action === 'screenshot' && m.status !== 'running') return no(`the machine is not running (${m.status ?? 'state unknown'}): there is no screen to show`, 'state')
    return yes
  }
  return { ...m, capabilities: { ...capabilities }, controls: { start: control('start'), stop: control('stop'), revert: control('revert'), screenshot: control('screenshot') } }
}
