// @vitest-environment jsdom
// The Network tab as the review asked: the capture's download at hand, the captured HTTP requests
// with their headers and bodies (Aviary's and Cuckoo's `network.http[]` keep the request head in
// `data` and its body in `body`), and contacted addresses never reported as "No hosts" beside the
// flows that reached them.
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { NetworkView } from './NetworkView'
import type { ReportSources } from './model'

afterEach(cleanup)

const sources: ReportSources = {
  screenshot: () => null, memoryDump: () => null, pcap: () => '/pcap/get/7', droppedFile: () => null, droppedArchive: () => null
}

describe('the Network tab', () => {
  it('offers the capture for download', () => {
    render(<NetworkView report={{ network: {} }} sources={sources} />)
    expect(screen.getByRole('link', { name: 'download dump.pcap' }).getAttribute('href')).toBe('/pcap/get/7')
    cleanup()
    render(<NetworkView report={{ network: {} }} sources={{ ...sources, pcap: () => null }} />)
    expect(screen.getByText('no packet capture from this source')).toBeTruthy()
  })

  it('opens a captured request to its headers and body, hostile text shown, not applied', async () => {
    const user = userEvent.setup()
    const http = [{
      count: 1, host: 'evil.example', port: 8080, method: 'POST', uri: 'http://evil.example:8080/up', path: '/up', version: '1.1', 'user-agent': 'curl/8.5', status: 200,
      data: 'POST /up HTTP/1.1\r\nHost: evil.example:8080\r\nUser-Agent: curl/8.5\r\nX-Name: invoice\u202Egpj.exe\r\nContent-Length: 9',
      body: 'user=root'
    }]
    const { container } = render(<NetworkView report={{ network: { http } }} sources={sources} />)
    const table = screen.getByRole('table', { name: 'HTTP requests' })
    // Its name holds what it shows (label in name: axe's label-content-name-mismatch).
    const open = within(table).getByRole('button', { name: 'show headers and body of POST http://evil.example:8080/up' })
    expect(open.getAttribute('aria-expanded')).toBe('false')
    await user.click(open)
    expect(open.getAttribute('aria-expanded')).toBe('true')
    expect(open.textContent).toBe('hide headers and body of POST http://evil.example:8080/up')
    const details = screen.getByRole('region', { name: 'Captured request 1' })
    expect(within(details).getByText('POST /up HTTP/1.1')).toBeTruthy()
    expect(details.querySelector('pre')?.textContent).toBe('Host: evil.example:8080\nUser-Agent: curl/8.5\nX-Name: invoiceRLOgpj.exe\nContent-Length: 9')
    expect(within(details).getByRole('region', { name: 'Request body, request 1' }).textContent).toBe('user=root')
    expect(details.textContent).toContain('Answered 200')
    expect(container.innerHTML).not.toContain('\u202E')
    await user.click(open)
    expect(screen.queryByRole('region', { name: 'Captured request 1' })).toBeNull()
  })

  it('lists the addresses the flows reached, even when none is a public host', () => {
    const tcp = [{ src: '10.88.0.2', sport: 40000, dst: '10.88.0.1', dport: 80, bytes_sent: 10, bytes_received: 20 }]
    render(<NetworkView report={{ network: { hosts: [], tcp, udp: [{ src: '10.88.0.2', sport: 5353, dst: '224.0.0.251', dport: 5353 }] } }} sources={sources} />)
    const hosts = screen.getByRole('region', { name: 'Hosts' })
    expect(hosts.textContent).not.toMatch(/No hosts/)
    expect(hosts.textContent).toContain('10.88.0.1')
    expect(hosts.textContent).toContain('224.0.0.251')
    expect(hosts.textContent).toMatch(/private or local/)
    cleanup()
    render(<NetworkView report={{ network: { hosts: ['203.0.113.5'], tcp: [{ dst: '203.0.113.5', dport: 443 }] } }} sources={sources} />)
    expect(screen.getByRole('region', { name: 'Hosts' }).textContent).toBe('Hosts(1)203.0.113.5')
    cleanup()
    render(<NetworkView report={{ network: {} }} sources={sources} />)
    expect(screen.getByRole('region', { name: 'Hosts' }).textContent).toContain('No host was contacted.')
  })
})
