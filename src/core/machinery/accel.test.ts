// Which accelerator a domain gets: KVM only where libvirt offers it and the CPU has VT-x or
// AMD-V; a /dev/kvm without either (a VM without nested virtualization, as this test machine is)
// gets TCG, with the reason said.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { capabilityDomainTypes, chooseAccel, cpuVt, hostAccel } from './accel'
import { ensureLibvirtd } from '../../../test/fixtures/libvirtd'

const tmp = mkdtempSync(path.join(tmpdir(), 'aviary-accel-test-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

function file(name: string, text: string): string {
  const f = path.join(tmp, name)
  writeFileSync(f, text)
  return f
}

const CAPS = `<capabilities>
  <guest><os_type>hvm</os_type><arch name='i686'><domain type='qemu'/><domain type='xen'/></arch></guest>
  <guest><os_type>hvm</os_type><arch name='x86_64'><wordsize>64</wordsize><domain type='qemu'/><domain type='kvm'/></arch></guest>
</capabilities>`

describe('the accelerator', () => {
  const vt = file('cpuinfo-vt', 'processor\t: 0\nflags\t\t: fpu vme de pse vmx sse2\n')
  const novt = file('cpuinfo-novt', 'processor\t: 0\nflags\t\t: fpu vme de pse hypervisor sse2\n')
  const devKvm = file('kvm', '')

  it("reads the x86_64 guest's domain types from libvirt's capabilities", () => {
    expect(capabilityDomainTypes(CAPS)).toEqual(['qemu', 'kvm'])
  })

  it('is KVM where libvirt offers it and the CPU has VT-x', () => {
    expect(cpuVt(vt)).toBe('VT-x')
    expect(chooseAccel(['qemu', 'kvm'], { devKvm, cpuinfo: vt }).type).toBe('kvm')
  })

  it('is TCG with a /dev/kvm but no VT-x or AMD-V, and says so', () => {
    expect(cpuVt(novt)).toBeNull()
    const a = chooseAccel(['qemu', 'kvm'], { devKvm, cpuinfo: novt })
    expect(a.type).toBe('qemu')
    expect(a.reason).toBe(`TCG (software emulation, ~10-30× slower than KVM): ${devKvm} exists but the CPU shows no VT-x or AMD-V`)
    expect(chooseAccel(['qemu'], { devKvm: path.join(tmp, 'none'), cpuinfo: vt }).reason).toMatch(/is absent although the CPU has VT-x/)
  })

  it("on this host, as libvirt's system daemon is asked: never KVM without the CPU's flags", async () => {
    await ensureLibvirtd('qemu:///system')
    const a = await hostAccel('qemu:///system')
    if (a.type === 'kvm') expect(cpuVt()).not.toBeNull()
    else expect(a.reason).toMatch(/^TCG /)
  }, 120_000)
})
