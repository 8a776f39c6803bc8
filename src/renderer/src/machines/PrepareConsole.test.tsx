// @vitest-environment jsdom
// The prepare panel's screen against a real service (engine off): a machine whose console is
// registered in the service's hub, as prepare mode registers it, shows the screen region with its
// fill-window toggle; one without says why (the service's reason, NO_CONSOLE for a physical one).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, screen } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { NO_CONSOLE } from '../../../shared/api/drivers'
import { setLocalApiBase } from '../api/http'
import { useUi } from '../state/ui'
import { PrepareConsole } from './PrepareConsole'

let h: Harness
let close: ((reason: string) => void) | null = null

beforeAll(async () => {
  // A stand-in: jsdom lays nothing out and has no ResizeObserver, which noVNC's RFB constructs.
  globalThis.ResizeObserver ??= class { observe(): void {} unobserve(): void {} disconnect(): void {} }
  h = await startHarness({
    machines: {
      driver: 'kvm', resultserver: { ip: '127.0.0.1', port: 2042 },
      machines: [
        { name: 'prep', label: 'prep-vm', ip: '192.0.2.51', snapshot: 'clean', platform: 'linux' },
        { name: 'idle', label: 'idle-vm', ip: '192.0.2.52', snapshot: 'clean', platform: 'linux' },
        { name: 'box', ip: '192.0.2.53', driver: 'physical', platform: 'linux' }
      ]
    }
  })
  setLocalApiBase(h.url)
  useUi.getState().setConnection(null)
  // As prepare mode registers it (fleet.service.ts through the engine); no VNC server behind it here.
  close = h.service.consoles!.register({
    task: null, machine: 'prep', recordDir: null, recordCap: 0,
    endpoint: () => Promise.reject(new Error('no VNC server in this test'))
  }).close
})
afterEach(() => cleanup())
afterAll(async () => {
  close?.('test over')
  await h.stop()
})

const renderPanel = (machine: string) => {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(<QueryClientProvider client={qc}><PrepareConsole machine={machine} /></QueryClientProvider>)
}

describe('PrepareConsole', () => {
  it("shows the machine's screen region with a fill-window toggle while its console is open", async () => {
    renderPanel('prep')
    const region = await screen.findByTestId('prepare-console')
    expect(region.textContent).toMatch(/Screen of prep/)
    const toggle = screen.getByRole('button', { name: 'Fill the window' })
    expect(region.className).not.toMatch(/fixed/)
    await userEvent.click(toggle)
    expect(screen.getByTestId('prepare-console').className).toMatch(/fixed inset-0/)
    expect(screen.getByRole('button', { name: 'Leave full view' }).getAttribute('aria-pressed')).toBe('true')
  })

  it('says why there is no screen: no console open, or a driver without one', async () => {
    renderPanel('idle')
    expect((await screen.findByTestId('prepare-no-screen')).textContent).toMatch(/not running an analysis \(or being prepared\)/)
    expect(screen.queryByTestId('prepare-console')).toBeNull()
    cleanup()
    renderPanel('box')
    expect((await screen.findByTestId('prepare-no-screen')).textContent).toContain(NO_CONSOLE.physical!)
  })
})
