// The one reader of a report's indicators: what it reads from each shape, the one set of caps it
// keeps for search and Compare alike, and that both read the same values through it.
import { describe, expect, it } from 'vitest'
import { INDICATOR_CAPS, LEFT_OUT_COUNTED, cappedLists, readIndicators } from './report-indicators'
import { CUCKOO_207 } from '../../test/fixtures/cuckoo-2.0.7-report'

describe('the indicators of a report', () => {
  it("reads Cuckoo 2.0.7's shapes: names with their answers, addresses contacted or only resolved, requests, drops, what the run touched", () => {
    const ind = readIndicators(CUCKOO_207)
    expect(ind.domains.values()).toEqual([{ name: 'evil.example', ips: ['93.184.216.34'] }])
    expect(ind.addresses.values().map((a) => [a.ip, a.ports, a.contacted])).toEqual([
      ['93.184.216.34', ['tcp/80'], true], ['8.8.8.8', ['udp/53'], true], ['10.0.0.9', [], true]
    ])
    // The capture's full URL and the replay's path on its host are one request, seen by both.
    expect(ind.http.values()).toEqual([{ method: 'GET', url: 'http://evil.example/gate.php', statuses: ['200'], sources: ['capture', 'proxy (http_ex)'], userAgent: 'Mozilla/4.0' }])
    expect(ind.signatures.values().map((s) => s.name)).toEqual(['persistence_autorun', 'network_http'])
    expect(ind.files.values()).toEqual(expect.arrayContaining(['C:\\Users\\cuckoo\\AppData\\Roaming\\updater.exe']))
    expect(cappedLists(ind)).toEqual({})
  })

  it('an address only a DNS answer names is not contacted; a reverse lookup is no domain; hostile shapes are skipped', () => {
    const ind = readIndicators({
      network: { dns: [{ request: 'x.in-addr.arpa' }, { request: 'Evil.Example.', answers: [{ type: 'A', data: '192.0.2.1' }, { type: 'CNAME', data: 'c.example' }] }], tcp: 'x', hosts: [5, { ip: '192.0.2.9' }] },
      behavior: { summary: { file_moved: [['/a', '/b'], 3], mutex: [null, 'M'], regkey_read: 'x' }, processes: [{ command_line: 'sh -c id' }] },
      signatures: [{ name: '' }, 'x', { name: 'antivm', families: ['Fam', 2] }], dropped: [{ sha256: 'AB', name: 'n', filepath: '/p', urls: ['http://u.example/'] }, {}]
    })
    expect(ind.domains.values()).toEqual([{ name: 'evil.example', ips: ['192.0.2.1'] }])
    expect(ind.addresses.values().map((a) => [a.ip, a.contacted])).toEqual([['192.0.2.1', false], ['192.0.2.9', true]])
    expect(ind.files.values()).toEqual(['/a', '/b', '/p'])
    expect(ind.mutexes.values()).toEqual(['M'])
    expect(ind.keys.values()).toEqual([])
    expect(ind.commands.values()).toEqual(['sh -c id'])
    expect(ind.signatures.values()).toEqual([{ name: 'antivm', families: ['Fam'] }])
    expect(ind.dropped.values().map((d) => [d.sha256, d.names, d.paths, d.urls])).toEqual([['ab', ['n'], ['/p'], ['http://u.example/']]])
    expect(ind.writtenUrls.values()).toEqual(['http://u.example/'])
  })

  // That search and Compare read these same values: core/search/search-index.test.ts, renderer/src/compare/facts.test.ts.
  it('keeps each list to its cap, the first values seen, and counts what it left out', () => {
    const n = INDICATOR_CAPS.domains + 500
    const report = { network: { domains: Array.from({ length: n }, (_, i) => ({ domain: `h${i}.flood.example`, ip: '' })) } }
    const ind = readIndicators(report)
    expect(ind.domains.map.size).toBe(INDICATOR_CAPS.domains)
    expect(cappedLists(ind)).toEqual({ domains: { kept: INDICATOR_CAPS.domains, leftOut: 500, over: false } })
    expect(ind.domains.values()[0]?.name).toBe('h0.flood.example')
    expect(ind.domains.map.has(`h${n - 1}.flood.example`)).toBe(false)
    expect(LEFT_OUT_COUNTED).toBe(100_000)
  })
})
