// @vitest-environment jsdom
// The Connections page against two real services: the local one, and a second one with an API
// token as the remote, reached through the local service's proxy.
import type { ReactElement } from 'react'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { useUi } from '../state/ui'
import { ConnectionsPage } from './Connections'

let local: Harness
let remote: Harness
const TOKEN = 'remote-secret'

beforeAll(async () => {
  ;[local, remote] = await Promise.all([startHarness(), startHarness({ apiToken: TOKEN })])
  await local.post('/tasks/create/url', new URLSearchParams({ url: 'http://local-old.example' }))
  await local.post('/tasks/create/url', new URLSearchParams({ url: 'http://local-new.example' }))
  await remote.post('/tasks/create/url', new URLSearchParams({ url: 'http://remote.example' }), { Authorization: `Bearer ${TOKEN}` })
  // Added times that interleave the two servers: local 1, then remote 1, then local 2.
  local.sql("UPDATE tasks SET added_on = '2026-01-01 10:00:00' WHERE id = 1")
  local.sql("UPDATE tasks SET added_on = '2026-01-01 12:00:00' WHERE id = 2")
  remote.sql("UPDATE tasks SET added_on = '2026-01-01 11:00:00' WHERE id = 1")
  setLocalApiBase(local.url)
  useUi.getState().setConnection(null)
})
afterEach(() => cleanup())
afterAll(async () => Promise.all([local.stop(), remote.stop()]))

function renderPage(ui: ReactElement) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(<QueryClientProvider client={qc}><MemoryRouter>{ui}</MemoryRouter></QueryClientProvider>)
}

describe('Connections', () => {
  it('shows the server\'s 400 under the URL field', async () => {
    const user = userEvent.setup()
    renderPage(<ConnectionsPage />)
    const form = screen.getByRole('form', { name: 'Add a connection' })
    await user.type(within(form).getByLabelText('Name'), 'bad')
    await user.type(within(form).getByLabelText('URL'), 'ftp://example.com')
    await user.click(within(form).getByRole('button', { name: 'Add' }))
    const urlField = form.querySelector('[data-field="url"]') as HTMLElement
    expect((await within(urlField).findByRole('alert')).textContent).toMatch(/^url\b.*\S/i)
    expect(within(urlField).getByLabelText('URL').getAttribute('aria-invalid')).toBe('true')
  })

  it('adds a remote with a token, switches to it, merges its tasks with the local ones, renames and deletes it', async () => {
    const user = userEvent.setup()
    renderPage(<ConnectionsPage />)
    const form = screen.getByRole('form', { name: 'Add a connection' })
    await user.type(within(form).getByLabelText('Name'), 'lab')
    await user.type(within(form).getByLabelText('URL'), remote.url)
    await user.type(within(form).getByLabelText('Token (optional)'), TOKEN)
    await user.click(within(form).getByRole('button', { name: 'Add' }))
    const row = await screen.findByRole('listitem', { name: 'Connection lab' }, { timeout: 10_000 })
    expect(within(row).getByText('analysis')).toBeTruthy()
    expect(within(row).getByText(/token/)).toBeTruthy()
    const id = Number(row.dataset.connection)

    // Combined tasks: both servers, newest first, each row marked with its source.
    const table = await screen.findByRole('table', { name: 'Combined tasks' })
    await waitFor(() => expect(within(table).getAllByRole('row')).toHaveLength(4))
    const body = within(table).getAllByRole('row').slice(1)
    expect(body.map((r) => [r.dataset.source, within(r).getAllByRole('cell')[2]!.textContent])).toEqual([
      ['local', 'http://local-new.example'],
      [String(id), 'http://remote.example'],
      ['local', 'http://local-old.example']
    ])
    expect(within(body[1]!).getByText('lab')).toBeTruthy()
    expect(within(body[0]!).getByText('This computer')).toBeTruthy()
    // Leaving out this computer leaves the remote's task only.
    await user.click(screen.getByRole('checkbox', { name: 'This computer' }))
    await waitFor(() => expect(within(table).getAllByRole('row').slice(1).map((r) => r.dataset.source)).toEqual([String(id)]))

    await user.click(within(row).getByRole('button', { name: 'Use' }))
    expect(useUi.getState().connection).toBe(id)
    expect(within(row).getByText('in use')).toBeTruthy()

    await user.click(within(row).getByRole('button', { name: 'Edit' }))
    const edit = within(row).getByRole('form', { name: 'Edit connection lab' })
    const name = within(edit).getByLabelText('Name')
    await user.clear(name)
    await user.type(name, 'lab two{Enter}')
    const renamed = await screen.findByRole('listitem', { name: 'Connection lab two' }, { timeout: 10_000 })

    await user.click(within(renamed).getByRole('button', { name: 'Delete' }))
    const confirm = within(renamed).getByRole('alertdialog', { name: 'Delete lab two?' })
    await user.click(within(confirm).getByRole('button', { name: 'Delete' }))
    await waitFor(() => expect(screen.queryByRole('listitem', { name: 'Connection lab two' })).toBeNull())
    expect(useUi.getState().connection).toBeNull()
    expect((await local.json<{ connections: unknown[] }>('/aviary/connections')).body.connections).toHaveLength(0)
  })
})
