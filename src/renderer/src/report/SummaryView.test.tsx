// @vitest-environment jsdom
// An archive task's summary says which member ran, in each shape a report can have: Aviary's
// create/submit member (category archive, filename in info.options), Cuckoo's (target.archive,
// target.filename), and an archive run by an archive package, whose static.archive listing shows
// every member with the one that ran marked.
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, render, screen, within } from '@testing-library/react'
import { SummaryView } from './SummaryView'
import { optionsOf, reportArchiveOrigin } from './archive'
import type { ReportSources } from './model'

afterEach(cleanup)

const sources: ReportSources = { screenshot: () => null, memoryDump: () => null, pcap: () => null, droppedFile: () => null, droppedArchive: () => null }
const ranFrom = () => screen.getByRole('rowheader', { name: 'Ran from archive' }).nextElementSibling?.textContent

describe('an archive task\'s summary', () => {
  it('names the member of an Aviary create/submit archive', () => {
    render(<SummaryView sources={sources} report={{
      info: { id: 4, category: 'archive', options: 'procmemdump=yes,filename=bin/dropper.sh' },
      target: { category: 'archive', file: { name: 'dropper.sh', size: 10 } }
    }} />)
    expect(ranFrom()).toBe('bin/dropper.sh')
  })

  it('names the member and the archive of a Cuckoo archive task', () => {
    render(<SummaryView sources={sources} report={{
      info: { id: 5, category: 'archive', options: { filename: 'files/pdf0.pdf', procmemdump: 'yes' } },
      target: { category: 'archive', archive: { name: 'pdf0.zip' }, filename: 'files/pdf0.pdf', human: 'files/pdf0.pdf @ pdf0.zip' }
    }} />)
    expect(ranFrom()).toBe('files/pdf0.pdf from pdf0.zip')
    expect(screen.getByRole('heading', { level: 3, name: 'files/pdf0.pdf @ pdf0.zip' }).textContent).toBe('files/pdf0.pdf @ pdf0.zip')
  })

  it('lists the members of an archive run by the zip package, the one that ran marked', () => {
    const listing = { type: 'zip', count: 3, truncated: false, entries: [
      { name: 'docs/', size: 0, directory: true }, { name: 'docs/readme.txt', size: 12 }, { name: 'run\u202Egpj.exe', size: 4096 }
    ] }
    render(<SummaryView sources={sources} report={{
      info: { package: 'zip', options: 'file=run\u202Egpj.exe' }, target: { category: 'file', file: { name: 'bundle.zip' } }, static: { archive: listing }
    }} />)
    expect(ranFrom()).toBe('runRLOgpj.exe from bundle.zip')
    const members = screen.getByRole('table', { name: 'archive members' })
    const ran = members.querySelector('[data-ran]')?.closest('tr')
    expect(ran?.textContent).toContain('runRLOgpj.exe')
    expect(within(members).getAllByRole('row')).toHaveLength(4)
    expect(document.body.innerHTML).not.toContain('\u202E')
    cleanup()
    // No member named: the first file runs, and the summary says so.
    render(<SummaryView sources={sources} report={{ info: { package: 'zip' }, target: { file: { name: 'bundle.zip' } }, static: { archive: listing } }} />)
    expect(ranFrom()).toBe('docs/readme.txt from bundle.zip (the first file: the task named none)')
  })

  it('says nothing about archives for other tasks, and reads options defensively', () => {
    render(<SummaryView sources={sources} report={{ info: { category: 'file', options: 'filename=x' }, target: { file: { name: 'a.exe' } } }} />)
    expect(screen.queryByRole('rowheader', { name: 'Ran from archive' })).toBeNull()
    expect(reportArchiveOrigin({ static: { archive: { entries: [{ name: 'a' }] } } })).toBeNull()
    expect([...optionsOf('a=1, b = 2 ,c,=d,e=f=g')]).toEqual([['a', '1'], ['b', '2'], ['e', 'f=g']])
    expect([...optionsOf({ a: 1, b: { x: 1 }, c: 'z' })]).toEqual([['a', '1'], ['c', 'z']])
    expect(optionsOf(['a=b']).size).toBe(0)
  })
})
