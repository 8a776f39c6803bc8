// @vitest-environment jsdom
// The IDS rules page against a real service: the built-in sets listed with their counts, a
// .rules file imported with the button (the service's answer shown), removed again, and a file
// that holds no rules refused with the service's reason.
import type { ReactElement } from 'react'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { useUi } from '../state/ui'
import { IdsRulesPage } from './IdsRules'

let h: Harness

beforeAll(async () => {
  h = await startHarness()
  setLocalApiBase(h.url)
  useUi.getState().setConnection(null)
})
afterEach(() => cleanup())
afterAll(async () => h.stop())

function renderPage(ui: ReactElement) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(<QueryClientProvider client={qc}><MemoryRouter>{ui}</MemoryRouter></QueryClientProvider>)
}

const names = () => within(screen.getByRole('table', { name: 'IDS rule sets' })).getAllByRole('row').slice(1).map((r) => (r as HTMLTableRowElement).cells[0]?.textContent)

describe('IDS rules page', () => {
  it('lists the sets, imports a .rules file with the button, removes it; refuses a file without rules', async () => {
    const user = userEvent.setup()
    renderPage(<IdsRulesPage />)
    await waitFor(() => expect(names()).toEqual(['bundled', 'aviary']))
    const file = new File(['alert tcp any any -> any any (msg:"LOCAL x"; content:"x"; sid:3200001; rev:1;)\n'], 'local-test.rules')
    await user.upload(screen.getByLabelText('Rule set file'), file)
    expect((await screen.findByRole('status')).textContent).toBe('Imported local-test: 1 rule in 1 file.')
    await waitFor(() => expect(names()).toEqual(['bundled', 'aviary', 'local-test']))
    await user.click(screen.getByRole('button', { name: 'Remove local-test' }))
    await waitFor(() => expect(names()).toEqual(['bundled', 'aviary']))
    await user.upload(screen.getByLabelText('Rule set file'), new File(['# nothing\n'], 'empty.rules'))
    expect((await screen.findByRole('alert')).textContent).toBe('Not done: body: holds no rules (an ET tarball has rules/*.rules)')
  })
})
