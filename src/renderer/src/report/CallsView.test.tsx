// @vitest-environment jsdom
// The calls view against a fake server that answers the calls routes' contract (the core's routes
// are tested on their own; here the fetch is the seam): a million calls, only a window of them in
// the DOM, pages asked for as they come into view with the contract's parameters; filters, search
// and the keyboard; the fallback to the full report's calls where the server has no such route;
// and hostile text shown, never applied.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { useState } from 'react'
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { HttpError } from '../api/http'
import { serviceCallsSource, type CallsListing } from './calls-source'
import { CallsView, MAX_SCROLL_PX, ROW_PX } from './CallsView'

const MILLION = 1_000_000
const CATS = ['file', 'network', 'process'] as const
const APIS: Record<string, string> = { file: 'openat', network: 'connect', process: 'execve' }
const VIEW_PX = 480

/** Call n of the fake process: categories in turn, every 7th failed. */
function call(n: number): Record<string, unknown> {
  const category = CATS[n % 3] as string
  return {
    index: n, category, api: APIS[category], time: 1_767_225_600 + n / 1000, tid: 4242,
    arguments: { path: n === 3 ? `/etc/${'x'.repeat(500)}/passwd` : `/tmp/f${n}`, flags: 'O_RDONLY' },
    return_value: n % 7 === 0 ? -1 : 3, status: n % 7 === 0 ? 0 : 1, ...(n % 7 === 0 ? { errno: 'ENOENT' } : {})
  }
}

interface Asked { path: string; params: URLSearchParams }

/**
 * The service's side of the contract, computed per request (nothing held): pid 1234 has a million
 * calls; a filter on category or API keeps the calls that match (still computed by index).
 */
function fakeServer(asked: Asked[], opts: { notFound?: boolean } = {}) {
  return async (path: string, signal?: AbortSignal): Promise<unknown> => {
    await new Promise((r) => setTimeout(r, 1))
    if (signal?.aborted) throw new DOMException('aborted', 'AbortError')
    const u = new URL(path, 'http://fake')
    asked.push({ path: u.pathname, params: u.searchParams })
    if (opts.notFound) throw new HttpError(404, 'Not Found')
    if (u.pathname === '/aviary/tasks/7/calls') {
      return { task_id: 7, processes: [
        { pid: 1234, process_name: 'sh', calls: MILLION, dropped: 25, categories: { file: 333_334, network: 333_333, process: 333_333 }, apis: { openat: 333_334, connect: 333_333, execve: 333_333 } },
        { pid: 99, process_name: 'invoice\u202Egpj.exe', calls: 1, dropped: 0, categories: { file: 1 }, apis: { openat: 1 } }
      ] }
    }
    const m = /^\/aviary\/tasks\/7\/calls\/(\d+)$/.exec(u.pathname)
    if (!m) throw new HttpError(404, 'Not Found')
    const offset = Number(u.searchParams.get('offset'))
    const limit = Number(u.searchParams.get('limit'))
    const cats = u.searchParams.get('category')?.split(',') ?? []
    const q = u.searchParams.get('q') ?? ''
    if (m[1] === '99') return { task_id: 7, pid: 99, total: 1, offset, calls: offset === 0 ? [{ index: 0, category: 'file', api: 'openat', arguments: { path: 'C:\\invoice\u202Egpj.exe' }, status: true, return_value: 0, time: 1_767_225_600, tid: 1 }] : [] }
    // One category: every third call from its first index; a search for "passwd" finds call 3 only.
    if (q === 'passwd') return { task_id: 7, pid: 1234, total: 1, offset, calls: offset === 0 ? [call(3)] : [] }
    if (cats.length === 1) {
      const first = CATS.indexOf(cats[0] as (typeof CATS)[number])
      const total = Math.ceil((MILLION - first) / 3)
      const calls = []
      for (let i = offset; i < Math.min(total, offset + limit); i++) calls.push(call(first + i * 3))
      return { task_id: 7, pid: 1234, total, offset, calls }
    }
    const calls = []
    for (let i = offset; i < Math.min(MILLION, offset + limit); i++) calls.push(call(i))
    return { task_id: 7, pid: 1234, total: MILLION, offset, calls }
  }
}

function source(asked: Asked[], opts: { notFound?: boolean; report?: unknown } = {}) {
  return serviceCallsSource({
    id: 7,
    getJson: fakeServer(asked, opts),
    isNotFound: (err) => err instanceof HttpError && err.status === 404,
    fullReport: async () => opts.report ?? {}
  })
}

const grid = () => screen.getByRole('grid', { name: 'Calls' })
const shownRows = () => [...grid().querySelectorAll<HTMLElement>('[role="row"][data-call]')]
const shownIndexes = () => shownRows().map((r) => Number(r.dataset.call))

function View({ src, listing }: { src: ReturnType<typeof source>; listing: CallsListing }) {
  const [pid, setPid] = useState<number | null>(null)
  return <CallsView source={src} listing={listing} pid={pid} onPid={setPid} />
}

let clientHeight: PropertyDescriptor | undefined
beforeAll(() => {
  clientHeight = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'clientHeight')
  // jsdom has no layout: the calls grid gets the height a browser gives it.
  Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get() { return this.getAttribute('role') === 'grid' ? VIEW_PX : 0 } })
})
afterAll(() => {
  if (clientHeight) Object.defineProperty(HTMLElement.prototype, 'clientHeight', clientHeight)
})
afterEach(cleanup)

async function open(opts: { notFound?: boolean; report?: unknown } = {}) {
  const asked: Asked[] = []
  const src = source(asked, opts)
  const listing = await src.listing()
  render(<View src={src} listing={listing} />)
  await waitFor(() => expect(shownRows().length).toBeGreaterThan(0))
  return { asked, listing }
}

describe('calls view over a million calls from the server', () => {
  it('keeps only a window of rows in the DOM and fetches the pages that come into view', async () => {
    const { asked } = await open()
    expect(grid().getAttribute('aria-rowcount')).toBe(String(MILLION))
    expect(screen.getByTestId('calls-count').textContent).toMatch(/^1,000,000 of 1,000,000 calls · 25 more were seen but not kept/)
    // 480 px of 24 px rows plus overscan: a few dozen rows.
    expect(shownRows().length).toBeGreaterThan(15)
    expect(shownRows().length).toBeLessThan(60)
    expect(shownIndexes()[0]).toBe(0)
    // The scroll box is capped (browsers limit an element's height), the list scaled into it.
    const spacer = grid().firstElementChild as HTMLElement
    expect(spacer.style.height).toBe(`${MAX_SCROLL_PX}px`)
    expect(MILLION * ROW_PX).toBeGreaterThan(MAX_SCROLL_PX)
    const firstPages = asked.filter((a) => a.path === '/aviary/tasks/7/calls/1234').map((a) => a.params.get('offset'))
    expect(firstPages).toEqual(['0'])

    // Half way down the scroll bar is half way down the list.
    await act(async () => {
      grid().scrollTop = (MAX_SCROLL_PX - VIEW_PX) / 2
      fireEvent.scroll(grid())
    })
    await waitFor(() => expect(shownIndexes().some((i) => Math.abs(i - MILLION / 2) < 40)).toBe(true))
    expect(shownRows().length).toBeLessThan(60)
    const asked2 = asked.filter((a) => a.path === '/aviary/tasks/7/calls/1234').map((a) => Number(a.params.get('offset')))
    expect(asked2.some((o) => o >= MILLION / 2 - 400 && o <= MILLION / 2)).toBe(true)
    // Only the pages around the view were asked for, not the 2,500 between.
    expect(asked2.length).toBeLessThan(6)
    expect(asked.every((a) => Number(a.params.get('limit') ?? 0) <= 1000)).toBe(true)

    // The very end of the scroll bar shows the last call.
    await act(async () => {
      grid().scrollTop = MAX_SCROLL_PX - VIEW_PX
      fireEvent.scroll(grid())
    })
    await waitFor(() => expect(shownIndexes()).toContain(MILLION - 1))
  })

  it('filters by category and API and searches, asking the server with the contract\'s parameters', async () => {
    const user = userEvent.setup()
    const { asked } = await open()
    const categories = screen.getByRole('group', { name: 'Categories' })
    await user.click(within(categories).getByRole('button', { name: /network/ }))
    expect(within(categories).getByRole('button', { name: /network/ }).getAttribute('aria-pressed')).toBe('true')
    await waitFor(() => expect(grid().getAttribute('aria-rowcount')).toBe('333333'))
    const last = asked[asked.length - 1] as Asked
    expect(last.params.get('category')).toBe('network')
    expect(shownRows().every((r) => r.textContent?.includes('connect'))).toBe(true)
    expect(screen.getByTestId('calls-count').textContent).toMatch(/^333,333 of 1,000,000 calls/)

    await user.selectOptions(screen.getByRole('combobox', { name: 'API' }), 'connect')
    await waitFor(() => expect(asked[asked.length - 1]?.params.get('api')).toBe('connect'))
    expect(asked[asked.length - 1]?.params.get('category')).toBe('network')

    // Back to all categories and APIs, then a search: asked once the typing settles.
    await user.click(within(categories).getByRole('button', { name: /network/ }))
    await user.selectOptions(screen.getByRole('combobox', { name: 'API' }), '')
    const before = asked.length
    await user.type(screen.getByRole('searchbox', { name: 'Search calls' }), 'passwd')
    await waitFor(() => expect(grid().getAttribute('aria-rowcount')).toBe('1'))
    const searches = asked.slice(before).map((a) => a.params.get('q')).filter((q) => q !== null)
    expect(searches).toEqual(['passwd'])
    expect(shownIndexes()).toEqual([0])
  })

  it('marks failed calls, cuts long arguments in the row and shows them whole in the details, from the keyboard', async () => {
    const user = userEvent.setup()
    await open()
    const row0 = shownRows()[0] as HTMLElement
    // Call 0 failed (every 7th): marked, with its return value.
    expect(row0.dataset.failed).toBe('true')
    expect(within(row0).getAllByRole('gridcell')[6]?.textContent).toBe('failed')
    expect(within(row0).getAllByRole('gridcell')[5]?.textContent).toBe('-1 ENOENT')
    expect((shownRows()[1] as HTMLElement).dataset.failed).toBeUndefined()
    const row3 = shownRows()[3] as HTMLElement
    const argsCell = within(row3).getAllByRole('gridcell')[4] as HTMLElement
    expect(argsCell.textContent).toContain('…')
    expect(argsCell.textContent?.length).toBeLessThan(200)

    grid().focus()
    await user.keyboard('{ArrowDown}{ArrowDown}{ArrowDown}')
    expect(grid().getAttribute('aria-activedescendant')).toBe('call-row-3')
    const details = screen.getByRole('region', { name: 'Call details' })
    expect(within(details).getByRole('rowheader', { name: 'path' }).nextElementSibling?.textContent).toBe(`/etc/${'x'.repeat(500)}/passwd`)
    await user.keyboard('{End}')
    // A browser fires `scroll` when the view sets scrollTop; jsdom does not.
    expect(grid().scrollTop).toBe(MAX_SCROLL_PX - VIEW_PX)
    fireEvent.scroll(grid())
    await waitFor(() => expect(shownIndexes()).toContain(MILLION - 1))
    expect(grid().getAttribute('aria-activedescendant')).toBe(`call-row-${MILLION - 1}`)
  })

  it('shows a process name and arguments with a bidi override as markers, never applied', async () => {
    const user = userEvent.setup()
    await open()
    const picker = screen.getByRole('combobox', { name: 'Process' })
    expect(within(picker).getByRole('option', { name: /pid 99/ }).textContent).toContain('invoice[RLO]gpj.exe')
    await user.selectOptions(picker, '99')
    await waitFor(() => expect(shownIndexes()).toEqual([0]))
    expect((shownRows()[0] as HTMLElement).querySelector('[data-control="RLO"]')).not.toBeNull()
    expect(document.body.innerHTML).not.toContain('\u202E')
  })
})

describe('calls view without the server\'s calls route', () => {
  const report = {
    behavior: {
      processes: [
        { pid: 10, process_name: 'sh', calls: Array.from({ length: 50_000 }, (_, i) => ({ ...call(i), index: undefined })) },
        { pid: 11, process_name: 'curl', calls: [] }
      ]
    }
  }

  it('reads the full report\'s calls and filters and searches them in the page', async () => {
    const user = userEvent.setup()
    const { asked, listing } = await open({ notFound: true, report })
    expect(asked.map((a) => a.path)).toEqual(['/aviary/tasks/7/calls'])
    expect(listing).toMatchObject({ origin: 'report', processes: [{ pid: 10, calls: 50_000, categories: { file: 16_667, network: 16_667, process: 16_666 } }] })
    expect(screen.getByTestId('calls-count').textContent).toBe('50,000 of 50,000 calls · from the report (this server does not page calls)')
    expect(listing.unpaged).toBe(true)
    expect(grid().getAttribute('aria-rowcount')).toBe('50000')
    expect(shownRows().length).toBeLessThan(60)

    await user.click(within(screen.getByRole('group', { name: 'Categories' })).getByRole('button', { name: /process/ }))
    await waitFor(() => expect(grid().getAttribute('aria-rowcount')).toBe('16666'))
    expect(shownRows().every((r) => r.textContent?.includes('execve'))).toBe(true)
    // Rows keep their place in the process's calls.
    expect(screen.getByRole('region', { name: 'Call details' }).textContent).toMatch(/call 2 ·/)

    await user.click(within(screen.getByRole('group', { name: 'Categories' })).getByRole('button', { name: /process/ }))
    await user.type(screen.getByRole('searchbox', { name: 'Search calls' }), 'PASSWD')
    await waitFor(() => expect(grid().getAttribute('aria-rowcount')).toBe('1'))
    expect(shownRows()[0]?.textContent).toContain('/etc/')
    // No request for pages went to the server: everything came from the report.
    expect(asked.map((a) => a.path)).toEqual(['/aviary/tasks/7/calls'])
  })
})

describe('calls of Cuckoo\'s Windows monitor', () => {
  it('shows a monitor call\'s flags, stack trace, NT status, last error and buffer in the details', async () => {
    const user = userEvent.setup()
    const report = { behavior: { processes: [{ pid: 2052, process_name: 'dropper.exe', calls: [{
      category: 'file', api: 'NtCreateFile', status: 0, return_value: 3221225506, time: 1_767_225_600.25, tid: 2056,
      arguments: { file_handle: '0x00000000', desired_access: '0x40100080', filepath: 'C:\\Users\\Public\\invoice\u202Egpj.exe', create_disposition: 5 },
      flags: { desired_access: 'FILE_READ_ATTRIBUTES|GENERIC_WRITE|SYNCHRONIZE', create_disposition: 'FILE_OVERWRITE_IF' },
      stacktrace: ['kernelbase+0x1a2b', 'dropper+0x1010'], nt_status: -1073741790, last_error: 5, buffer: '3f786850e387550fdab836ed7e6dc881de23001b'
    }] }] } }
    const { listing } = await open({ notFound: true, report })
    expect(listing.processes[0]).toMatchObject({ pid: 2052, calls: 1, categories: { file: 1 }, apis: { NtCreateFile: 1 } })
    const row = shownRows()[0] as HTMLElement
    expect(row.dataset.failed).toBe('true')
    expect(row.querySelector('[data-control="RLO"]')).not.toBeNull()
    await user.click(row)
    const details = screen.getByRole('region', { name: 'Call details' })
    const value = (name: string) => within(details).getByRole('rowheader', { name }).nextElementSibling?.textContent
    expect(value('flags')).toBe('{"desired_access":"FILE_READ_ATTRIBUTES|GENERIC_WRITE|SYNCHRONIZE","create_disposition":"FILE_OVERWRITE_IF"}')
    expect(value('stacktrace')).toBe('["kernelbase+0x1a2b","dropper+0x1010"]')
    expect(value('nt_status')).toBe('-1073741790')
    expect(value('last_error')).toBe('5')
    expect(value('buffer')).toBe('3f786850e387550fdab836ed7e6dc881de23001b')
    expect(value('filepath')).toBe('C:\\Users\\Public\\invoiceRLOgpj.exe')
    expect(document.body.innerHTML).not.toContain('\u202E')
  })
})
