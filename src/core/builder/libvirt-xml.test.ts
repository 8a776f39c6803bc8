// The builder's libvirt XML, checked by libvirt itself: every variant passes libvirt's own schemas
// (virt-xml-validate), is defined on libvirt's test driver and read back (virsh dumpxml), and a
// hostile value (a command line or a path full of XML) reaches libvirt exactly, without changing
// the document's shape; a value that cannot be carried is refused with its field named.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { domainXml, networkXml, XmlValueError, type DomainSpec } from './libvirt-xml'
import { parseNetworkXml } from './libvirt-host'

const run = promisify(execFile)
const dir = mkdtempSync(path.join(tmpdir(), 'aviary-xml-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function file(name: string, xml: string): Promise<string> {
  const f = path.join(dir, name)
  writeFileSync(f, xml)
  return f
}

async function validate(xml: string, schema: 'domain' | 'network'): Promise<void> {
  const f = await file(`${schema}-${Math.random().toString(36).slice(2)}.xml`, xml)
  const { stdout, stderr } = await run('virt-xml-validate', [f, schema])
  expect(stdout + stderr).toMatch(/validates/)
}

/** Defines `xml` on a fresh test driver and returns libvirt's own dump of it (one virsh: the test driver forgets between connections). */
async function defineAndDump(xml: string, kind: 'domain' | 'network', name: string): Promise<string> {
  const f = await file(`def-${name}.xml`, xml)
  const cmds = kind === 'domain' ? `define ${f}; dumpxml ${name}` : `net-define ${f}; net-dumpxml ${name}`
  return (await run('virsh', ['-q', '-c', 'test:///default', cmds])).stdout
}

async function xpath(xml: string, expr: string): Promise<string> {
  const f = await file(`x-${Math.random().toString(36).slice(2)}.xml`, xml)
  return (await run('xmllint', ['--xpath', expr, f])).stdout.replace(/\n$/, '')
}

const linux = (over: Partial<DomainSpec> = {}): DomainSpec => ({
  name: 'avlx-linux', type: 'qemu', memoryMiB: 1024, vcpus: 1, clock: 'utc',
  description: 'made by a test',
  boot: { kind: 'kernel', kernel: '/data/images/k/vmlinuz', initrd: '/data/images/k/initrd.img', cmdline: 'root=/dev/vda rw console=ttyS0 net.ifnames=0 ip=10.216.0.101::10.216.0.1:255.255.255.0::eth0:off' },
  disks: [{ file: '/data/machines/linux/disk.qcow2', format: 'qcow2', bus: 'virtio', target: 'vda' }],
  nics: [{ network: 'avlx', mac: '52:54:00:d8:00:65', tap: 'avlx-t65', model: 'virtio' }],
  serialLog: '/data/machines/linux/console.log',
  ...over
})

describe('the domain XML', () => {
  it('of a Linux machine: valid, and libvirt reads back its kernel, command line, disk, MAC, tap, serial log and VNC on loopback', async () => {
    const xml = domainXml(linux())
    await validate(xml, 'domain')
    const back = await defineAndDump(xml, 'domain', 'avlx-linux')
    expect(back).toMatch(/<domain type='qemu'>/)
    expect(back).toContain('<kernel>/data/images/k/vmlinuz</kernel>')
    expect(back).toContain('<initrd>/data/images/k/initrd.img</initrd>')
    expect(back).toContain('ip=10.216.0.101::10.216.0.1:255.255.255.0::eth0:off')
    expect(back).toContain("<source file='/data/machines/linux/disk.qcow2'/>")
    expect(back).toContain("<mac address='52:54:00:d8:00:65'/>")
    expect(back).toContain("<target dev='avlx-t65'/>")
    expect(back).toContain("<source path='/data/machines/linux/console.log' append='on'/>")
    expect(back).toMatch(/<graphics type='vnc'[^>]*listen='127\.0\.0\.1'/)
  })

  it('with KVM: host-passthrough CPU; under TCG a named model when asked', async () => {
    const kvm = domainXml(linux({ type: 'kvm', vcpus: 2 }))
    await validate(kvm, 'domain')
    expect(kvm).toContain("<cpu mode='host-passthrough' check='none'/>")
    const tcg = domainXml(linux({ tcgCpuModel: 'Nehalem' }))
    await validate(tcg, 'domain')
    expect(await xpath(tcg, 'string(/domain/cpu/model)')).toBe('Nehalem')
  })

  it('takes the BIOS and the UEFI-ROM-with-TPM variants (for a Windows builder): valid and defined', async () => {
    const disks: DomainSpec['disks'] = [
      { file: '/m/disk.qcow2', format: 'qcow2', bus: 'sata', target: 'sda' },
      { file: '/m/win.iso', format: 'raw', bus: 'sata', target: 'sdb', device: 'cdrom', readonly: true }
    ]
    const base = { disks, nics: [{ network: 'avlx', mac: '52:54:00:00:00:02', model: 'e1000e' as const }], clock: 'localtime' as const, tablet: true, serialLog: undefined }
    const bios = domainXml(linux({ name: 'avlx-bios', boot: { kind: 'bios' }, bootOrder: ['hd', 'cdrom'], ...base }))
    await validate(bios, 'domain')
    expect(await defineAndDump(bios, 'domain', 'avlx-bios')).toMatch(/<boot dev='hd'\/>\s*<boot dev='cdrom'\/>/)
    const uefi = domainXml(linux({ name: 'avlx-uefi', boot: { kind: 'uefiRom', rom: '/usr/share/ovmf/OVMF.fd' }, tpm: true, tcgCpuModel: 'Nehalem', ...base }))
    await validate(uefi, 'domain')
    const back = await defineAndDump(uefi, 'domain', 'avlx-uefi')
    expect(back).toContain("<loader type='rom'>/usr/share/ovmf/OVMF.fd</loader>")
    expect(back).toMatch(/<tpm model='tpm-crb'>\s*<backend type='emulator' version='2\.0'/)
    expect(back).toContain('<readonly/>')
  })

  it('carries a hostile command line and paths exactly, and keeps its shape', async () => {
    const evil = `root=/dev/vda x='</cmdline><kernel>/evil</kernel>' y="&amp; &x; ]]> <!-- -->"\t`
    const evilPath = `/data/it's <here> & "there"/disk.qcow2`
    const xml = domainXml(linux({ boot: { kind: 'kernel', kernel: '/k/vmlinuz', initrd: '/k/initrd', cmdline: evil }, disks: [{ file: evilPath, format: 'qcow2', bus: 'virtio', target: 'vda' }] }))
    await validate(xml, 'domain')
    expect(await xpath(xml, 'string(/domain/os/cmdline)')).toBe(evil)
    expect(await xpath(xml, 'string(/domain/devices/disk/source/@file)')).toBe(evilPath)
    expect(await xpath(xml, 'count(/domain/os/kernel)')).toBe('1')
    expect(await xpath(xml, 'string(/domain/os/kernel)')).toBe('/k/vmlinuz')
    const back = await defineAndDump(xml, 'domain', 'avlx-linux')
    expect(await xpath(back, 'string(/domain/os/cmdline)')).toBe(evil)
  })

  it.each([
    ['name', { name: "a'b" }],
    ['name', { name: '../x' }],
    ['nic mac', { nics: [{ network: 'avlx', mac: '52:54:00:00:00:0G', model: 'virtio' as const }] }],
    ['nic tap', { nics: [{ network: 'avlx', mac: '52:54:00:00:00:01', tap: 'vnet0', model: 'virtio' as const }] }],
    ['nic tap', { nics: [{ network: 'avlx', mac: '52:54:00:00:00:01', tap: 'a-tap-name-too-long', model: 'virtio' as const }] }],
    ['disk file', { disks: [{ file: 'relative.qcow2', format: 'qcow2' as const, bus: 'virtio' as const, target: 'vda' }] }],
    ['vncListen', { vncListen: '0.0.0.0' }],
    ['memoryMiB', { memoryMiB: 12.5 }],
    ['boot.kernel', { boot: { kind: 'kernel' as const, kernel: 'vmlinuz', initrd: '/i', cmdline: '' } }],
    ['control character', { description: 'bell\u0007' }]
  ])('refuses a bad %s', (field, over) => {
    expect(() => domainXml(linux(over))).toThrow(XmlValueError)
    expect(() => domainXml(linux(over))).toThrow(field === 'control character' ? /control character/ : new RegExp(field.replace('.', '\\.')))
  })
})

describe('the network XML', () => {
  it("is valid, defined with <forward mode='open'/>, no DHCP or DNS, and read back by the builder", async () => {
    const xml = networkXml({ name: 'avlx', bridge: 'avlx-br0', hostIp: '10.216.0.1', prefix: 24 })
    await validate(xml, 'network')
    const back = await defineAndDump(xml, 'network', 'avlx')
    expect(back).toContain("<forward mode='open'/>")
    expect(back).not.toContain('<dhcp')
    expect(back).toContain("<dns enable='no'/>")
    expect(parseNetworkXml(back)).toEqual({ name: 'avlx', bridge: 'avlx-br0', hostIp: '10.216.0.1', prefix: 24, forward: 'open' })
    // libvirt's own default network writes a netmask instead of a prefix.
    expect(parseNetworkXml("<network><name>default</name><forward mode='nat'/><bridge name='virbr0' stp='on'/><ip address='192.168.122.1' netmask='255.255.255.0'/></network>"))
      .toEqual({ name: 'default', bridge: 'virbr0', hostIp: '192.168.122.1', prefix: 24, forward: 'nat' })
  })

  it('refuses a bridge name the kernel would not take', () => {
    expect(() => networkXml({ name: 'avlx', bridge: 'a-bridge-too-long-x', hostIp: '10.216.0.1', prefix: 24 })).toThrow(/bridge/)
  })
})
