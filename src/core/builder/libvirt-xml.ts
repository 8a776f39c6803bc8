// The libvirt XML the machine builder writes: a domain and a network. Written for every kind of
// machine the builder makes, so it takes what each one needs as data, and every value it is given
// passes through one escape (`x` below): no name, path or command line can close an element or an
// attribute, whatever it holds. Validated against libvirt's own schemas (virt-xml-validate) in
// libvirt-xml.test.ts, and defined on libvirt's test driver there.
//
// Boot (`DomainSpec.boot`):
//   kernel  direct kernel boot: QEMU loads the kernel and initrd and passes the command line (the
//           Linux machines: the image's own kernel, taken out of it when it is built). No
//           bootloader, no partition table; the command line carries the guest's address.
//   bios    SeaBIOS boots the first disk (or the CD, by `bootOrder`).
//   uefiRom OVMF loaded as a read-only ROM (`<loader type='rom'>`): the way to UEFI that keeps live
//           internal snapshots, which every analysis reverts to. libvirt 9.0 refuses internal
//           snapshots of a domain with pflash firmware and an NVRAM file, so no Secure Boot and no
//           UEFI variables (measured by the Windows builder, src/core/builder/windows/).
// A TPM 2.0 (`tpm: true`) is libvirt's swtpm emulator (`tpm-crb`), for Windows 11.
// Adding a variant: a member of `BootSpec` and its `<os>` lines in `osXml`; a device: a field of
// DomainSpec and its lines in `devicesXml`, and its case in libvirt-xml.test.ts.

/** Text inserted as it is: only what this module's own templates made. */
class Raw {
  constructor(readonly xml: string) {}
}

// XML 1.0 allows tab, newline and carriage return of the C0 controls; the rest cannot appear even
// escaped. Callers validate names and paths first; this is the last line of defence.
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/

export class XmlValueError extends Error {}

export function escapeXml(value: string): string {
  if (NOT_XML.test(value)) throw new XmlValueError(`a value holds a control character XML cannot carry: ${JSON.stringify(value.slice(0, 40))}`)
  return value.replace(/[&<>"'\r\t\n]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\r': '&#13;', '\t': '&#9;', '\n': '&#10;' })[c]!)
}

type Value = string | number | Raw | Raw[] | null | undefined | false

/** A template whose every interpolated string or number is escaped; Raw pieces are inserted whole. */
function x(strings: TemplateStringsArray, ...values: Value[]): Raw {
  let out = strings[0]!
  values.forEach((v, i) => {
    if (v instanceof Raw) out += v.xml
    else if (Array.isArray(v)) out += v.map((r) => r.xml).join('')
    else if (v !== null && v !== undefined && v !== false) out += escapeXml(String(v))
    out += strings[i + 1]!
  })
  return new Raw(out)
}

export type BootSpec =
  | { kind: 'kernel'; kernel: string; initrd: string; cmdline: string }
  | { kind: 'bios' }
  | { kind: 'uefiRom'; rom: string }

export interface DiskSpec {
  file: string
  format: 'qcow2' | 'raw'
  /** `virtio` for Linux; `sata` for what Windows has drivers for. */
  bus: 'virtio' | 'sata'
  /** vda, sda, sdb, ... */
  target: string
  device?: 'disk' | 'cdrom'
  readonly?: boolean
}

export interface NicSpec {
  /** A libvirt network. */
  network: string
  mac: string
  /** The tap's name on the host: capture listens there. Default: libvirt's vnetN. */
  tap?: string
  model: 'virtio' | 'e1000e'
}

export interface DomainSpec {
  name: string
  /** Host-side only (`virsh desc`); the guest never sees it. */
  description?: string
  /** `kvm` where libvirt can use KVM, else `qemu` (TCG): machinery/accel.ts. */
  type: 'kvm' | 'qemu'
  memoryMiB: number
  vcpus: number
  boot: BootSpec
  /** `bootOrder` of bios/uefiRom machines: the devices tried, in order. */
  bootOrder?: ('hd' | 'cdrom')[]
  /** Under TCG, a CPU model QEMU emulates whole (Windows 11 needs SSE4.2: `Nehalem`); default qemu64. KVM: host-passthrough. */
  tcgCpuModel?: string
  /** `utc` for Linux, `localtime` for Windows. */
  clock: 'utc' | 'localtime'
  disks: DiskSpec[]
  nics: NicSpec[]
  /** A file the serial console is appended to (kernel, systemd and agent output), or none. */
  serialLog?: string
  /** VNC listens here (screenshots need a display); always a loopback address. Default 127.0.0.1. */
  vncListen?: string
  /** A USB tablet (absolute pointer for a desktop over VNC). */
  tablet?: boolean
  tpm?: boolean
  emulator?: string
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$/
const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/
const IFNAME = /^[A-Za-z0-9_.-]{1,15}$/

function check(ok: boolean, what: string, value: unknown): void {
  if (!ok) throw new XmlValueError(`${what}: ${JSON.stringify(value)} is not allowed`)
}

function osXml(s: DomainSpec): Raw {
  const b = s.boot
  const type = x`<type arch='x86_64' machine='q35'>hvm</type>`
  switch (b.kind) {
    case 'kernel':
      for (const [k, v] of [['kernel', b.kernel], ['initrd', b.initrd]] as const) check(v.startsWith('/'), `boot.${k} (an absolute path)`, v)
      return x`
  <os>
    ${type}
    <kernel>${b.kernel}</kernel>
    <initrd>${b.initrd}</initrd>
    <cmdline>${b.cmdline}</cmdline>
  </os>`
    case 'bios':
    case 'uefiRom':
      return x`
  <os>
    ${type}${b.kind === 'uefiRom' && x`
    <loader type='rom'>${b.rom}</loader>`}${(s.bootOrder ?? ['hd']).map((d) => x`
    <boot dev='${d}'/>`)}
  </os>`
  }
}

function cpuXml(s: DomainSpec): Raw {
  if (s.type === 'kvm') return x`
  <cpu mode='host-passthrough' check='none'/>`
  if (s.tcgCpuModel) return x`
  <cpu mode='custom' match='exact' check='none'>
    <model fallback='forbid'>${s.tcgCpuModel}</model>
  </cpu>`
  return x``
}

function diskXml(d: DiskSpec): Raw {
  check(d.file.startsWith('/'), 'disk file (an absolute path)', d.file)
  check(/^(vd|sd)[a-z]$/.test(d.target), 'disk target', d.target)
  return x`
    <disk type='file' device='${d.device ?? 'disk'}'>
      <driver name='qemu' type='${d.format}'/>
      <source file='${d.file}'/>
      <target dev='${d.target}' bus='${d.bus}'/>${d.readonly && x`
      <readonly/>`}
    </disk>`
}

function nicXml(n: NicSpec): Raw {
  check(MAC.test(n.mac), 'nic mac (lower-case xx:xx:xx:xx:xx:xx)', n.mac)
  if (n.tap !== undefined) check(IFNAME.test(n.tap) && !/^(vnet|macvtap|macvlan)/.test(n.tap), 'nic tap', n.tap)
  return x`
    <interface type='network'>
      <source network='${n.network}'/>
      <mac address='${n.mac}'/>${n.tap !== undefined && x`
      <target dev='${n.tap}'/>`}
      <model type='${n.model}'/>
    </interface>`
}

function devicesXml(s: DomainSpec): Raw {
  const vnc = s.vncListen ?? '127.0.0.1'
  check(/^127\.|^::1$/.test(vnc), 'vncListen (a loopback address)', vnc)
  if (s.serialLog !== undefined) check(s.serialLog.startsWith('/'), 'serialLog (an absolute path)', s.serialLog)
  return x`
  <devices>${s.emulator !== undefined && x`
    <emulator>${s.emulator}</emulator>`}${s.disks.map(diskXml)}${s.nics.map(nicXml)}${s.serialLog !== undefined ? x`
    <serial type='file'>
      <source path='${s.serialLog}' append='on'/>
      <target port='0'/>
    </serial>` : x`
    <serial type='pty'/>`}${s.tablet && x`
    <input type='tablet' bus='usb'/>`}
    <graphics type='vnc' autoport='yes' listen='${vnc}'/>
    <video>
      <model type='vga'/>
    </video>${s.tpm && x`
    <tpm model='tpm-crb'>
      <backend type='emulator' version='2.0'/>
    </tpm>`}
    <memballoon model='none'/>
  </devices>`
}

/** The domain XML of `s`; refuses (XmlValueError) a name, MAC, tap or path libvirt would misread. */
export function domainXml(s: DomainSpec): string {
  check(NAME.test(s.name), 'name', s.name)
  check(Number.isInteger(s.memoryMiB) && s.memoryMiB >= 128 && s.memoryMiB <= 1024 * 1024, 'memoryMiB', s.memoryMiB)
  check(Number.isInteger(s.vcpus) && s.vcpus >= 1 && s.vcpus <= 64, 'vcpus', s.vcpus)
  return x`<domain type='${s.type}'>
  <name>${s.name}</name>${s.description !== undefined && x`
  <description>${s.description}</description>`}
  <memory unit='MiB'>${s.memoryMiB}</memory>
  <vcpu>${s.vcpus}</vcpu>${osXml(s)}
  <features>
    <acpi/>
    <apic/>
  </features>${cpuXml(s)}
  <clock offset='${s.clock}'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>${devicesXml(s)}
</domain>
`.xml
}

export interface NetworkSpec {
  name: string
  bridge: string
  /** The host's address on the network, and its prefix length. */
  hostIp: string
  prefix: number
}

/**
 * The guests' network: `<forward mode='open'/>` (libvirt 9.0 and later add no firewall rule of
 * their own for it, so the rooter's default deny is the only firewall: docs/network.md), a bridge
 * of its own with the host's address, no DHCP (each guest's address is on its kernel command line)
 * and no DNS from libvirt (port 53 of the host's address stays free for what answers DNS in an
 * analysis: INetSim).
 */
export function networkXml(n: NetworkSpec): string {
  check(NAME.test(n.name), 'network name', n.name)
  check(IFNAME.test(n.bridge), 'bridge', n.bridge)
  check(Number.isInteger(n.prefix) && n.prefix >= 8 && n.prefix <= 30, 'prefix', n.prefix)
  return x`<network>
  <name>${n.name}</name>
  <forward mode='open'/>
  <bridge name='${n.bridge}' stp='off' delay='0'/>
  <dns enable='no'/>
  <ip address='${n.hostIp}' prefix='${n.prefix}'/>
</network>
`.xml
}
