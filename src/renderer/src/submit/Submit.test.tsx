// @vitest-environment jsdom
// The Submit page against a real service: files picked and folders dropped are uploaded with
// the chosen options (checked on the created tasks), each shows its progress, task and hashes;
// pasted URLs and hashes become tasks; the server's refusals are shown; names keep their
// invisible characters visible. On a host with routes, the route and HTTPS decryption chosen go
// into the task's options; a host that routes nothing, or a remote Cuckoo, shows no such field.
import { createHash } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { act, cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { SubmitPage } from '../pages/Submit'
import { useUi } from '../state/ui'
import { keys } from '../api/live'
import { useQueue } from './queue'


let h: Harness
const machines = {
  driver: 'kvm',
  resultserver: { ip: '192.168.122.1', port: 2042 },
  machines: [{ name: 'win10', ip: '192.168.122.101', snapshot: 'clean', platform: 'windows' }]
}

beforeAll(async () => {
  // jsdom's XMLHttpRequest sends its page origin and enforces CORS, as a browser page would.
  h = await startHarness({ machines, allowedOrigins: [window.location.origin] })
  setLocalApiBase(h.url)
})
afterAll(async () => {
  cleanup()
  await h.stop()
})
beforeEach(() => {
  cleanup()
  useQueue.setState({ items: [] })
})

function renderPage() {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return { qc, ...render(<QueryClientProvider client={qc}><MemoryRouter><SubmitPage /></MemoryRouter></QueryClientProvider>) }
}

const hex = (algo: string, data: string) => createHash(algo).update(data).digest('hex')
const list = () => screen.getByRole('list', { name: 'Submissions' })
const itemNamed = (text: string) => within(list()).getAllByRole('listitem').find((li) => li.querySelector('[data-testid="item-name"]')?.textContent === text) as HTMLElement

describe('Submit page', () => {
  it('uploads picked files with the chosen options and shows progress, task link and hashes', async () => {
    const user = userEvent.setup()
    renderPage()
    const one = 'MZ first sample ' + 'x'.repeat(200_000)
    const two = 'MZ second sample'
    await user.upload(screen.getByTestId('file-input'), [new File([one], 'one.exe'), new File([two], 'invoice\u202Egpj.exe')])
    expect(within(list()).getAllByRole('listitem')).toHaveLength(2)
    // The bidi override is shown as a marker, never applied.
    expect(itemNamed('invoiceRLOgpj.exe').querySelector('[data-control="RLO"]')).not.toBeNull()

    await user.type(screen.getByLabelText(/^Package\(auto/), 'exe')
    await user.selectOptions(screen.getByLabelText('Priority'), '2')
    await waitFor(() => expect(screen.getByRole('option', { name: 'win10 (windows)' })).toBeTruthy())
    await user.selectOptions(screen.getByLabelText('Machine'), 'win10')
    await user.type(screen.getByLabelText(/^Tags/), 'x64,office')
    await user.click(screen.getByLabelText('Full memory dump'))
    await user.click(screen.getByRole('button', { name: 'Submit 2 files' }))

    await waitFor(() => expect(within(list()).getAllByRole('listitem').every((li) => li.dataset.state === 'done')).toBe(true), { timeout: 10_000 })
    const first = itemNamed('one.exe')
    expect(first.querySelector('[data-hash="md5"]')?.textContent).toBe(hex('md5', one))
    expect(first.querySelector('[data-hash="sha256"]')?.textContent).toBe(hex('sha256', one))
    expect(first.querySelector('[role="progressbar"]')?.getAttribute('aria-valuenow')).toBe('100')
    const link = within(first).getByRole('link', { name: /^task \d+$/ })
    const id = Number(link.textContent?.replace('task ', ''))
    expect(link.getAttribute('href')).toBe(`/tasks/${id}`)

    const { body } = await h.json<{ task: { package: string; priority: number; machine: string; tags: string[]; memory: boolean; target: string } }>(`/tasks/view/${id}`)
    expect(body.task).toMatchObject({ package: 'exe', priority: 2, machine: 'win10', tags: ['x64', 'office'], memory: true })
    // The name is kept as submitted, bidi control included.
    const second = Number(within(itemNamed('invoiceRLOgpj.exe')).getByRole('link').textContent?.replace('task ', ''))
    expect((await h.json<{ task: { target: string } }>(`/tasks/view/${second}`)).body.task.target).toContain('invoice\u202Egpj.exe')
  })

  it('walks a dropped folder and uploads every file in it', async () => {
    renderPage()
    // jsdom has no drag and drop: a drop event carrying the entries API's objects, as Chromium gives them.
    const file = (name: string, data: string, dir: string) => ({
      isFile: true, isDirectory: false, name, fullPath: `/${dir}/${name}`, file: (ok: (f: File) => void) => ok(new File([data], name))
    })
    const folder = {
      isFile: false, isDirectory: true, name: 'batch', fullPath: '/batch',
      createReader: () => {
        let served = false
        return { readEntries: (ok: (e: unknown[]) => void) => {
          const batch = served ? [] : [file('a.dll', 'dll-a', 'batch'), file('b.js', 'js-b', 'batch')]
          served = true
          ok(batch)
        } }
      }
    }
    const drop = new Event('drop', { bubbles: true, cancelable: true })
    Object.defineProperty(drop, 'dataTransfer', {
      value: { types: ['Files'], files: [], items: [{ kind: 'file', webkitGetAsEntry: () => folder, getAsFile: () => null }] }
    })
    act(() => { window.dispatchEvent(drop) })
    expect(drop.defaultPrevented).toBe(true)
    await waitFor(() => expect(screen.getByRole('button', { name: 'Submit 2 files' })).toBeTruthy())
    expect(itemNamed('batch/a.dll')).toBeTruthy()
    await userEvent.setup().click(screen.getByRole('button', { name: 'Submit 2 files' }))
    await waitFor(() => expect(itemNamed('batch/b.js').dataset.state).toBe('done'), { timeout: 10_000 })
    expect(itemNamed('batch/b.js').querySelector('[data-hash="sha256"]')?.textContent).toBe(hex('sha256', 'js-b'))
  })

  it('sends pasted URLs and hashes as tasks, and shows what the server refuses', async () => {
    const known = 'known sample for hash submission'
    // Multipart by hand: this environment's FormData and Blob are jsdom's, which Node's fetch cannot send.
    const boundary = 'aviary-test-boundary'
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="known.bin"\r\n\r\n${known}\r\n--${boundary}--\r\n`
    expect((await h.post('/tasks/create/file', body, { 'content-type': `multipart/form-data; boundary=${boundary}` })).status).toBe(200)
    const user = userEvent.setup()
    renderPage()
    const box = screen.getByLabelText(/^URLs and hashes/)
    await user.click(box)
    await user.paste(`https://example.com/a\n${hex('sha256', known)}\n${'0'.repeat(64)}\n`)
    await user.click(screen.getByRole('button', { name: 'Submit 1 URL, 2 hashes' }))
    await waitFor(() => expect(within(list()).getAllByRole('listitem').every((li) => li.dataset.state === 'done' || li.dataset.state === 'error')).toBe(true), { timeout: 10_000 })
    const url = itemNamed('https://example.com/a')
    expect(url.dataset.state).toBe('done')
    const urlTask = Number(within(url).getByRole('link').textContent?.replace('task ', ''))
    expect((await h.json<{ task: { target: string; category: string } }>(`/tasks/view/${urlTask}`)).body.task).toMatchObject({ category: 'url', target: 'https://example.com/a' })
    const byHash = itemNamed(hex('sha256', known))
    expect(byHash.dataset.state).toBe('done')
    expect(byHash.querySelector('[data-hash="md5"]')?.textContent).toBe(hex('md5', known))
    const unknown = itemNamed('0'.repeat(64))
    expect(unknown.dataset.state).toBe('error')
    expect(within(unknown).getByRole('alert').textContent).not.toBe('')
  })

  it('offers no network route on a host that routes nothing', async () => {
    const { qc } = renderPage()
    await waitFor(() => expect(screen.getByRole('option', { name: 'win10 (windows)' })).toBeTruthy())
    // The server answered {routed: false}: no field, and nothing to complain about.
    await waitFor(() => expect(qc.getQueryState(keys.routes(null))?.status).toBe('success'))
    expect(qc.getQueryData(keys.routes(null))).toBeNull()
    expect(screen.queryByLabelText('Network route')).toBeNull()
    expect(screen.queryByLabelText('Decrypt HTTPS (mitm)')).toBeNull()
    expect(screen.queryByRole('alert')).toBeNull()
  })

  it('shows the server\'s message when an option is refused', async () => {
    const user = userEvent.setup()
    renderPage()
    await user.upload(screen.getByTestId('file-input'), [new File(['abc'], 'c.exe')])
    await user.type(screen.getByLabelText(/^Package\(auto/), 'bad package!')
    await user.click(screen.getByRole('button', { name: 'Submit 1 file' }))
    await waitFor(() => expect(itemNamed('c.exe').dataset.state).toBe('error'))
    expect(within(itemNamed('c.exe')).getByRole('alert').textContent).toMatch(/package/)
  })
})

describe('Submit page on a host with routes', () => {
  let routed: Harness
  let cuckoo: http.Server
  const asked: string[] = []

  beforeAll(async () => {
    routed = await startHarness({
      machines: { ...machines, routing: { default: 'none', internet: { interface: 'eth0' }, mitm: { default: true } } },
      allowedOrigins: [window.location.origin]
    })
    setLocalApiBase(routed.url)
    // A plain Cuckoo as a remote: its status and machines, and a 404 for every Aviary route.
    cuckoo = http.createServer((req, res) => {
      asked.push(req.url ?? '')
      const json = (status: number, body: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)) }
      if (req.url === '/cuckoo/status') return json(200, { hostname: 'cuckoo', version: '2.0.7', tasks: { total: 0 } })
      if (req.url === '/machines/list') return json(200, { machines: [{ name: 'cuckoo1', platform: 'windows', label: 'cuckoo1', ip: '192.168.56.101', status: null, locked: false, tags: [] }] })
      json(404, { message: 'Resource not found' })
    })
    await new Promise<void>((r) => cuckoo.listen(0, '127.0.0.1', r))
  })
  afterAll(async () => {
    useUi.getState().setConnection(null)
    cuckoo.closeAllConnections()
    await new Promise((r) => cuckoo.close(r))
    await routed.stop()
  })

  const taskOptions = async (item: HTMLElement) => {
    const id = Number(within(item).getByRole('link', { name: /^task \d+$/ }).textContent?.replace('task ', ''))
    return (await routed.json<{ task: { options: string | null } }>(`/tasks/view/${id}`)).body.task.options
  }

  it('offers the host\'s routes with their descriptions, defaults to its default, and sends the choice in the options', async () => {
    const user = userEvent.setup()
    renderPage()
    const route = (await screen.findByLabelText('Network route', {}, { timeout: 10_000 })) as HTMLSelectElement
    expect(route.value).toBe('none')
    expect([...route.options].map((o) => o.textContent)).toEqual([
      'none (default) — no network: only the result server and the agent',
      'drop — the same as none (Cuckoo\'s name)',
      'internet — the internet through eth0, with NAT, outside addresses only'
    ])
    // Nothing leaves the guest on `none`: nothing to decrypt, and the reason is on the checkbox.
    const mitm = screen.getByLabelText('Decrypt HTTPS (mitm)') as HTMLInputElement
    expect(mitm.disabled).toBe(true)
    expect(mitm.checked).toBe(false)
    expect(mitm.getAttribute('title')).toMatch(/^Nothing to decrypt: the route 'none'/)
    await user.selectOptions(route, 'internet')
    expect(mitm.disabled).toBe(false)
    expect(mitm.checked).toBe(true) // the host's mitm.default
    expect(mitm.getAttribute('title')).toBeNull()

    // Typed route= and mitm= lose to the fields; the other options are kept.
    await user.type(screen.getByLabelText(/^Package options/), 'foo=bar,route=none,mitm=0')
    expect(screen.getByText('route= and mitm= here are replaced by the network fields')).toBeTruthy()
    await user.upload(screen.getByTestId('file-input'), [new File(['MZ routed sample'], 'routed.exe')])
    await user.click(screen.getByRole('button', { name: 'Submit 1 file' }))
    await waitFor(() => expect(itemNamed('routed.exe').dataset.state).toBe('done'), { timeout: 10_000 })
    expect(await taskOptions(itemNamed('routed.exe'))).toBe('foo=bar,route=internet,mitm=1')

    // Unticked: mitm=0 is sent, so the host's default (on) does not apply.
    await user.click(mitm)
    await user.clear(screen.getByLabelText(/^Package options/))
    await user.click(screen.getByLabelText(/^URLs and hashes/))
    await user.paste('https://example.com/plain')
    await user.click(screen.getByRole('button', { name: 'Submit 1 URL' }))
    await waitFor(() => expect(itemNamed('https://example.com/plain').dataset.state).toBe('done'), { timeout: 10_000 })
    expect(await taskOptions(itemNamed('https://example.com/plain'))).toBe('route=internet,mitm=0')
  })

  it('shows no route field for a remote Cuckoo, asks it for no /aviary/routes or /events (no 404s), and no error either', async () => {
    const res = await fetch(`${routed.url}/aviary/connections`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'old cuckoo', url: `http://127.0.0.1:${(cuckoo.address() as AddressInfo).port}` })
    })
    expect(res.status).toBe(200)
    const { connection } = (await res.json()) as { connection: { id: number; kind: string } }
    expect(connection.kind).toBe('analysis')
    useUi.getState().setConnection(connection.id)
    const { qc } = renderPage()
    await waitFor(() => expect(screen.getByRole('option', { name: 'cuckoo1 (windows)' })).toBeTruthy(), { timeout: 10_000 })
    // Its /cuckoo/status names no aviary process: it is not asked for Aviary's routes or events.
    await waitFor(() => expect(qc.getQueryState([...keys.all(connection.id), 'is-aviary'])?.data).toBe(false), { timeout: 10_000 })
    expect(asked).toContain('/cuckoo/status')
    expect(asked).not.toContain('/aviary/routes')
    expect(asked).not.toContain('/events')
    expect(screen.queryByLabelText('Network route')).toBeNull()
    expect(screen.queryByLabelText('Decrypt HTTPS (mitm)')).toBeNull()
    expect(screen.queryByRole('alert')).toBeNull()
    // The local host's routes were not shown for it either.
    expect(screen.queryByRole('option', { name: /^internet/ })).toBeNull()
  })
})
