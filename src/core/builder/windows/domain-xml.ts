// The libvirt domain of a Windows machine. Windows brings no virtio drivers, so every device is
// one it has a driver for out of the box: SATA disk and CD drives on q35's AHCI, an Intel e1000e
// NIC, the standard VGA and a USB tablet. No memory balloon (Windows would show an unknown device).
//
// Firmware. `bios` is SeaBIOS. `uefi` is OVMF loaded as a read-only ROM (`/usr/share/ovmf/OVMF.fd`
// of Debian's ovmf), not as pflash with an NVRAM file: libvirt 9.0 refuses live internal snapshots
// of a domain with pflash firmware ("internal snapshots of a VM with pflash based firmware are not
// supported", measured here), and the kvm driver reverts to such a snapshot before every analysis.
// So the machine has no Secure Boot (Windows 11 Setup is told to skip that one check, see
// autounattend.ts) and no UEFI variables: it boots Windows through the EFI partition's fallback
// loader. With this ROM and a TPM, snapshot-create and snapshot-revert worked (measured here).
//
// Windows 11 gets a TPM 2.0: libvirt starts swtpm for the domain (`<backend type='emulator'>`).
import { el, text, toXml, type XmlElement } from './xml'
import type { WindowsMachineSpec } from './options'

/** OVMF built as one image (code and variables), which QEMU can load as a ROM. */
export const OVMF_ROM = '/usr/share/ovmf/OVMF.fd'

/** The domain's CD drives: the Windows ISO and the answer medium (ejected before the snapshot). */
export const CDROM_TARGETS = { windows: 'sdb', answer: 'sdc' } as const

export interface WindowsDomainInput {
  spec: WindowsMachineSpec
  /** `kvm` where /dev/kvm works, `qemu` (TCG) otherwise. */
  virtType: 'kvm' | 'qemu'
  /** The machine's qcow2 disk (internal snapshots need qcow2). */
  disk: string
  windowsIso: string
  answerIso: string
  /** Default OVMF_ROM. */
  ovmfRom?: string
  /** Default `/usr/bin/qemu-system-x86_64`; libvirt's test driver ignores it. */
  emulator?: string
}

function cdrom(file: string, target: string): XmlElement {
  return el('disk', { type: 'file', device: 'cdrom' },
    el('driver', { name: 'qemu', type: 'raw' }),
    el('source', { file }),
    el('target', { dev: target, bus: 'sata' }),
    el('readonly', null))
}

export function windowsDomainXml(i: WindowsDomainInput): string {
  const s = i.spec
  const uefi = s.firmware === 'uefi'
  for (const [what, p] of [['disk', i.disk], ['windowsIso', i.windowsIso], ['answerIso', i.answerIso]] as const) {
    if (!p.startsWith('/')) throw new Error(`${what} must be an absolute path, got ${p}`)
  }
  const cpu = i.virtType === 'kvm'
    ? el('cpu', { mode: 'host-passthrough', check: 'none' })
    // TCG: a named model QEMU emulates whole. Nehalem has SSE4.2 and POPCNT, which Windows 11 24H2 requires.
    : el('cpu', { mode: 'custom', match: 'exact', check: 'none' }, text('model', 'Nehalem', { fallback: 'forbid' }))
  const domain = el('domain', { type: i.virtType },
    text('name', s.name),
    text('memory', s.memoryMiB, { unit: 'MiB' }),
    text('vcpu', s.cpus),
    el('os', null,
      text('type', 'hvm', { arch: 'x86_64', machine: 'q35' }),
      uefi && text('loader', i.ovmfRom ?? OVMF_ROM, { type: 'rom' }),
      // The empty disk first: the first boot falls through to the CD, later ones start Windows.
      el('boot', { dev: 'hd' }),
      el('boot', { dev: 'cdrom' })),
    el('features', null, el('acpi', null), el('apic', null)),
    cpu,
    // Windows keeps the hardware clock in local time.
    el('clock', { offset: 'localtime' },
      el('timer', { name: 'rtc', tickpolicy: 'catchup' }),
      el('timer', { name: 'pit', tickpolicy: 'delay' }),
      el('timer', { name: 'hpet', present: 'no' })),
    text('on_poweroff', 'destroy'),
    text('on_reboot', 'restart'),
    text('on_crash', 'destroy'),
    el('devices', null,
      text('emulator', i.emulator ?? '/usr/bin/qemu-system-x86_64'),
      el('disk', { type: 'file', device: 'disk' },
        el('driver', { name: 'qemu', type: 'qcow2' }),
        el('source', { file: i.disk }),
        el('target', { dev: 'sda', bus: 'sata' })),
      cdrom(i.windowsIso, CDROM_TARGETS.windows),
      cdrom(i.answerIso, CDROM_TARGETS.answer),
      el('interface', { type: 'network' },
        el('source', { network: s.network }),
        el('mac', { address: s.mac }),
        el('model', { type: 'e1000e' })),
      el('input', { type: 'tablet', bus: 'usb' }),
      el('graphics', { type: 'vnc', listen: '127.0.0.1', autoport: 'yes' }),
      el('video', null, el('model', { type: 'vga' })),
      s.version === '11' && el('tpm', { model: 'tpm-crb' }, el('backend', { type: 'emulator', version: '2.0' })),
      el('memballoon', { model: 'none' })))
  return toXml(domain)
}
