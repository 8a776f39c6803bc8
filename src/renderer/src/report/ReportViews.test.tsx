// @vitest-environment jsdom
// The report views against a hostile report (wrong types everywhere, bidi names, a 5,000-deep
// process chain): every tab renders, nothing applies a bidi override; and the screenshot gallery's
// keyboard (Left/Right/Escape, focus back to the thumbnail).
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { ReportViews, TABS } from './ReportViews'
import { NetworkView } from './NetworkView'
import { ScreenshotsView } from './ScreenshotsView'
import type { ReportSources } from './model'

afterEach(cleanup)

const sources: ReportSources = {
  screenshot: (n, small) => `/shots/${n}${small ? '?small' : ''}`, memoryDump: (n) => `/mem/${n}`, pcap: () => null,
  droppedFile: () => null, droppedArchive: () => null
}

let chain: Record<string, unknown> = { pid: 5000, process_name: 'leaf.exe' }
for (let i = 4999; i > 0; i--) chain = { pid: i, process_name: `p${i}`, children: [chain] }

const hostile = {
  info: { id: 'x', score: 'ten', machine: 42, started: {}, duration: 'long' },
  target: { category: 7, file: { name: 'invoice\u202Egpj.exe', size: '12', md5: ['a'], yara: 'x' } },
  signatures: [null, 3, 'x', { severity: 'high', description: 'evil\u202Eexe.txt', marks: 'no' }, { severity: 99, marks: [1, { type: 'call', call: 5 }, { type: 'ioc', ioc: { a: 1 } }] }],
  behavior: { processtree: [chain, 'x', { pid: '1', children: 'no' }], processes: {}, summary: { file_written: [1, null, 'C:\\a\u202Etxt.exe'], connects_ip: 'x' } },
  network: { hosts: [1, null, { ip: 2 }], dns: [{ request: 5, answers: 'x' }], http: [{ uri: ['x'], 'user-agent': { a: 1 } }], tcp: 'x', udp: [null, { src: 1, sport: 'x' }], tls: [{}],
    https_ex: [null, 'x', { method: 7, uri: { a: 1 }, status: 'ok', request_headers: 'x', response_headers: [null, ['a'], [1, { b: 2 }]], request: ['x'], resp: 'x', req: { size: 'big' } }],
    http_ex: { a: 1 }, mitm: [3, 'refused\u202Etxt.exe', null] },
  static: { pe_sections: [{ entropy: 'x' }, { entropy: 7.9, name: '.text\u202E' }], pe_imports: [{ dll: 3, imports: 'x' }], pe_versioninfo: [{}, { name: 'a', value: {} }], elf: 'x', pdf: { objects: [1, [2, [3, [4]]]] } },
  strings: 'abc', dropped: [{ name: {}, yara: [null] }], screenshots: [{ path: '../../etc/passwd' }, { path: 7 }, { path: 'shots/0001.jpg' }],
  procmemory: [{ file: null }, { file: '/x/memory/9-1.dmp', pid: 'x', size: 'big' }], memory: []
}

describe('report views', () => {
  it('renders every tab of a hostile report without crashing or applying bidi overrides', async () => {
    const user = userEvent.setup()
    const { container } = render(<ReportViews report={hostile} sources={sources} rawDownload={null} />)
    for (const t of TABS) {
      await user.click(screen.getByRole('tab', { name: t.label }))
      expect(screen.getByRole('tabpanel')).toBeTruthy()
      expect(container.innerHTML).not.toContain('\u202E')
    }
    await user.click(screen.getByRole('tab', { name: 'Summary' }))
    expect(screen.getAllByRole('heading', { level: 3 }).map((x) => x.textContent)).toContain('invoiceRLOgpj.exe')
    expect(screen.getAllByText('RLO').length).toBeGreaterThan(1)
    await user.click(screen.getByRole('tab', { name: 'Behavior' }))
    // The deep chain opens 6 levels; deeper levels wait for a click (no recursion either way).
    expect(screen.getByText('p7')).toBeTruthy()
    expect(screen.queryByText('p8')).toBeNull()
    await user.click(screen.getByRole('button', { name: 'Expand pid 7' }))
    expect(screen.getByText('p8')).toBeTruthy()
    await user.click(screen.getByRole('tab', { name: 'Network' }))
    // A mistyped exchange still opens (nothing to show is said so), and the refused handshake keeps its marker.
    await user.click(within(screen.getByRole('list', { name: 'Decrypted requests' })).getByRole('button'))
    expect(screen.getAllByText('No headers.').length).toBeGreaterThan(0)
    expect(within(screen.getByRole('list', { name: 'Failed TLS handshakes' })).getByText('RLO')).toBeTruthy()
    expect(container.innerHTML).not.toContain('\u202E')
    await user.click(screen.getByRole('tab', { name: 'Raw JSON' }))
    await user.click(screen.getByRole('button', { name: 'Text' }))
    expect(screen.getByRole('alert').textContent).toMatch(/cannot be shown as text/)
    await user.click(screen.getByRole('tab', { name: 'Screenshots' }))
    expect(screen.getAllByRole('button', { name: /^Screenshot/ })).toHaveLength(1)
  })

  it('moves through the tabs with the arrow keys', async () => {
    const user = userEvent.setup()
    render(<ReportViews report={{}} sources={sources} rawDownload={null} />)
    screen.getByRole('tab', { name: 'Summary' }).focus()
    await user.keyboard('{ArrowRight}')
    expect(document.activeElement?.textContent).toBe('Signatures')
    expect(screen.getByRole('tab', { name: 'Signatures' }).getAttribute('aria-selected')).toBe('true')
    await user.keyboard('{End}')
    expect(screen.getByRole('tab', { name: 'Raw JSON' }).getAttribute('aria-selected')).toBe('true')
    cleanup()
    const { container } = render(<ReportViews report={{ target: { file: { name: 'invoice\u202Egpj.exe' } } }} sources={sources} rawDownload={null} tab="raw" />)
    await user.click(screen.getByRole('button', { name: 'Text' }))
    expect(container.querySelector('pre')?.textContent).toContain('invoice\\u202egpj.exe')
    expect(container.innerHTML).not.toContain('\u202E')
  })
})

describe('network view', () => {
  const exchange = (i: number, over: Record<string, unknown> = {}) => ({
    protocol: 'https', method: 'POST', host: 'c2.example', uri: `https://c2.example/beacon/${i}`, status: 404, src: '10.0.0.5', sport: 40000 + i, dst: '198.51.100.7', dport: 443,
    request: `POST /beacon/${i} HTTP/1.1\r\nHost: c2.example`, response: 'HTTP/1.1 404 Not Found\r\nServer: nginx',
    req: { size: 5, md5: 'd41d8cd98f00b204e9800998ecf8427e' }, resp: { size: 9000, truncated: true }, request_body: 'hello', response_body: 'A'.repeat(100),
    ...over
  })

  it('names the route (the report\'s, else the task\'s), and reads Cuckoo-shaped exchanges without Aviary\'s header pairs', async () => {
    const user = userEvent.setup()
    render(<NetworkView report={{ info: {}, network: { https_ex: [exchange(1)] } }} sources={{ ...sources, flows: () => '/flows/1' }} taskRoute="inetsim" />)
    expect(screen.getByRole('rowheader', { name: 'Route' }).nextElementSibling?.textContent).toBe('inetsim — a simulated internet (INetSim)')
    expect(screen.getByRole('link', { name: 'download the flows (mitmproxy)' }).getAttribute('href')).toBe('/flows/1')
    const line = screen.getByRole('button', { name: /POST.*beacon\/1.*404/ })
    await user.click(line)
    // No header pairs: the raw header block, line by line, after the request line.
    const details = document.getElementById(line.getAttribute('aria-controls') as string) as HTMLElement
    expect(within(details).getByText('POST /beacon/1 HTTP/1.1')).toBeTruthy()
    expect(details.querySelector('pre')?.textContent).toBe('Host: c2.example')
    expect(details.textContent).toMatch(/Body: 8\.79 KiB, cut by the proxy, the first 4 KiB shown/)
    expect(details.textContent).toContain('md5 d41d8cd98f00b204e9800998ecf8427e')
    cleanup()
    render(<NetworkView report={{ info: { route: 'internet' }, network: {} }} taskRoute="none" />)
    expect(screen.getByRole('rowheader', { name: 'Route' }).nextElementSibling?.textContent).toBe('internet — the internet, through NAT')
    // No exchanges: no section, no download link.
    expect(screen.queryByRole('region', { name: 'Decrypted HTTP(S)' })).toBeNull()
    cleanup()
    render(<NetworkView report={{ network: {} }} />)
    expect(screen.queryByRole('rowheader', { name: 'Route' })).toBeNull()
  })

  it('lists hundreds of exchanges a page at a time, and keeps a captured request out of the HTTP table when the proxy has it', async () => {
    const user = userEvent.setup()
    const many = Array.from({ length: 450 }, (_, i) => exchange(i))
    const captured = [{ method: 'POST', uri: 'https://c2.example/beacon/0', host: 'c2.example' }, { method: 'GET', uri: 'http://other.example/', host: 'other.example' }]
    render(<NetworkView report={{ network: { https_ex: many, http: captured } }} sources={sources} />)
    const list = screen.getByRole('list', { name: 'Decrypted requests' })
    expect(list.querySelectorAll('li')).toHaveLength(200)
    // (By text: naming 450 buttons by role is slow in jsdom.)
    await user.click(screen.getByText('Show 200 more (250 not shown)'))
    await user.click(screen.getByText('Show 50 more (50 not shown)'))
    expect(list.querySelectorAll('li')).toHaveLength(450)
    expect(screen.queryByText(/^Show \d+ more/)).toBeNull()
    // sources without flows(): no link at all.
    expect(screen.queryByRole('link', { name: /flows/ })).toBeNull()
    const httpTable = screen.getByRole('table', { name: 'HTTP requests' })
    expect(within(httpTable).getAllByRole('row')).toHaveLength(2) // the header and other.example
    expect(screen.getByText('1 more captured request is listed under Decrypted HTTP(S), with its answer.')).toBeTruthy()
  })
})

describe('screenshot gallery', () => {
  it('opens full size, moves with Left/Right, closes with Escape and gives focus back', async () => {
    const user = userEvent.setup()
    const report = { screenshots: ['0001.jpg', '0002.jpg', '0003.jpg'].map((n) => ({ path: `/a/shots/${n}` })) }
    render(<ScreenshotsView report={report} sources={sources} />)
    const thumbs = screen.getAllByRole('button', { name: /^Screenshot/ })
    expect(thumbs[0]?.querySelector('img')?.getAttribute('src')).toBe('/shots/0001.jpg?small')
    await user.click(thumbs[1] as HTMLElement)
    const dialog = screen.getByRole('dialog', { name: 'Screenshot 2 of 3' })
    expect(within(dialog).getByRole('img').getAttribute('src')).toBe('/shots/0002.jpg')
    await user.keyboard('{ArrowRight}')
    expect(screen.getByRole('dialog', { name: 'Screenshot 3 of 3' })).toBeTruthy()
    await user.keyboard('{ArrowRight}')
    expect(screen.getByRole('dialog', { name: 'Screenshot 3 of 3' })).toBeTruthy()
    await user.keyboard('{ArrowLeft}{ArrowLeft}{ArrowLeft}')
    expect(screen.getByRole('dialog', { name: 'Screenshot 1 of 3' })).toBeTruthy()
    await user.keyboard('{Escape}')
    expect(screen.queryByRole('dialog')).toBeNull()
    expect(document.activeElement).toBe(thumbs[0])
  })
})
