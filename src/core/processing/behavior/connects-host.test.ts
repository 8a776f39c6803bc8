// connects_host from the run's DNS answers (the end-to-end checks on real captures are in
// test/e2e/benign-corpus.test.ts and benign-windows.test.ts).
import { describe, expect, it } from 'vitest'
import { nameConnectedHosts, namesByAddress } from './connects-host'
import type { Behavior } from '../types'

const behavior = (summary: Behavior['summary'], generic: Behavior['generic'] = []): Behavior =>
  ({ processes: [], processtree: [], summary, generic, apistats: {}, anomaly: [] })

describe('connects_host', () => {
  const dns = [
    { request: 'www.example.org', type: 'A', answers: [{ type: 'CNAME', data: 'edge.example.net' }, { type: 'A', data: '93.184.216.34' }] },
    { request: 'other.example.org.', type: 'A', answers: [{ type: 'A', data: '93.184.216.34' }] },
    { request: 'v6.example.org', type: 'AAAA', answers: [{ type: 'AAAA', data: '2001:db8::1' }] },
    { request: 'nothing.example', type: 'A', answers: [] }
  ]

  it('names each address by the questions whose answers held it (the name asked, not the CNAME)', () => {
    expect(namesByAddress(dns)).toEqual(new Map([['93.184.216.34', new Set(['www.example.org', 'other.example.org'])], ['2001:db8::1', new Set(['v6.example.org'])]]))
  })

  it('gives connections the names their process looked up, else every name of the address, and leaves bare addresses out', () => {
    const b = behavior(
      { connects_ip: ['93.184.216.34', '2001:db8::1', '198.51.100.7'], resolves_host: ['www.example.org'] },
      [{ pid: 5, ppid: 1, process_name: 'curl', process_path: '/usr/bin/curl', first_seen: 0, summary: { connects_ip: ['93.184.216.34'] } }]
    )
    nameConnectedHosts(b, dns)
    expect(b.summary.connects_host).toEqual(['www.example.org', 'v6.example.org'])
    expect(b.generic[0]!.summary.connects_host).toEqual(['www.example.org', 'other.example.org'])
  })

  it('keeps the names a monitor log gave (InternetConnect\'s host name), and adds nothing without connections', () => {
    const b = behavior({ connects_host: ['evil.example'], connects_ip: ['93.184.216.34'] })
    nameConnectedHosts(b, dns)
    expect(b.summary.connects_host).toEqual(['evil.example', 'www.example.org', 'other.example.org'])
    const none = behavior({ file_read: ['/etc/hosts'] })
    nameConnectedHosts(none, dns)
    expect(none.summary.connects_host).toBeUndefined()
  })
})
