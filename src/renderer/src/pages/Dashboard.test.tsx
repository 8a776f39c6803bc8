// @vitest-environment jsdom
// The Dashboard against a real service: counts by state, machines, disk and CPU as figures, and
// the /cuckoo/status fallback a plain Cuckoo server gets.
import type { ReactElement } from 'react'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { render, screen, waitFor, within, cleanup } from '@testing-library/react'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { DashboardPage } from './Dashboard'
import { DashboardView } from '../dashboard/DashboardView'
import { fromCuckooStatus, type CuckooStatus } from '../dashboard/data'

let h: Harness
const machines = {
  driver: 'kvm',
  resultserver: { ip: '192.168.122.1', port: 2042 },
  machines: [
    { name: 'win10', ip: '192.168.122.101', snapshot: 'clean' },
    { name: 'win7', ip: '192.168.122.102', snapshot: 'clean' }
  ]
}

beforeAll(async () => {
  h = await startHarness({ machines })
  for (const url of ['http://a.example', 'http://b.example', 'http://c.example']) {
    await h.post('/tasks/create/url', new URLSearchParams({ url }))
  }
  h.sql("UPDATE tasks SET status = 'reported', completed_on = added_on WHERE id = 1")
  h.sql('UPDATE machines SET locked = 1 WHERE name = ?', 'win7')
  setLocalApiBase(h.url)
})
afterAll(async () => {
  cleanup()
  await h.stop()
})

function renderPage(ui: ReactElement) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(<QueryClientProvider client={qc}><MemoryRouter>{ui}</MemoryRouter></QueryClientProvider>)
}

const countOf = (list: HTMLElement, state: string) => list.querySelector(`[data-state="${state}"]`)?.lastElementChild?.textContent

describe('Dashboard', () => {
  it('shows the counts by state, the machines and the host load of the local service', async () => {
    renderPage(<DashboardPage />)
    const list = await screen.findByRole('list', { name: 'Tasks by state' })
    expect(countOf(list, 'pending')).toBe('2')
    expect(countOf(list, 'reported')).toBe('1')
    expect(screen.getByTestId('tasks-total').textContent).toBe('3')
    expect(screen.getByRole('img', { name: /^3 tasks: pending 2, running 0/ })).toBeTruthy()
    // One of two machines is locked by a task.
    expect(screen.getByRole('img', { name: 'Machines available: 1 / 2' })).toBeTruthy()
    expect(screen.getByRole('img', { name: /^Disk: \d+%$/ })).toBeTruthy()
    expect(screen.getByRole('img', { name: /^CPU load: \d+\.\d\d$/ })).toBeTruthy()
    cleanup()
  })

  it('draws tasks per day from /aviary/stats', async () => {
    renderPage(<DashboardPage />)
    expect(await screen.findByRole('img', { name: /days: 3 tasks added, 1 finished/ })).toBeTruthy()
    cleanup()
  })

  it('falls back to what /cuckoo/status has, and says what it lacks', async () => {
    const { body } = await h.json<CuckooStatus>('/cuckoo/status')
    renderPage(<DashboardView data={fromCuckooStatus(body)} />)
    const list = screen.getByRole('list', { name: 'Tasks by state' })
    const shown = within(list).getAllByRole('listitem').map((li) => li.dataset.state)
    expect(shown.sort()).toEqual(['completed', 'pending', 'reported', 'running'])
    expect(countOf(list, 'pending')).toBe('2')
    expect(screen.getByTestId('tasks-total').textContent).toBe('3')
    // A failed task is in Cuckoo's total only: it shows as "other".
    const failed = fromCuckooStatus({ ...body, tasks: { ...body.tasks, total: (body.tasks?.total ?? 0) + 2 } })
    expect(failed.states.find((s) => s.status === 'other')?.count).toBe(2)
    expect(screen.getByText(/does not keep a history of tasks per day/)).toBeTruthy()
    expect(screen.getByRole('img', { name: 'Machines available: 1 / 2' })).toBeTruthy()
    await waitFor(() => expect(screen.getByRole('img', { name: /^Memory: \d+%$/ })).toBeTruthy())
    cleanup()
  })
})
