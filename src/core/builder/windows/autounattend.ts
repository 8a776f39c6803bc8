// Autounattend.xml: Windows Setup reads it from the root of any removable or CD medium and runs
// the whole install without a question. Its passes, in the order Setup applies them:
// - windowsPE (Setup, before the copy): languages (International-Core-WinPE), the disk wiped and
//   partitioned (MBR for BIOS; GPT with an EFI system and an MSR partition for UEFI), the edition
//   (by its name in install.wim), the EULA and an optional product key (Setup). On Windows 11 a
//   LabConfig value lets Setup go on without Secure Boot, which this machine cannot have and keep
//   live snapshots (domain-xml.ts); its TPM 2.0 is a real one (swtpm).
// - specialize (first boot, as SYSTEM): the computer name and time zone (Shell-Setup), the static
//   address on the NIC of the domain's MAC (TCPIP, DNS-Client), the firewall off
//   (Networking-MPSSVC-Svc), and registry policies for updates and Defender (Deployment's
//   RunSynchronous): what applies before anyone logs on.
// - oobeSystem: OOBE's pages hidden, one local administrator, auto-logon as that user, and the
//   first-logon command that finds and runs the medium's script (first-logon.ts).
// Facts from Microsoft's Unattended Windows Setup Reference; the choice of what an analysis guest
// turns off follows what sandbox guest builders (VMCloak) turn off.
import { el, text, toXml, type XmlElement } from './xml'
import { firstLogonCommand } from './first-logon'
import type { WindowsMachineSpec } from './options'

const COMPONENT_ATTRS = {
  processorArchitecture: 'amd64',
  publicKeyToken: '31bf3856ad364e35',
  language: 'neutral',
  versionScope: 'nonSxS'
}

function component(name: string, ...children: (XmlElement | null | false)[]): XmlElement {
  return el('component', { name, ...COMPONENT_ATTRS }, ...children)
}

/** `wcm:action="add"` list items, numbered as Setup wants (`Order` from 1). */
const add = (extra: Record<string, string> = {}): Record<string, string> => ({ 'wcm:action': 'add', ...extra })

function partitions(firmware: WindowsMachineSpec['firmware']): { create: XmlElement; modify: XmlElement; windowsPartition: number } {
  if (firmware === 'bios') {
    return {
      create: el('CreatePartitions', null,
        el('CreatePartition', add(), text('Order', 1), text('Type', 'Primary'), text('Extend', true))),
      modify: el('ModifyPartitions', null,
        el('ModifyPartition', add(), text('Order', 1), text('PartitionID', 1), text('Format', 'NTFS'), text('Label', 'Windows'), text('Letter', 'C'), text('Active', true))),
      windowsPartition: 1
    }
  }
  // Microsoft's recommended UEFI layout without a recovery partition: EFI system (FAT32), MSR, Windows.
  return {
    create: el('CreatePartitions', null,
      el('CreatePartition', add(), text('Order', 1), text('Type', 'EFI'), text('Size', 300)),
      el('CreatePartition', add(), text('Order', 2), text('Type', 'MSR'), text('Size', 16)),
      el('CreatePartition', add(), text('Order', 3), text('Type', 'Primary'), text('Extend', true))),
    modify: el('ModifyPartitions', null,
      el('ModifyPartition', add(), text('Order', 1), text('PartitionID', 1), text('Format', 'FAT32'), text('Label', 'System')),
      el('ModifyPartition', add(), text('Order', 2), text('PartitionID', 2)),
      el('ModifyPartition', add(), text('Order', 3), text('PartitionID', 3), text('Format', 'NTFS'), text('Label', 'Windows'), text('Letter', 'C'))),
    windowsPartition: 3
  }
}

/** reg.exe command lines, run in order by Setup (windowsPE) or by the specialize pass. */
function runSynchronous(element: 'RunSynchronousCommand', commands: string[]): XmlElement {
  return el('RunSynchronous', null,
    ...commands.map((path, i) => el(element, add(), text('Order', i + 1), text('Path', path))))
}

const regDword = (key: string, value: string, data: number): string => `reg.exe add "${key}" /v ${value} /t REG_DWORD /d ${data} /f`

/** Windows 11 Setup's checks this machine passes (TPM 2.0, RAM, CPUs, disk) are left on. */
const WIN11_SETUP_COMMANDS = [regDword('HKLM\\SYSTEM\\Setup\\LabConfig', 'BypassSecureBootCheck', 1)]

const SPECIALIZE_COMMANDS = [
  // Updates: the policy Windows Update obeys on every edition that reads policies (Pro and up).
  regDword('HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate\\AU', 'NoAutoUpdate', 1),
  // Defender: never send samples or reports to Microsoft, real-time protection off. Newer builds
  // ignore DisableAntiSpyware under tamper protection; the first-logon script sets the preferences too.
  regDword('HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows Defender\\Spynet', 'SpynetReporting', 0),
  regDword('HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows Defender\\Spynet', 'SubmitSamplesConsent', 2),
  regDword('HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows Defender\\Real-Time Protection', 'DisableRealtimeMonitoring', 1),
  regDword('HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows Defender', 'DisableAntiSpyware', 1),
  // OOBE without a network and without asking for a Microsoft account (Windows 11).
  regDword('HKLM\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\OOBE', 'BypassNRO', 1)
]

/** The MAC as Windows writes it in an interface Identifier: 52-54-00-12-34-56. */
export function windowsMac(mac: string): string {
  return mac.toUpperCase().replace(/:/g, '-')
}

function international(name: string, locale: string): XmlElement {
  return component(name,
    name.endsWith('-WinPE') ? el('SetupUILanguage', null, text('UILanguage', locale)) : null,
    text('InputLocale', locale),
    text('SystemLocale', locale),
    text('UILanguage', locale),
    text('UserLocale', locale))
}

export function autounattendXml(s: WindowsMachineSpec, edition: string): string {
  const disk = partitions(s.firmware)
  const identifier = windowsMac(s.mac)
  const password = (): XmlElement => el('Password', null, text('Value', s.password), text('PlainText', true))

  const windowsPE = el('settings', { pass: 'windowsPE' },
    international('Microsoft-Windows-International-Core-WinPE', s.locale),
    component('Microsoft-Windows-Setup',
      el('DiskConfiguration', null,
        el('Disk', add(), text('DiskID', 0), text('WillWipeDisk', true), disk.create, disk.modify),
        text('WillShowUI', 'OnError')),
      el('ImageInstall', null,
        el('OSImage', null,
          el('InstallFrom', null, el('MetaData', add(), text('Key', '/IMAGE/NAME'), text('Value', edition))),
          el('InstallTo', null, text('DiskID', 0), text('PartitionID', disk.windowsPartition)),
          text('WillShowUI', 'OnError'))),
      s.version === '11' && runSynchronous('RunSynchronousCommand', WIN11_SETUP_COMMANDS),
      el('UserData', null,
        text('AcceptEula', true),
        s.productKey !== null && el('ProductKey', null, text('Key', s.productKey), text('WillShowUI', 'OnError')))))

  const specialize = el('settings', { pass: 'specialize' },
    component('Microsoft-Windows-Shell-Setup', text('ComputerName', s.computerName), text('TimeZone', s.timeZone)),
    // The order inside Interface is Setup's: Ipv4Settings, Identifier, UnicastIpAddresses, Routes.
    component('Microsoft-Windows-TCPIP',
      el('Interfaces', null,
        el('Interface', add(),
          el('Ipv4Settings', null, text('DhcpEnabled', false), text('RouterDiscoveryEnabled', false)),
          text('Identifier', identifier),
          el('UnicastIpAddresses', null, text('IpAddress', `${s.ip}/${s.prefix}`, add({ 'wcm:keyValue': '1' }))),
          el('Routes', null,
            el('Route', add(), text('Identifier', 0), text('Prefix', '0.0.0.0/0'), text('NextHopAddress', s.gateway)))))),
    component('Microsoft-Windows-DNS-Client',
      el('Interfaces', null,
        el('Interface', add(),
          text('Identifier', identifier),
          el('DNSServerSearchOrder', null, ...s.dns.map((d, i) => text('IpAddress', d, add({ 'wcm:keyValue': String(i + 1) }))))))),
    component('Microsoft-Windows-Networking-MPSSVC-Svc',
      text('DomainProfile_EnableFirewall', false),
      text('PrivateProfile_EnableFirewall', false),
      text('PublicProfile_EnableFirewall', false)),
    component('Microsoft-Windows-Deployment', runSynchronous('RunSynchronousCommand', SPECIALIZE_COMMANDS)))

  const oobeSystem = el('settings', { pass: 'oobeSystem' },
    international('Microsoft-Windows-International-Core', s.locale),
    component('Microsoft-Windows-Shell-Setup',
      el('AutoLogon', null, password(), text('Enabled', true), text('LogonCount', 9999999), text('Username', s.user)),
      el('FirstLogonCommands', null,
        el('SynchronousCommand', add(), text('Order', 1), text('CommandLine', firstLogonCommand()), text('Description', 'Guest tools'))),
      el('OOBE', null,
        text('HideEULAPage', true),
        text('HideLocalAccountScreen', true),
        text('HideOEMRegistrationScreen', true),
        text('HideOnlineAccountScreens', true),
        text('HideWirelessSetupInOOBE', true),
        text('ProtectYourPC', 3)),
      el('UserAccounts', null,
        el('LocalAccounts', null,
          el('LocalAccount', add(), password(), text('DisplayName', s.user), text('Group', 'Administrators'), text('Name', s.user))))))

  const root = el('unattend', { xmlns: 'urn:schemas-microsoft-com:unattend', 'xmlns:wcm': 'http://schemas.microsoft.com/WMIConfig/2002/State' },
    windowsPE, specialize, oobeSystem)
  return toXml(root, { declaration: true })
}
