// @vitest-environment jsdom
// ATT&CK techniques with the signatures, in both shapes of `ttp`: Cuckoo 2.0.7's {id: {short,
// long}} and older Aviary reports' {id: name}; each id links to its attack.mitre.org page (sub-
// techniques as /T1547/001/), and a link is never built from anything but a well-formed id.
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, render, screen, within } from '@testing-library/react'
import { SignaturesView } from './SignaturesView'
import { SummaryView } from './SummaryView'
import { techniqueUrl } from './attack'
import type { ReportSources } from './model'

afterEach(cleanup)

const sources: ReportSources = { screenshot: () => null, memoryDump: () => null, pcap: () => null, droppedFile: () => null, droppedArchive: () => null }

const report = {
  signatures: [
    { name: 'downloads_file', description: 'Downloads a file', severity: 2, marks: [],
      ttp: { T1105: { short: 'Ingress Tool Transfer', long: 'Adversaries bring tools onto the system.' } } },
    { name: 'persistence_autorun', description: 'Installs itself for autorun', severity: 3, marks: [],
      ttp: { 'T1547.001': 'Registry Run Keys / Startup Folder', T1105: 'Ingress Tool Transfer' } },
    { name: 'hostile', description: 'A server\'s odd ttp', severity: 1, marks: [],
      ttp: { 'javascript:alert(1)': { short: 'evil\u202Etxt.exe' }, T9: 5 } }
  ]
}

describe('signatures with their ATT&CK techniques', () => {
  it('shows both ttp shapes as linked ids with their names', () => {
    render(<SignaturesView report={report} />)
    const cuckoo = screen.getByRole('list', { name: 'ATT&CK techniques of downloads_file' })
    const link = within(cuckoo).getByRole('link', { name: 'T1105' })
    expect(link.getAttribute('href')).toBe('https://attack.mitre.org/techniques/T1105/')
    expect(link.getAttribute('rel')).toBe('noopener noreferrer')
    expect(cuckoo.textContent).toBe('T1105Ingress Tool Transfer')
    expect(within(cuckoo).getByText('Ingress Tool Transfer').closest('[title]')?.getAttribute('title')).toBe('Adversaries bring tools onto the system.')

    const older = screen.getByRole('list', { name: 'ATT&CK techniques of persistence_autorun' })
    expect(within(older).getByRole('link', { name: 'T1547.001' }).getAttribute('href')).toBe('https://attack.mitre.org/techniques/T1547/001/')
    expect(within(older).getByText('Registry Run Keys / Startup Folder')).toBeTruthy()
  })

  it('never links a malformed id and shows its text with markers', () => {
    render(<SignaturesView report={report} />)
    const odd = screen.getByRole('list', { name: 'ATT&CK techniques of hostile' })
    expect(within(odd).queryAllByRole('link')).toHaveLength(0)
    expect(odd.textContent).toContain('javascript:alert(1)')
    expect(odd.querySelector('[data-control="RLO"]')).not.toBeNull()
    expect(document.body.innerHTML).not.toContain('\u202E')
    expect(techniqueUrl('T1059.004')).toBe('https://attack.mitre.org/techniques/T1059/004/')
    expect(techniqueUrl('T1059.4')).toBeNull()
    expect(techniqueUrl('t1059')).toBeNull()
  })

  it('lists every technique once on the summary', () => {
    render(<SummaryView report={report} sources={sources} />)
    const all = screen.getByRole('list', { name: 'ATT&CK techniques' })
    expect(within(all).getAllByRole('listitem').map((li) => li.querySelector('[data-technique]')?.getAttribute('data-technique')))
      .toEqual(['T1105', 'T1547.001', 'T9', 'javascript:alert(1)'])
  })
})
