// GET /aviary/machines: each machine with what may be done to it and why not. Against real
// services: the engine off (machines listed, not driven), and a physical machine under a running
// engine (its owner powers it; no snapshot; no screen). The kvm rules by the pure function, as a
// hypervisor cannot run here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../../test/service-harness'
import type { ControlledMachines } from '../../../shared/api/machine-controls'
import type { Machine } from '../../../shared/api/schemas'
import { driverRefuses, withControls } from '../../fleet/machine-controls'
import { capabilitiesOf } from '../../machinery/drivers'
import { DRIVER_KINDS } from '../../../shared/api/drivers'

let off: Harness
let physical: Harness

beforeAll(async () => {
  ;[off, physical] = await Promise.all([
    startHarness({ machines: { driver: 'kvm', machines: [{ name: 'win10', ip: '192.168.122.101', snapshot: 'clean' }] } }),
    startHarness({ engine: true, machines: { driver: 'physical', resultserver: { ip: '127.0.0.1', port: 0 }, machines: [{ name: 'box', ip: '127.0.0.9', platform: 'linux' }] } })
  ])
})
afterAll(async () => { await Promise.all([off?.stop(), physical?.stop()]) })

describe('GET /aviary/machines', () => {
  it('says that nothing can be driven while the engine is off, and lists the machines as /machines/list does', async () => {
    const { status, body } = await off.json<ControlledMachines>('/aviary/machines')
    expect(status).toBe(200)
    expect(body.engine).toBe(false)
    const listed = (await off.json<{ machines: Machine[] }>('/machines/list')).body.machines
    expect(body.machines.map(({ controls: _, capabilities: __, ...m }) => m)).toEqual(listed)
    expect(body.machines[0]!.capabilities).toEqual({ power: true, revert: true, reset: true, screenshots: true, memoryDump: true, console: true })
    for (const c of Object.values(body.machines[0]!.controls)) expect(c).toEqual({ allowed: false, reason: expect.stringMatching(/engine is not running/), by: 'engine' })
  })

  it('offers no power, revert or screen for a physical machine, and says why', async () => {
    const { body } = await physical.json<ControlledMachines>('/aviary/machines')
    expect(body.engine).toBe(true)
    expect(body.machines[0]!.capabilities).toEqual({ power: false, revert: false, reset: false, screenshots: false, memoryDump: false, console: false })
    const { start, stop, revert, screenshot } = body.machines[0]!.controls
    expect([start, stop].map((c) => c.reason)).toEqual([1, 2].map(() => 'a physical machine is powered by its owner: Aviary only waits for its agent, and never switches it on or off'))
    expect([start, stop].map((c) => c.by)).toEqual(['driver', 'driver'])
    expect(revert).toEqual({ allowed: false, reason: 'a physical machine has no snapshot to revert to', by: 'driver' })
    expect(screenshot).toEqual({ allowed: false, reason: 'the physical driver cannot take screenshots (there is no hypervisor)', by: 'driver' })
  })

  it('lets a hypervisor\'s machine be driven, and shows its screen only while it runs', () => {
    const vm = { driver: 'kvm', status: 'poweroff' } as Machine
    expect(withControls(vm, true).controls).toEqual({
      start: { allowed: true }, stop: { allowed: true }, revert: { allowed: true },
      screenshot: { allowed: false, reason: 'the machine is not running (poweroff): there is no screen to show', by: 'state' }
    })
    expect(withControls({ ...vm, status: 'running' }, true).controls.screenshot).toEqual({ allowed: true })
  })
  it('comes from what each driver declares, never from its name', () => {
    for (const kind of DRIVER_KINDS) {
      const caps = capabilitiesOf(kind)
      const m = withControls({ driver: kind, status: 'running' } as Machine, true)
      expect(m.capabilities, kind).toEqual(caps)
      expect([m.controls.start.allowed, m.controls.stop.allowed, m.controls.revert.allowed, m.controls.screenshot.allowed], kind)
        .toEqual([caps.power, caps.power, caps.revert, caps.screenshots])
    }
    // A driver that powered its machines but kept no snapshot would be started and stopped, not reverted.
    const powerOnly = { ...capabilitiesOf('kvm'), revert: false, reset: false }
    expect(driverRefuses('kvm', powerOnly, 'start')).toBeNull()
    expect(driverRefuses('kvm', powerOnly, 'revert')).toBe('a kvm machine has no snapshot to revert to')
    expect(driverRefuses('kvm', { ...powerOnly, screenshots: false }, 'screenshot')).toBe('the kvm driver cannot take screenshots')
  })
})
