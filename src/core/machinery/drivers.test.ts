// createDrivers: one driver per kind, made on first get(), and the kvm driver loads the libvirt
// binding and connects only when a kvm machine is first used (read from this process's own
// memory map, where a loaded native addon shows up).
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createDrivers } from './drivers'
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
    expect(set.get('physical').capabilities).toEqual({ power: false, snapshots: false, screenshots: false, memoryDump: false })
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
})
