// Which accelerator a libvirt host gives QEMU domains: KVM (hardware virtualization) or TCG
// (QEMU's own CPU emulation, ~10-30× slower, but it runs anywhere). libvirt is asked, not
// /dev/kvm: with qemu:///system QEMU runs as libvirt's user (libvirt-qemu on Debian, in group
// kvm), so what counts is whether libvirt's QEMU can use KVM, which `virsh capabilities` says
// (a `<domain type='kvm'>` under the x86_64 guest), together with the CPU's VT-x or AMD-V flag
// (chooseAccel); /dev/kvm explains why not.
// Read by the machine builder (which type a new domain gets) and by the kvm driver's check (the
// doctor says which one each machine uses).
import { existsSync, readFileSync } from 'node:fs'
import { runTool } from './exec-tool'

export type VirtType = 'kvm' | 'qemu'

export interface HostAccel {
  type: VirtType
  /** Why, in words: what the doctor and `aviary machines create` print. */
  reason: string
}

/** The domain types libvirt's capabilities XML offers for x86_64 guests. */
export function capabilityDomainTypes(capsXml: string): string[] {
  const types = new Set<string>()
  for (const guest of capsXml.split('<guest>').slice(1)) {
    if (!/<arch name='x86_64'>/.test(guest)) continue
    for (const m of guest.matchAll(/<domain type='([a-z]+)'/g)) types.add(m[1]!)
  }
  return [...types]
}

/** Which hardware virtualization the CPU shows in /proc/cpuinfo's flags, if any. */
export function cpuVt(cpuinfo = '/proc/cpuinfo'): 'VT-x' | 'AMD-V' | null {
  let text: string
  try {
    text = readFileSync(cpuinfo, 'utf8')
  } catch {
    return null
  }
  const flag = /^flags\s*:.*\b(vmx|svm)\b/m.exec(text)?.[1]
  return flag === undefined ? null : flag === 'vmx' ? 'VT-x' : 'AMD-V'
}

/** Why this host has no KVM, from /dev/kvm and the CPU's flags. */
export function whyNoKvm(o: { devKvm?: string; cpuinfo?: string } = {}): string {
  const dev = o.devKvm ?? '/dev/kvm'
  const vt = cpuVt(o.cpuinfo)
  if (!existsSync(dev)) {
    return vt !== null
      ? `${dev} is absent although the CPU has ${vt}: load the kvm module (modprobe kvm_intel or kvm_amd), or turn virtualization on in the firmware`
      : `${dev} is absent and the CPU shows no VT-x or AMD-V (a VM without nested virtualization?)`
  }
  return vt !== null ? `libvirt's QEMU cannot use ${dev} (its permissions, or libvirtd started before it appeared: restart libvirtd)` : `${dev} exists but the CPU shows no VT-x or AMD-V`
}

/**
 * The accelerator for the domain types libvirt offers. libvirt offers `kvm` whenever its QEMU can
 * open /dev/kvm, but a VM without nested virtualization may have a /dev/kvm and no VT-x or AMD-V:
 * a domain of type kvm then dies at its start ("failed to set MSR 0x10a", seen on such a host),
 * so KVM counts only with the CPU's flags as well.
 */
export function chooseAccel(types: string[], o: { devKvm?: string; cpuinfo?: string } = {}): HostAccel {
  if (types.includes('kvm') && cpuVt(o.cpuinfo) !== null) return { type: 'kvm', reason: 'KVM: libvirt\'s QEMU runs guests with hardware virtualization' }
  return { type: 'qemu', reason: `TCG (software emulation, ~10-30× slower than KVM): ${whyNoKvm(o)}` }
}

/** What libvirt at `uri` gives QEMU domains, with the reason. */
export async function hostAccel(uri: string, virsh = 'virsh'): Promise<HostAccel> {
  const caps = (await runTool(virsh, ['-c', uri, 'capabilities'], 'reading libvirt\'s capabilities', 60_000)).stdout
  return chooseAccel(capabilityDomainTypes(caps))
}

/** The `type` of a domain's XML (`kvm`, `qemu`, or `test` on libvirt's test driver). */
export function domainType(domainXml: string): string | null {
  return /<domain\s[^>]*type=['"]([a-z]+)['"]/.exec(domainXml)?.[1] ?? null
}
