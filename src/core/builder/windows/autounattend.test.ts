// Autounattend.xml against golden files (Windows 10 on BIOS and on UEFI, Windows 11 on UEFI), and
// hostile input: what a user types either is refused with the field named, or reaches Windows
// Setup exactly as typed, read back by a parser that is not ours (Python's xml.etree), without
// adding, removing or changing a single element. AVIARY_WRITE_GOLDEN=1 rewrites the golden files.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { autounattendXml } from './autounattend'
import { firstLogonCommand } from './first-logon'
import { checkWindowsInput, WindowsSpecError, type WindowsMachineInput } from './options'
import { findAll, findOne, parseXml, type ParsedElement } from '../../../../test/windows-builder/xml-oracle'

const GOLDEN = path.resolve(__dirname, '../../../../test/windows-builder/golden')

const BASE: WindowsMachineInput = {
  name: 'win10', user: 'analyst', password: 'Sandbox1', computerName: 'DESKTOP-7QK2M4R',
  ip: '192.168.122.101', mac: '52:54:00:a1:b2:c3', network: 'default'
}

const VARIANTS = [
  { file: 'win10-bios.xml', input: { ...BASE, version: '10', firmware: 'bios' }, edition: 'Windows 10 Pro' },
  { file: 'win10-uefi.xml', input: { ...BASE, version: '10', firmware: 'uefi' }, edition: 'Windows 10 Pro' },
  { file: 'win11-uefi.xml', input: { ...BASE, name: 'win11', version: '11', productKey: 'vk7jg-nphtm-c97jm-9mpgt-3v66t', timeZone: 'W. Europe Standard Time', locale: 'de-DE' }, edition: 'Windows 11 Pro' }
]

/** Every element's path, in document order: the shape of the document, whatever the values. */
function shape(e: ParsedElement, at = ''): string[] {
  const p = `${at}/${e.tag}`
  return [p, ...e.children.flatMap((c) => shape(c, p))]
}

const texts = (root: ParsedElement, suffix: string): string[] => findAll(root, suffix).map((e) => e.text)

describe('Autounattend.xml', () => {
  it.each(VARIANTS)('$file matches its golden file', ({ file, input, edition }) => {
    const xml = autounattendXml(checkWindowsInput(input), edition)
    const golden = path.join(GOLDEN, file)
    if (process.env.AVIARY_WRITE_GOLDEN === '1' || !existsSync(golden)) writeFileSync(golden, xml)
    expect(xml).toBe(readFileSync(golden, 'utf8'))
  })

  it('BIOS gets one active MBR partition, UEFI the EFI, MSR and Windows partitions, and Windows 11 only skips Secure Boot', () => {
    const [bios, uefi, win11] = VARIANTS.map((v) => parseXml(autounattendXml(checkWindowsInput(v.input), v.edition)))
    expect(texts(bios!, 'CreatePartition/Type')).toEqual(['Primary'])
    expect(texts(bios!, 'ModifyPartition/Active')).toEqual(['true'])
    expect(texts(bios!, 'InstallTo/PartitionID')).toEqual(['1'])
    expect(texts(uefi!, 'CreatePartition/Type')).toEqual(['EFI', 'MSR', 'Primary'])
    expect(texts(uefi!, 'ModifyPartition/Format')).toEqual(['FAT32', 'NTFS'])
    expect(texts(uefi!, 'InstallTo/PartitionID')).toEqual(['3'])
    expect(texts(uefi!, 'RunSynchronousCommand/Path').join('\n')).not.toMatch(/LabConfig/)
    const labConfig = texts(win11!, 'RunSynchronousCommand/Path').filter((p) => /LabConfig/.test(p))
    expect(labConfig).toEqual(['reg.exe add "HKLM\\SYSTEM\\Setup\\LabConfig" /v BypassSecureBootCheck /t REG_DWORD /d 1 /f'])
    // The TPM check stays on: the machine has a real TPM 2.0.
    expect(texts(win11!, 'RunSynchronousCommand/Path').join('\n')).not.toMatch(/BypassTPMCheck|BypassRAMCheck/)
    expect(texts(win11!, 'ProductKey/Key')).toEqual(['VK7JG-NPHTM-C97JM-9MPGT-3V66T'])
    expect(texts(bios!, 'ProductKey/Key')).toEqual([])
  })

  it('sets the user, auto-logon, the static address on the NIC of the MAC, the firewall off and the first-logon command', () => {
    const doc = parseXml(autounattendXml(checkWindowsInput(VARIANTS[0]!.input), 'Windows 10 Pro'))
    expect(findAll(doc, 'settings').map((s) => s.attrs.pass)).toEqual(['windowsPE', 'specialize', 'oobeSystem'])
    expect(findOne(doc, 'AutoLogon/Username').text).toBe('analyst')
    expect(findOne(doc, 'AutoLogon/Enabled').text).toBe('true')
    expect(findOne(doc, 'LocalAccount/Name').text).toBe('analyst')
    expect(findOne(doc, 'LocalAccount/Group').text).toBe('Administrators')
    expect(texts(doc, 'Password/Value')).toEqual(['Sandbox1', 'Sandbox1'])
    expect(texts(doc, 'Interface/Identifier')).toEqual(['52-54-00-A1-B2-C3', '52-54-00-A1-B2-C3'])
    expect(findOne(doc, 'UnicastIpAddresses/IpAddress').text).toBe('192.168.122.101/24')
    expect(findOne(doc, 'Route/NextHopAddress').text).toBe('192.168.122.1')
    expect(findOne(doc, 'DNSServerSearchOrder/IpAddress').text).toBe('192.168.122.1')
    expect(findOne(doc, 'Ipv4Settings/DhcpEnabled').text).toBe('false')
    // Setup's order inside Interface.
    expect(findAll(doc, 'Interfaces/Interface')[0]!.children.map((c) => c.tag)).toEqual(['Ipv4Settings', 'Identifier', 'UnicastIpAddresses', 'Routes'])
    for (const p of ['Domain', 'Private', 'Public']) expect(findOne(doc, `${p}Profile_EnableFirewall`).text).toBe('false')
    expect(findOne(doc, 'SynchronousCommand/CommandLine').text).toBe(firstLogonCommand())
    expect(findOne(doc, 'InstallFrom/MetaData/Value').text).toBe('Windows 10 Pro')
  })

  it('names nothing of Aviary', () => {
    for (const v of VARIANTS) expect(autounattendXml(checkWindowsInput(v.input), v.edition)).not.toMatch(/aviary/i)
  })

  it('carries a hostile password and edition name exactly, as text, without changing the document', () => {
    const password = '</Value></Password><Enabled>false</Enabled><!-- ]]> &amp; &x; "\' %USERNAME% ^& | > nul'
    const edition = 'Windows 10 Pro"/><Key>/IMAGE/INDEX</Key><Value>1</Value><!--'
    const plain = autounattendXml(checkWindowsInput(VARIANTS[0]!.input), 'Windows 10 Pro')
    const hostile = autounattendXml(checkWindowsInput({ ...VARIANTS[0]!.input, password }), edition)
    const doc = parseXml(hostile)
    expect(shape(doc)).toEqual(shape(parseXml(plain)))
    expect(texts(doc, 'Password/Value')).toEqual([password, password])
    expect(findOne(doc, 'InstallFrom/MetaData/Value').text).toBe(edition)
    expect(findOne(doc, 'AutoLogon/Enabled').text).toBe('true')
  })

  it.each([
    ['user', { user: 'a<b' }],
    ['user', { user: 'Administrator' }],
    ['user', { user: 'x'.repeat(21) }],
    ['user', { user: 'a b' }],
    ['password', { password: '' }],
    ['password', { password: 'a\u0000b' }],
    ['password', { password: 'line\r\nbreak' }],
    ['password', { password: 'zero\u200bwidth'.replace('\u200b', '\u2028') }],
    ['computer-name', { computerName: 'DESKTOP-12345678' }],
    ['computer-name', { computerName: '12345' }],
    ['computer-name', { computerName: 'a&b' }],
    ['computer-name', { computerName: '-lead' }],
    ['product-key', { productKey: 'ABCDE-ABCDE-ABCDE-ABCDE' }],
    ['product-key', { productKey: 'ABCDE-ABCDE-ABCDE-ABCDE-ABCD<' }],
    ['ip', { ip: '192.168.122.256' }],
    ['ip', { ip: '192.168.122.0' }],
    ['ip', { ip: '192.168.122.255' }],
    ['ip', { ip: '192.168.122.1"/><x' }],
    ['ip', { ip: '::1' }],
    ['ip', { ip: '192.168.122.010' }],
    ['ip', { ip: undefined }],
    ['gateway', { gateway: '10.0.0.1' }],
    ['gateway', { gateway: '192.168.122.101' }],
    ['dns', { dns: ['8.8.8.8; rm -rf'] }],
    ['dns', { dns: [] }],
    ['prefix', { prefix: 31 }],
    ['mac', { mac: '01:00:5e:00:00:01' }],
    ['mac', { mac: '52:54:00:zz:00:01' }],
    ['name', { name: '../etc' }],
    ['name', { name: "win'10" }],
    ['network', { network: "default'/><x" }],
    ['time-zone', { timeZone: 'UTC</TimeZone>' }],
    ['locale', { locale: 'en-US<' }],
    ['windows-version', { version: '7' }],
    ['firmware', { version: '11', firmware: 'bios' }],
    ['memory', { version: '11', firmware: 'uefi', memoryMiB: 2048 }],
    ['edition', { edition: '  ' }],
    ['agent-port', { agentPort: 70000 }]
  ] as [string, Partial<WindowsMachineInput>][])('refuses %s %j, naming the field', (field, bad) => {
    let err: unknown
    try {
      checkWindowsInput({ ...BASE, ...bad })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(WindowsSpecError)
    expect((err as WindowsSpecError).field).toBe(field)
    expect((err as Error).message.startsWith(`${field}: `)).toBe(true)
  })

  it('makes a Windows-like computer name and a QEMU MAC when none is given', () => {
    const s = checkWindowsInput({ name: 'w', password: 'p', ip: '10.1.2.3', prefix: 16 })
    expect(s.computerName).toMatch(/^DESKTOP-[A-Z0-9]{7}$/)
    expect(s.mac).toMatch(/^52:54:00(:[0-9a-f]{2}){3}$/)
    expect(s.gateway).toBe('10.1.0.1')
    expect(s.dns).toEqual(['10.1.0.1'])
    expect(s.firmware).toBe('bios')
    expect(checkWindowsInput({ name: 'w', password: 'p', ip: '10.1.2.3', version: '11' }).firmware).toBe('uefi')
  })
})
