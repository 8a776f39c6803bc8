// @vitest-environment jsdom
// The Submit page's faults from the review, against a real service whose only machine runs Linux:
// a line that is neither a URL nor a hash is not counted (nor sent) as a URL, the drop highlight
// stays on the drop zone instead of covering the form, and the Platform field suggests the fleet's
// own platforms.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { act, cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { SubmitPage } from '../pages/Submit'
import { useUi } from '../state/ui'
import { useQueue } from './queue'
import { parseTargets } from './options'

let h: Harness

beforeAll(async () => {
  h = await startHarness({ machines: { driver: 'kvm', machines: [{ name: 'deb12', ip: '192.168.122.50', snapshot: 'clean', platform: 'linux' }] } })
  setLocalApiBase(h.url)
  useUi.getState().setConnection(null)
})
afterAll(async () => {
  cleanup()
  await h.stop()
})
beforeEach(() => {
  cleanup()
  useQueue.setState({ items: [] })
})

let qc: QueryClient | null = null
// A query aborted by unmounting can leave the client's socket connected with no request on it,
// which keeps the service from stopping: each test ends with its queries settled.
afterEach(async () => { await waitFor(() => expect(qc?.isFetching() ?? 0).toBe(0)) })

function renderPage() {
  qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(<QueryClientProvider client={qc}><MemoryRouter><SubmitPage /></MemoryRouter></QueryClientProvider>)
}

describe('Submit page, as reviewed', () => {
  it('counts and sends only URLs and hashes, and keeps the other lines to be fixed', async () => {
    expect(parseTargets('not a url at all\nhttp://example.com/x\nexample.org/path\n d41d8cd98f00b204e9800998ecf8427e \njavascript:alert(1)\n# a comment'))
      .toEqual({ urls: ['http://example.com/x', 'example.org/path'], hashes: ['d41d8cd98f00b204e9800998ecf8427e'], invalid: ['not a url at all', 'javascript:alert(1)'] })
    const user = userEvent.setup()
    renderPage()
    const box = screen.getByRole('textbox', { name: /URLs and hashes/ })
    await user.type(box, 'not a url at all{Enter}http://example.com/x')
    expect(screen.getByRole('button', { name: 'Submit 1 URL' })).toBeTruthy()
    expect(screen.getByRole('alert').textContent).toBe('Neither a URL nor a hash, left out: not a url at all')
    await user.click(screen.getByRole('button', { name: 'Submit 1 URL' }))
    await waitFor(() => expect(within(screen.getByRole('list', { name: 'Submissions' })).getAllByRole('listitem')[0]?.dataset.state).toBe('done'))
    expect((box as HTMLTextAreaElement).value).toBe('not a url at all')
    const tasks = (await h.json<{ tasks: { target: string }[] }>('/tasks/list')).body.tasks
    expect(tasks.map((t) => t.target)).toEqual(['http://example.com/x'])
  })

  it('highlights the drop zone while files are dragged, and leaves the form fields uncovered', () => {
    const { container } = renderPage()
    const enter = new Event('dragenter', { bubbles: true })
    Object.defineProperty(enter, 'dataTransfer', { value: { types: ['Files'] } })
    act(() => { window.dispatchEvent(enter) })
    const zone = screen.getByRole('region', { name: 'Files' })
    expect(within(zone).getByText('Drop files or folders to queue them')).toBeTruthy()
    expect(zone.dataset.dragging).toBe('true')
    // Nothing fixed over the window: the options and the URL box stay visible and usable.
    expect(container.querySelector('.fixed, [class*="inset-0"]')).toBeNull()
  })

  it('suggests the fleet\'s own platforms, not "windows" on a Linux-only fleet', async () => {
    renderPage()
    const platform = screen.getByRole('combobox', { name: 'Platform' }) as HTMLInputElement
    await waitFor(() => expect(platform.placeholder).toBe('linux'))
    const options = [...(document.getElementById(platform.getAttribute('list') as string)?.querySelectorAll('option') ?? [])].map((o) => o.value)
    expect(options).toEqual(['linux'])
  })
})
