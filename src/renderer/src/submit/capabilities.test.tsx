// @vitest-environment jsdom
// Options the host or its fleet cannot honour are disabled with the reason: a memory dump on a
// fleet whose drivers cannot make one (physical machines), and the routes that need the rooter
// when none answers; read from what a real service says (/aviary/machines, /aviary/doctor).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { SubmitPage } from '../pages/Submit'
import { blockedRoutes, memoryDumpBlocked } from './capabilities'
import type { Machine } from '../machines/api'

const machine = (name: string, driver: string, memoryDump: boolean | undefined) => ({
  name, driver, platform: 'linux',
  ...(memoryDump === undefined ? {} : { capabilities: { power: memoryDump, revert: memoryDump, reset: memoryDump, screenshots: memoryDump, memoryDump } })
}) as unknown as Machine

describe('what the fleet cannot honour', () => {
  it('a memory dump: blocked only when every machine that could run the task says its driver cannot', () => {
    const physical = [machine('box1', 'physical', false), machine('box2', 'physical', false)]
    expect(memoryDumpBlocked(physical, '')).toBe('No machine here can dump its memory: their driver (physical) cannot.')
    expect(memoryDumpBlocked(physical, 'box2')).toBe('box2 cannot dump its memory: its driver (physical) cannot.')
    const mixed = [...physical, machine('vm1', 'kvm', true)]
    expect(memoryDumpBlocked(mixed, '')).toBeNull()
    expect(memoryDumpBlocked(mixed, 'box1')).toMatch(/^box1 cannot/)
    expect(memoryDumpBlocked(mixed, 'vm1')).toBeNull()
    // A server that does not say (Cuckoo's list has no capabilities), or no fleet: offered.
    expect(memoryDumpBlocked([machine('c1', 'virtualbox', undefined)], '')).toBeNull()
    expect(memoryDumpBlocked(undefined, '')).toBeNull()
    expect(memoryDumpBlocked([], '')).toBeNull()
  })

  it('routes: a broken one by its finding, the forwarding ones when the rooter does not answer', () => {
    const routes = [{ name: 'none', kind: 'none', description: '' }, { name: 'internet', kind: 'internet', description: '' }, { name: 'fake', kind: 'inetsim', description: '' }]
    const down = { routes: [{ check: 'rooter', ok: false, detail: 'no rooter listens on /x.sock' }] }
    expect([...blockedRoutes(routes, down)]).toEqual([['internet', 'needs the rooter: no rooter listens on /x.sock'], ['fake', 'needs the rooter: no rooter listens on /x.sock']])
    const broken = { routes: [{ check: 'rooter', ok: true, detail: '' }, { check: 'route fake', ok: false, detail: 'the rooter runs no INetSim' }] }
    expect([...blockedRoutes(routes, broken)]).toEqual([['fake', 'the rooter runs no INetSim']])
    expect(blockedRoutes(routes, undefined).size).toBe(0)
  })
})

describe('the Submit form on a physical fleet without a rooter', () => {
  let h: Harness
  let dir: string
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-caps-'))
    h = await startHarness({
      engine: true,
      machines: {
        driver: 'physical', resultserver: { ip: '127.0.0.1', port: 0 },
        machines: [{ name: 'box', ip: '127.0.0.9', platform: 'linux' }],
        routing: { default: 'none', internet: { interface: 'eth0' }, rooter: path.join(dir, 'no-rooter.sock') }
      }
    })
    setLocalApiBase(h.url)
  }, 180_000)
  afterAll(async () => {
    cleanup()
    await h.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('disables the memory dump and the internet route, each with the reason', async () => {
    const user = userEvent.setup()
    const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
    render(<QueryClientProvider client={qc}><MemoryRouter><SubmitPage /></MemoryRouter></QueryClientProvider>)
    const memory = (await screen.findByLabelText('Full memory dump', {}, { timeout: 15_000 })) as HTMLInputElement
    await waitFor(() => expect(memory.disabled).toBe(true), { timeout: 15_000 })
    expect(memory.checked).toBe(false)
    expect(screen.getByTestId('memory-blocked').textContent).toBe('No machine here can dump its memory: their driver (physical) cannot.')
    expect(memory.getAttribute('aria-describedby')).toBe('submit-memory-blocked')

    const route = (await screen.findByLabelText('Network route', {}, { timeout: 15_000 })) as HTMLSelectElement
    await waitFor(() => expect(([...route.options].find((o) => o.value === 'internet') as HTMLOptionElement).disabled).toBe(true), { timeout: 15_000 })
    const internet = [...route.options].find((o) => o.value === 'internet') as HTMLOptionElement
    expect(internet.textContent).toMatch(/^internet — unavailable: needs the rooter: no rooter listens on .*no-rooter\.sock/)
    expect(([...route.options].find((o) => o.value === 'none') as HTMLOptionElement).disabled).toBe(false)
    await user.click(memory) // disabled: nothing changes
    expect(memory.checked).toBe(false)
  }, 60_000)
})
