// @vitest-environment jsdom
// A task no machine can run is marked in the task list, with the scheduler's reason on hover,
// against a real service whose engine has no machine for it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, waitFor } from '@testing-library/react'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { useUi } from '../state/ui'
import { TasksPage } from '../pages/Tasks'

let h: Harness
let id: number

beforeAll(async () => {
  h = await startHarness({ engine: true, machines: { driver: 'physical', resultserver: { ip: '127.0.0.1', port: 0 }, machines: [{ name: 'box', ip: '127.0.0.9', platform: 'linux' }] } })
  const b = '----aviarylist'
  const body = `--${b}\r\nContent-Disposition: form-data; name="platform"\r\n\r\nwindows\r\n--${b}\r\nContent-Disposition: form-data; name="file"; filename="win.exe"\r\n\r\nMZ\r\n--${b}--\r\n`
  id = ((await (await fetch(`${h.url}/tasks/create/file`, { method: 'POST', body, headers: { 'Content-Type': `multipart/form-data; boundary=${b}` } })).json()) as { task_id: number }).task_id
  await waitFor(async () => {
    const { task } = (await (await fetch(`${h.url}/tasks/view/${id}`)).json()) as { task: { errors: string[] } }
    expect(task.errors.join()).toMatch(/^unschedulable: /)
  }, { timeout: 10_000 })
  setLocalApiBase(h.url)
  useUi.getState().setConnection(null)
})
afterAll(async () => {
  cleanup()
  await h.stop()
})

describe('the task list', () => {
  it('marks a task no machine can run, the reason on hover', async () => {
    // jsdom has no layout: the list's scroll box gets the height a browser gives it.
    Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get() { return this.getAttribute('role') === 'grid' ? 640 : 0 } })
    const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
    render(<QueryClientProvider client={qc}><MemoryRouter><TasksPage /></MemoryRouter></QueryClientProvider>)
    const row = await waitFor(() => {
      const r = document.querySelector(`[role="row"][data-task-id="${id}"]`)
      if (!r) throw new Error('no row yet')
      return r as HTMLElement
    }, { timeout: 10_000 })
    const mark = row.querySelector('[data-unschedulable]') as HTMLElement
    expect(mark.textContent).toBe('no machine')
    expect(mark.getAttribute('title')).toBe("No machine can run this task: no machine has platform 'windows' (configured: linux)")
  })
})
