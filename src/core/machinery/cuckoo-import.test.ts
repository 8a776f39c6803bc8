// The Cuckoo configuration importer on conf folders written in Cuckoo 2's syntax
// (test/fixtures/cuckoo-conf): what carries over lands in machines.json as the engine reads it,
// what cannot is named in a warning, and the INI dialect is Python ConfigParser's.
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { importCuckooConf, CuckooImportError } from './cuckoo-import'
import { parseIni, IniError } from './cuckoo-ini'
import { parseFleetConfig } from './machines-config'

const FIX = (name: string): string => fileURLToPath(new URL(`../../../test/fixtures/cuckoo-conf/${name}`, import.meta.url))

describe('parseIni (Python ConfigParser dialect)', () => {
  it('reads comments, both separators, inline " ;" comments, continuation lines, "" and merged sections', () => {
    const s = parseIni([
      '# a comment', '; another', '[a]', 'Key = v1 ; note', 'other: x;y', 'list = one,', '   two', '',
      'empty = ""', '[b] trailing text', 'k=v', '[a]', 'late = 1'
    ].join('\n'))
    expect([...s.keys()]).toEqual(['a', 'b'])
    expect(Object.fromEntries(s.get('a') ?? [])).toEqual({ key: 'v1', other: 'x;y', list: 'one,\ntwo', empty: '', late: '1' })
    expect(s.get('b')?.get('k')).toBe('v')
  })

  it('refuses what ConfigParser refuses, naming file and line', () => {
    expect(() => parseIni('k = v\n', 'x.conf')).toThrow(new IniError('x.conf:1: an option before any [section]'))
    expect(() => parseIni('[a]\njust words\n', 'x.conf')).toThrow(/^x\.conf:2: expected 'key = value'/)
    expect(() => parseIni('[a]\n  indented\n', 'x.conf')).toThrow(/x\.conf:2: an indented line continues no option/)
  })
})

describe('importCuckooConf', () => {
  it('imports a kvm setup: settings, machines with their fields, and warns about what does not carry over', () => {
    const { json, warnings } = importCuckooConf(FIX('kvm'))
    const raw = JSON.parse(json) as Record<string, unknown>
    expect(raw).toEqual({
      driver: 'kvm',
      resultserver: { ip: '192.168.122.1', port: 2042, upload_max_size: 268435456 },
      timeouts: { default: 180, critical: 90, vm_state: 120 },
      max_machines: 2,
      tcpdump: '/usr/local/sbin/tcpdump',
      interface: 'virbr0',
      kvm: { uri: 'qemu:///system' },
      machines: [
        { name: 'win7-a', label: 'cuckoo-win7-a', platform: 'windows', ip: '192.168.122.105', snapshot: 'clean-running', tags: ['win7', 'office2010', 'x64'] },
        { name: 'win7_b.x64', label: 'cuckoo-win7-b', platform: 'windows', ip: '192.168.122.106', interface: 'virbr1', resultserver_ip: '192.168.122.1', resultserver_port: 2043 }
      ]
    })
    const fleet = parseFleetConfig(raw)
    expect(fleet.settings.kvm.uri).toBe('qemu:///system')
    expect(fleet.settings.timeouts.vmState).toBe(120)
    expect(fleet.machines.map((m) => [m.name, m.driver, m.interface, m.snapshot])).toEqual([
      ['win7-a', 'kvm', 'virbr0', 'clean-running'],
      ['win7_b.x64', 'kvm', 'virbr1', null]
    ])
    expect(warnings).toEqual([
      'virtualbox.conf was not imported: cuckoo.conf uses machinery = kvm',
      'kvm.conf [win7-a]: osprofile = Win7SP1x64 is not used by Aviary (memory analysis takes its profile elsewhere)',
      "kvm.conf: machine 'lost-vm' is listed in machines but has no [lost-vm] section; it was not imported"
    ])
    expect(json.endsWith('}\n')).toBe(true)
    expect(json).toContain('\n  "driver": "kvm"')
  })

  it('imports a virtualbox setup from a Cuckoo working directory: path, mode, options; a shared ip is refused with a warning', () => {
    const { json, warnings } = importCuckooConf(FIX('virtualbox-cwd'))
    const fleet = parseFleetConfig(JSON.parse(json))
    expect(fleet.settings.virtualbox).toEqual({ path: '/opt/VirtualBox/VBoxManage', mode: 'gui' })
    expect(fleet.settings.resultserver.ip).toBe('192.168.56.1')
    expect(fleet.settings.maxMachines).toBe(0)
    expect(fleet.machines).toHaveLength(1)
    expect(fleet.machines[0]).toMatchObject({
      name: 'cuckoo1', label: 'Windows 7 SP1 (cuckoo1)', driver: 'virtualbox', snapshot: null, interface: 'vboxnet0', options: ['nictrace', 'noagent']
    })
    expect(warnings).toEqual(["virtualbox.conf [cuckoo2]: ip 192.168.56.101 is also cuckoo1's; Aviary tells guests apart by address, so it was not imported"])
  })

  it('imports physical machines without snapshots and warns that FOG re-imaging does not carry over', () => {
    const { json, warnings } = importCuckooConf(FIX('physical'))
    const fleet = parseFleetConfig(JSON.parse(json))
    expect(fleet.machines).toEqual([expect.objectContaining({ name: 'physical1', ip: '10.0.0.21', driver: 'physical', snapshot: null, tags: ['bare-metal'], interface: 'eth1' })])
    expect(fleet.settings.timeouts.vmState).toBe(300)
    expect(warnings).toEqual([
      "auxiliary.conf [sniffer] enabled = no is not carried over: Aviary captures each analysis on its machine's interface",
      'physical.conf user/password and [fog]: Aviary does not shut down or re-image physical machines; they were not imported'
    ])
  })

  it('a machinery Aviary has no driver for gives no machines and says so', () => {
    const { json, warnings } = importCuckooConf(FIX('esx'))
    expect(JSON.parse(json)).toEqual({ resultserver: { ip: '192.168.56.1' }, machines: [] })
    expect(warnings).toEqual(['cuckoo.conf machinery = esx: Aviary has drivers for kvm, virtualbox, physical only; no machines were imported'])
  })

  it('fails with a message naming the file and line, or the missing cuckoo.conf', () => {
    expect(() => importCuckooConf(FIX('broken'))).toThrow(new CuckooImportError('cuckoo.conf:1: an option before any [section]'))
    expect(() => importCuckooConf(FIX('nonexistent'))).toThrow(/^no cuckoo\.conf in /)
  })
})
