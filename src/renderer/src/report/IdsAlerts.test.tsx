// @vitest-environment jsdom
// The Network tab's IDS part: the alerts with their severity, rule and connection (the decrypted
// ones marked), JA3 fingerprints, the noise left out, and the reason when Suricata did not run.
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, render, screen, within } from '@testing-library/react'
import { NetworkView } from './NetworkView'

afterEach(cleanup)

const alert = (sid: number, signature: string, severity: number, source = 'capture') => ({
  sid, signature, category: 'A Network Trojan was detected', severity, src_ip: '10.0.0.2', src_port: 40000, dst_ip: '203.0.113.9', dst_port: 6667,
  protocol: 'TCP', timestamp: '2026-11-28T09:15:56.302741+0000', gid: 1, rev: 1, app_proto: null, pcap_cnt: 55, source
})

describe('the IDS alerts on the Network tab', () => {
  it('lists the alerts, marks the decrypted ones, shows JA3 and the noise left out', () => {
    const suricata = {
      alerts: [alert(1100004, 'AVIARY IRC client registration (NICK and USER)', 1), alert(1100001, 'AVIARY HTTP download\u202Eexe.txt', 2, 'decrypted')],
      http: [], dns: [], files: [], skipped: null, version: '7.0.10', rulesets: [{ name: 'bundled', rules: 380 }, { name: 'aviary', rules: 6 }],
      rules_loaded: 386, rules_failed: 0, suppressed: { 2200074: 24 }, dropped_events: 0,
      tls: [{ src_ip: '10.0.0.2', src_port: 1, dst_ip: '203.0.113.9', dst_port: 443, timestamp: 't', fingerprint: null, issuer: null, version: 'TLS 1.2', subject: null,
        sni: 'c2.example', ja3: { hash: '0123456789abcdef0123456789abcdef', string: '771,...' }, ja3s: null, source: 'capture' }]
    }
    const { container } = render(<NetworkView report={{ network: {}, suricata }} />)
    const region = screen.getByRole('region', { name: 'IDS alerts' })
    expect(region.textContent).toContain('Suricata 7.0.10 with the rule sets bundled (380), aviary (6); 24 noise alerts (checksum, stream) left out.')
    const table = within(region).getByRole('table', { name: 'IDS alerts' })
    const rows = within(table).getAllByRole('row').slice(1).map((r) => r.textContent)
    expect(rows[0]).toContain('high')
    expect(rows[0]).toContain('1100004')
    expect(rows[0]).toContain('203.0.113.9:6667')
    expect(rows[1]).toContain('decrypted')
    expect(container.innerHTML).not.toContain('\u202E')
    expect(within(region).getByRole('table', { name: 'TLS fingerprints (JA3)' }).textContent).toContain('0123456789abcdef0123456789abcdef')
  })

  it('says why Suricata did not run, and nothing at all for a report without the section', () => {
    render(<NetworkView report={{ network: {}, suricata: { alerts: [], skipped: 'the task has no packet capture' } }} />)
    expect(screen.getByRole('region', { name: 'IDS alerts' }).textContent).toContain('Suricata did not run: the task has no packet capture')
    cleanup()
    render(<NetworkView report={{ network: {} }} />)
    expect(screen.queryByRole('region', { name: 'IDS alerts' })).toBeNull()
  })
})
