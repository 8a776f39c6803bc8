// The join of two digests: where each row is, what "differs" means per list, the order rows come
// in (keys sorted; facts in A's order then B's), a key repeated in one list counted once, and the
// tally a section heading shows.
import { describe, expect, it } from 'vitest'
import { compareFacts, diffBy, differs, tally } from './diff'
import { reportFacts } from './facts'

describe('diffBy', () => {
  it('marks rows only in A, only in B, in both, and in both but changed, sorted by key', () => {
    const rows = diffBy([{ key: 'c', v: 1 }, { key: 'a', v: 1 }, { key: 'b', v: 1 }], [{ key: 'b', v: 2 }, { key: 'd', v: 1 }, { key: 'a', v: 1 }], (x, y) => x.v === y.v)
    expect(rows.map((r) => [r.key, r.where, r.changed])).toEqual([['a', 'both', false], ['b', 'both', true], ['c', 'a', false], ['d', 'b', false]])
    expect(rows.filter(differs).map((r) => r.key)).toEqual(['b', 'c', 'd'])
    expect(tally(rows)).toEqual({ a: 1, b: 1, both: 2, changed: 1 })
  })

  it('keeps A\'s order, then B\'s new keys, when asked; a repeated key counts once', () => {
    const rows = diffBy([{ key: 'z' }, { key: 'y' }, { key: 'z' }], [{ key: 'x' }, { key: 'y' }, { key: 'x' }], undefined, true)
    expect(rows.map((r) => [r.key, r.where])).toEqual([['z', 'a'], ['y', 'both'], ['x', 'b']])
  })

  it('empty lists give no rows', () => {
    expect(diffBy([], [])).toEqual([])
    expect(tally([])).toEqual({ a: 0, b: 0, both: 0, changed: 0 })
  })
})

describe('compareFacts', () => {
  const a = reportFacts({
    info: { score: 2 }, signatures: [{ name: 'starts_shell', severity: 2, ttp: { T1059: { short: 'Command and Scripting Interpreter' } } }],
    behavior: { processtree: [{ pid: 1, process_name: 'a', command_line: 'a', children: [{ pid: 2, process_name: 'sh', command_line: 'sh -c x' }] }] },
    network: { domains: [{ domain: 'x.example', ip: '1.1.1.1' }] }, dropped: [{ sha256: 'AA', name: 'f', filepath: '/tmp/f' }],
    static: { pdf: { version: '1.7', javascript: 1 } }
  })
  const b = reportFacts({
    info: { score: 2 }, signatures: [{ name: 'starts_shell', severity: 3, ttp: { T1059: { short: 'Command and Scripting Interpreter' } } }],
    behavior: { processtree: [{ pid: 9, process_name: 'a', command_line: 'a', children: [{ pid: 10, process_name: 'sh', command_line: 'sh -c x' }, { pid: 11, process_name: 'sh', command_line: 'sh -c x' }] }] },
    network: { domains: [{ domain: 'X.example.', ip: '2.2.2.2' }] }, dropped: [{ sha256: 'aa', name: 'g', filepath: '/var/g' }],
    static: { pdf: { version: '1.7', javascript: 0 } }
  })
  const c = compareFacts(a, b)

  it('says how a shared entry differs: severity, process counts, resolved addresses, dropped paths, fact values', () => {
    expect(c.signatures[0]).toMatchObject({ key: 'starts_shell', where: 'both', changed: true })
    expect(c.techniques[0]).toMatchObject({ key: 'T1059', where: 'both', changed: false })
    expect(c.processNames.map((r) => [r.key, r.where, r.changed])).toEqual([['a', 'both', false], ['sh', 'both', true]])
    expect(c.processPaths.map((r) => [r.a?.names.join('>'), r.a?.count, r.b?.count])).toEqual([['a', 1, 1], ['a>sh', 1, 2]])
    expect(c.domains[0]).toMatchObject({ key: 'x.example', where: 'both', changed: true, a: { ips: ['1.1.1.1'] }, b: { ips: ['2.2.2.2'] } })
    expect(c.dropped[0]).toMatchObject({ key: 'aa', where: 'both', changed: true })
    expect(c.overview.find((r) => r.key === 'Score')).toMatchObject({ changed: false })
    expect(c.staticFacts.map((r) => [r.key, r.changed])).toEqual([['PDF version', false], ['PDF javascript', true]])
  })
})

describe('IDS alerts', () => {
  const alert = (sid: number, dst: string, port: number) => ({ sid, signature: `rule ${sid}`, severity: 2, dst_ip: dst, dst_port: port })
  it('are compared by sid: only in A, only in B, in both with another count; hostile shapes ignored', () => {
    const a = reportFacts({ suricata: { alerts: [alert(1100001, '10.0.0.9', 80), alert(1100001, '10.0.0.9', 80), alert(1100003, '10.0.0.1', 53), { sid: 'x' }, null] } })
    const b = reportFacts({ suricata: { alerts: [alert(1100001, '10.0.0.7', 8080), alert(1100005, '203.0.113.4', 4444)] } })
    expect(a.idsAlerts.map((x) => [x.key, x.count, x.destinations])).toEqual([['1100001', 2, ['10.0.0.9:80']], ['1100003', 1, ['10.0.0.1:53']]])
    const rows = compareFacts(a, b).idsAlerts
    expect(rows.map((r) => [r.key, r.where, r.changed])).toEqual([['1100001', 'both', true], ['1100003', 'a', false], ['1100005', 'b', false]])
    expect(reportFacts({ suricata: 'garbage' }).idsAlerts).toEqual([])
  })
})
