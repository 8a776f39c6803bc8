// @vitest-environment jsdom
// The Machines page against a real service (engine off, so machine controls are refused and no
// screen can be taken: the page must say so with the server's message).
import type { ReactElement } from 'react'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { useUi } from '../state/ui'
import { MachinesPage } from './Machines'

let h: Harness
const machines = {
  driver: 'kvm',
  resultserver: { ip: '192.168.122.1', port: 2042 },
  machines: [
    { name: 'win10', label: 'win10-vm', ip: '192.168.122.101', tags: ['x64', 'office'], snapshot: 'clean' },
    { name: 'ubuntu', label: 'ubuntu-vm', ip: '192.168.122.102', platform: 'linux', snapshot: 'base' }
  ]
}

beforeAll(async () => {
  h = await startHarness({ machines })
  h.sql('UPDATE machines SET locked = 1 WHERE name = ?', 'ubuntu')
  setLocalApiBase(h.url)
  useUi.getState().setConnection(null)
})
afterEach(() => cleanup())
afterAll(async () => h.stop())

function renderPage(ui: ReactElement) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(<QueryClientProvider client={qc}><MemoryRouter>{ui}</MemoryRouter></QueryClientProvider>)
}

const row = (name: string) => document.querySelector(`tr[data-machine="${name}"]`) as HTMLElement

describe('Machines', () => {
  it('lists the fleet with status, lock, platform, tags, snapshot, ip and label', async () => {
    renderPage(<MachinesPage />)
    await screen.findByRole('button', { name: 'win10' })
    const win = within(row('win10'))
    for (const text of ['windows', 'x64', 'office', 'clean', '192.168.122.101', 'win10-vm', 'free']) expect(win.getByText(text)).toBeTruthy()
    const ubu = within(row('ubuntu'))
    for (const text of ['linux', 'base', 'ubuntu-vm']) expect(ubu.getByText(text)).toBeTruthy()
    expect(ubu.getByText(/locked/)).toBeTruthy()
    expect(screen.getByText('1 of 2 free')).toBeTruthy()
  })

  it('says an idle machine is idle, whatever its hypervisor state, and a locked one is in use', async () => {
    h.sql("UPDATE machines SET status = 'running' WHERE name = ?", 'win10')
    h.sql("UPDATE machines SET status = 'running' WHERE name = ?", 'ubuntu')
    try {
      renderPage(<MachinesPage />)
      await screen.findByRole('button', { name: 'win10' })
      const idle = row('win10').querySelector('[data-machine-state]') as HTMLElement
      expect(idle.dataset.machineState).toBe('idle')
      expect(idle.textContent).toBe('idle · on')
      expect(idle.textContent).not.toMatch(/running/)
      expect(idle.title).toMatch(/; the hypervisor says running$/) // its driver declares power: a hypervisor's word
      expect((row('ubuntu').querySelector('[data-machine-state]') as HTMLElement).dataset.machineState).toBe('in use')
    } finally {
      h.sql('UPDATE machines SET status = NULL')
    }
  })

  it('says why nothing can be driven while the engine is off, and asks for no screen it cannot have', async () => {
    const user = userEvent.setup()
    const asked: string[] = []
    const real = globalThis.fetch
    globalThis.fetch = (input, init) => { asked.push(String(input)); return real(input, init) }
    try {
      renderPage(<MachinesPage />)
      await user.click(await screen.findByRole('button', { name: 'win10' }))
      const panel = screen.getByRole('region', { name: 'Machine win10' })
      for (const name of ['Start', 'Stop', 'Revert']) {
        const button = within(panel).getByRole('button', { name }) as HTMLButtonElement
        expect(button.disabled).toBe(true)
        expect(button.title).toMatch(/engine is not running/)
      }
      expect(within(panel).getByTestId('no-screen').textContent).toMatch(/^No live screen: the analysis engine is not running/)
      await new Promise((r) => setTimeout(r, 300))
      expect(asked.filter((u) => u.includes('/screenshot'))).toEqual([])
      expect(within(panel).queryByTestId('screenshot-unavailable')).toBeNull()
    } finally {
      globalThis.fetch = real
    }
  })

  it('offers no power, revert or screen for a physical machine, and says why', async () => {
    const user = userEvent.setup()
    const live = await startHarness({ engine: true, machines: { driver: 'physical', resultserver: { ip: '127.0.0.1', port: 0 },
      machines: [{ name: 'box', ip: '127.0.0.9', platform: 'linux' }] } })
    live.sql("UPDATE machines SET status = 'poweroff' WHERE name = 'box'")
    setLocalApiBase(live.url)
    const asked: string[] = []
    const real = globalThis.fetch
    globalThis.fetch = (input, init) => { asked.push(String(input)); return real(input, init) }
    try {
      renderPage(<MachinesPage />)
      await user.click(await screen.findByRole('button', { name: 'box' }))
      // Its driver declares no power: the state is whether its agent answers, not a hypervisor's word.
      expect((row('box').querySelector('[data-machine-state]') as HTMLElement).title).toMatch(/; its agent does not answer$/)
      const panel = screen.getByRole('region', { name: 'Machine box' })
      for (const name of ['Start', 'Stop', 'Revert']) expect(within(panel).queryByRole('button', { name })).toBeNull()
      expect(within(panel).getByTestId('no-controls').textContent).toMatch(/powered by its owner/)
      expect(within(panel).getByTestId('no-screen').textContent).toMatch(/cannot take screenshots/)
      await new Promise((r) => setTimeout(r, 300))
      expect(asked.filter((u) => u.includes('/screenshot'))).toEqual([])
    } finally {
      globalThis.fetch = real
      setLocalApiBase(h.url)
      cleanup()
      await live.stop()
    }
  })

  it('disables the controls of a machine a task holds', async () => {
    const user = userEvent.setup()
    renderPage(<MachinesPage />)
    await user.click(await screen.findByRole('button', { name: 'ubuntu' }))
    const panel = screen.getByRole('region', { name: 'Machine ubuntu' })
    for (const name of ['Start', 'Stop', 'Revert']) expect((within(panel).getByRole('button', { name }) as HTMLButtonElement).disabled).toBe(true)
    // Keyboard: the panel closes from its close button.
    within(panel).getByRole('button', { name: 'Close machine panel' }).focus()
    await user.keyboard('{Enter}')
    expect(screen.queryByRole('region', { name: 'Machine ubuntu' })).toBeNull()
  })

  it('shows the doctor\'s findings with ok/warn/fail markers', async () => {
    // The doctor needs the engine: a second service with it on, and a physical machine whose
    // agent does not answer (nothing listens on 127.0.0.9:8000, so it is refused at once).
    const live = await startHarness({ engine: true, machines: { driver: 'physical', resultserver: { ip: '127.0.0.1', port: 0 },
      machines: [{ name: 'win10', ip: '127.0.0.9', platform: 'windows' }] } })
    setLocalApiBase(live.url)
    try {
      await doctorFindings()
    } finally {
      setLocalApiBase(h.url)
      cleanup()
      await live.stop()
    }
  })
})

async function doctorFindings(): Promise<void> {
  renderPage(<MachinesPage />)
  const list = await screen.findByRole('list', { name: 'Findings for win10' }, { timeout: 15_000 })
  const items = within(list).getAllByRole('listitem')
  expect(items.length).toBeGreaterThan(0)
  for (const li of items) expect(['ok', 'warn', 'fail']).toContain(li.dataset.level)
  // No interface is configured for these machines: packet capture must be a failure.
  expect(items.find((li) => li.textContent?.includes('packet capture'))?.dataset.level).toBe('fail')
  // No routing section: the routes say so, with the fix.
  const routes = within(screen.getByRole('list', { name: 'Findings for the routes' })).getAllByRole('listitem')
  expect(routes).toHaveLength(1)
  expect(routes[0]!.dataset.level).toBe('fail')
  expect(routes[0]!.textContent).toMatch(/no routing section.*aviary rooter install/)
}
