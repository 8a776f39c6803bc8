// The kinds of machinery driver and what a driver declares it can do, named once for machines.json,
// the API (/machines/list, /aviary/machines) and the UI. Each kind's code, capabilities and
// registration live in src/core/machinery (its README.md: adding a driver); the compiler refuses a
// kind named here without its registration there, and the other way round.
import { Type, type Static } from 'typebox'

export const DRIVER_KINDS = ['kvm', 'virtualbox', 'physical'] as const
export type DriverKind = (typeof DRIVER_KINDS)[number]

export const DriverKindSchema = Type.Enum([...DRIVER_KINDS], { description: `the machinery driver: ${DRIVER_KINDS.join(', ')}` })

export const DriverCapabilities = Type.Object({
  power: Type.Boolean({ description: 'the service switches the machine on and off (a hypervisor); false: its owner powers it, Aviary only waits for its agent' }),
  revert: Type.Boolean({ description: "start() reverts the machine to its snapshot (machines.json's snapshot, else the current one)" }),
  reset: Type.Boolean({
    description: 'each analysis begins on a machine reset to a clean state; false: what one analysis left in the machine is there for the next ' +
      '(the run asks the agent to end earlier analyses, and reimaging is the owner\'s business)'
  }),
  screenshots: Type.Boolean({ description: "the driver takes screenshots of the machine's display" }),
  memoryDump: Type.Boolean({ description: "the driver dumps the running machine's memory (a task's memory=1)" }),
  console: Type.Boolean({ description: "the service carries the running machine's screen, keyboard and mouse (the live console, its VNC server)" })
})
export type DriverCapabilities = Static<typeof DriverCapabilities>

/** Why a kind of machine has no live console (the Live tab and the API say it). */
export const NO_CONSOLE: Readonly<Partial<Record<DriverKind, string>>> = {
  physical: 'the service has no view of a physical machine\'s screen (no hypervisor to carry it); use the machine itself',
  virtualbox: 'the live console of VirtualBox machines (its VRDE server) is not carried yet; use VirtualBox\'s own window'
}
