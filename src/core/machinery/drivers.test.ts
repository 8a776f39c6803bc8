// createDrivers: one driver per kind, made on first get(), and the kvm driver loads the libvirt
// binding and connects only when a kvm machine is first used (read from this process's own
// memory map, where a loaded native addon shows up). The registry: every kind's driver declares
// what its registration says, and only the settings a driver is made from make new drivers.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { capabilitiesOf, createDrivers, driverSettingsChanged } from './drivers'
import { DRIVER_KINDS } from '../../shared/api/drivers'
import { DEFAULT_SETTINGS, type EngineSettings } from './machines-config'

const libvirtLoaded = (): boolean => readFileSync('/proc/self/maps', 'utf8').includes('libvirt.node')

describe('createDrivers', () => {
  const settings: EngineSettings = { ...DEFAULT_SETTINGS, kvm: { uri: 'test+unix:///default?socket=/nonexistent/sock' }, timeouts: { ...DEFAULT_SETTINGS.timeouts, vmState: 1 } }

  it('makes each kind once, on first get(); a kvm driver that is never used never loads libvirt', async () => {
    const set = createDrivers(settings)
    const kvm = set.get('kvm')
    expect(set.get('kvm')).toBe(kvm)
    expect(kvm.kind).toBe('kvm')
    expect(set.get('virtualbox').kind).toBe('virtualbox')
    expect(set.get('physical').capabilities).toEqual({ power: false, revert: false, reset: false, screenshots: false, memoryDump: false, console: false })
    expect(libvirtLoaded()).toBe(false)
    // First use: the binding loads, the connection fails, and the check says so.
    const findings = await kvm.check({ name: 'a', label: 'a', ip: '192.168.122.5', snapshot: null, platform: 'windows', interface: null, options: [] })
    expect(findings[0]).toMatchObject({ check: 'hypervisor', ok: false })
    expect(libvirtLoaded()).toBe(true)
    await set.close()
    // After close() a get() makes a fresh driver.
    expect(set.get('kvm')).not.toBe(kvm)
    await set.close()
  })

  it('passes the settings on: VBoxManage path and timeouts', async () => {
    const set = createDrivers({ ...settings, virtualbox: { path: '/nonexistent/VBoxManage', mode: 'headless' } })
    const findings = await set.get('virtualbox').check({ name: 'v', label: 'v', ip: '192.168.56.5', snapshot: null, platform: 'windows', interface: null, options: [] })
    expect(findings[0]?.detail).toContain('/nonexistent/VBoxManage was not found')
    await set.close()
  })
  it('registers every kind the API names, each driver declaring what its registration says', async () => {
    const set = createDrivers(settings)
    for (const kind of DRIVER_KINDS) {
      const d = set.get(kind)
      expect(d.kind).toBe(kind)
      expect(d.capabilities).toEqual(capabilitiesOf(kind))
      expect(Object.isFrozen(capabilitiesOf(kind))).toBe(true)
    }
    await set.close()
  })

  it('counts as a driver change only the settings some driver is made from', () => {
    const changed = (patch: Partial<EngineSettings>) => driverSettingsChanged(settings, { ...settings, ...patch })
    expect(changed({})).toBe(false)
    expect(changed({ kvm: { uri: 'qemu:///session' } })).toBe(true)
    expect(changed({ virtualbox: { ...settings.virtualbox, mode: 'gui' } })).toBe(true)
    expect(changed({ timeouts: { ...settings.timeouts, vmState: 5 } })).toBe(true)
    // What no driver reads: the analysis timeouts, screenshots, the result server, routes.
    expect(changed({ timeouts: { ...settings.timeouts, default: 300, critical: 10 } })).toBe(false)
    expect(changed({ screenshotInterval: 0, maxMachines: 2, tcpdump: '/usr/sbin/tcpdump' })).toBe(false)
  })
})
