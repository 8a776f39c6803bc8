// The Windows domain, BIOS and UEFI+TPM, checked against libvirt's own domain schema
// (virt-xml-validate) and defined on libvirt's test driver (test+unix:///default, shared with
// virsh through libvirtd): what libvirt keeps after the define is read back with `virsh dumpxml`
// and a parser that is not ours. The QEMU side (OVMF as a ROM with a swtpm TPM taking and
// reverting a live snapshot; pflash refused) was measured by hand and is in docs/machines.md.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { holdTestDriver, type HeldTestDriver } from '../../../../test/windows-builder/test-driver'
import { findAll, findOne, parseXml } from '../../../../test/windows-builder/xml-oracle'
import { CDROM_TARGETS, OVMF_ROM, windowsDomainXml } from './domain-xml'
import { checkWindowsInput } from './options'

const run = promisify(execFile)
const URI = 'test+unix:///default'

describe('the Windows domain on libvirt\'s test driver', () => {
  let dir: string
  let held: HeldTestDriver
  const names: string[] = []
  const virsh = async (...args: string[]): Promise<string> => (await run('virsh', ['-q', '-c', URI, ...args], { timeout: 60_000 })).stdout

  beforeAll(async () => {
    held = await holdTestDriver(URI)
    dir = mkdtempSync(path.join(tmpdir(), 'avwv-domain-'))
  }, 120_000)
  afterAll(async () => {
    for (const n of names) await virsh('undefine', n).catch(() => undefined)
    await held?.release()
    rmSync(dir, { recursive: true, force: true })
  })

  const variants = [
    { name: 'avwv-win10-bios', version: '10', firmware: 'bios', virtType: 'qemu' as const },
    { name: 'avwv-win11-uefi', version: '11', firmware: 'uefi', virtType: 'kvm' as const }
  ]

  it.each(variants)('$name: valid by libvirt\'s schema, defined, and read back as written', async (v) => {
    const spec = checkWindowsInput({ name: v.name, version: v.version, firmware: v.firmware, password: 'x', ip: '192.168.122.101', mac: '52:54:00:0a:0b:0c' })
    const files = { disk: path.join(dir, `${v.name}.qcow2`), windowsIso: path.join(dir, 'Win.iso'), answerIso: path.join(dir, `${v.name}-answer.iso`) }
    const xml = windowsDomainXml({ spec, virtType: v.virtType, ...files })
    const file = path.join(dir, `${v.name}.xml`)
    writeFileSync(file, xml)
    const validated = await run('virt-xml-validate', [file, 'domain'])
    // It exits non-zero (run() throws) on an invalid document, and says "validates" on stderr.
    expect(validated.stdout + validated.stderr).toMatch(/validates/)

    await virsh('undefine', v.name).catch(() => undefined)
    await virsh('define', file)
    names.push(v.name)
    const dom = parseXml(await virsh('dumpxml', v.name))
    expect(dom.attrs.type).toBe(v.virtType)
    expect(findOne(dom, 'os/type').attrs.machine).toMatch(/q35/)
    expect(findOne(dom, 'memory').text).toBe(String(4096 * 1024))
    expect(findOne(dom, 'vcpu').text).toBe('2')
    const disks = findAll(dom, 'devices/disk').map((d) => ({
      device: d.attrs.device, file: findOne(d, 'source').attrs.file, target: findOne(d, 'target').attrs.dev, bus: findOne(d, 'target').attrs.bus
    }))
    expect(disks).toEqual([
      { device: 'disk', file: files.disk, target: 'sda', bus: 'sata' },
      { device: 'cdrom', file: files.windowsIso, target: CDROM_TARGETS.windows, bus: 'sata' },
      { device: 'cdrom', file: files.answerIso, target: CDROM_TARGETS.answer, bus: 'sata' }
    ])
    const nic = findOne(dom, 'devices/interface')
    expect(findOne(nic, 'mac').attrs.address).toBe('52:54:00:0a:0b:0c')
    expect(findOne(nic, 'source').attrs.network).toBe('default')
    expect(findOne(nic, 'model').attrs.type).toBe('e1000e')
    expect(findAll(dom, 'os/boot').map((b) => b.attrs.dev)).toEqual(['hd', 'cdrom'])
    expect(findOne(dom, 'devices/memballoon').attrs.model).toBe('none')
    if (v.firmware === 'uefi') {
      const loader = findOne(dom, 'os/loader')
      expect(loader.attrs.type).toBe('rom')
      expect(loader.text).toBe(OVMF_ROM)
      expect(findAll(dom, 'os/nvram')).toEqual([])
      const tpm = findOne(dom, 'devices/tpm')
      expect(tpm.attrs.model).toBe('tpm-crb')
      expect(findOne(tpm, 'backend').attrs).toMatchObject({ type: 'emulator', version: '2.0' })
      expect(findOne(dom, 'cpu').attrs.mode).toBe('host-passthrough')
    } else {
      expect(findAll(dom, 'os/loader')).toEqual([])
      expect(findAll(dom, 'devices/tpm')).toEqual([])
      expect(findOne(dom, 'cpu/model').text).toBe('Nehalem')
    }
  })

  it('starts on the test driver (BIOS and UEFI+TPM) and takes a snapshot there', async () => {
    expect(names).toEqual(variants.map((v) => v.name))
    for (const n of names) {
      await virsh('start', n)
      expect((await virsh('domstate', n)).trim()).toBe('running')
      await virsh('snapshot-create-as', n, 'clean')
      expect((await virsh('snapshot-list', n, '--name')).trim()).toBe('clean')
      await virsh('destroy', n)
      await virsh('snapshot-delete', n, 'clean')
    }
  })

  it('names nothing of Aviary in what the guest can see', () => {
    const spec = checkWindowsInput({ name: 'win11', version: '11', password: 'x', ip: '10.0.0.5' })
    const xml = windowsDomainXml({ spec, virtType: 'qemu', disk: '/d/disk.qcow2', windowsIso: '/d/w.iso', answerIso: '/d/a.iso' })
    // The domain's name and file paths are the host's; the guest sees devices, firmware and the MAC.
    expect(xml.replace(/<name>[^<]*<\/name>|file="[^"]*"/g, '')).not.toMatch(/aviary/i)
  })
})
