// @vitest-environment jsdom
// The task list's search, sort and category filter against a real service: 400 tasks inserted by
// SQL with scores, categories, tags, machines and the search terms processing writes (domains with
// their parents, addresses, signatures, dropped files' hashes). Every kind found from the box (as
// kind:value and by picking the kind), plain text, a query the service could not mean said at the
// box without a request, sorting by score both ways, categories, and the choices kept when the page
// is left and opened again.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter, Route, Routes } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { TasksPage } from '../pages/Tasks'
import { useTasksView } from './filter-store'
import { SEARCH_KINDS } from '../../../shared/search-query'

const TASKS = 400
const DROPPED = 'd0'.repeat(32)
let h: Harness
/** Task i: category url when i % 10 == 0, archive when i % 10 == 5, else file; reported with a score when i % 4 == 0. */
const category = (i: number) => (i % 10 === 0 ? 'url' : i % 10 === 5 ? 'archive' : 'file')
const scoreOf = (i: number) => (i % 4 === 0 ? (i * 7) % 100 / 10 : null)
const ids = (f: (i: number) => boolean) => Array.from({ length: TASKS }, (_, k) => k + 1).filter(f)
const newestFirst = (xs: number[]) => [...xs].reverse()
const byScore = (a: number, b: number) => ((scoreOf(b) ?? -1) - (scoreOf(a) ?? -1)) || b - a
/** The queries the page asked /aviary/tasks, decoded (k=v&...). */
const asked: string[] = []
const realFetch = globalThis.fetch

beforeAll(async () => {
  h = await startHarness()
  h.sql(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${TASKS})
    INSERT INTO tasks (category, target, clock, added_on, status, score, tags, machine)
    SELECT CASE WHEN i % 10 = 0 THEN 'url' WHEN i % 10 = 5 THEN 'archive' ELSE 'file' END,
           CASE WHEN i % 10 = 0 THEN 'http://site' || i || '.example/' ELSE '/data/storage/uploads/x/sample' || i || '.exe' END,
           '2026-01-01 00:00:00', '2026-01-01 00:00:00',
           CASE WHEN i % 4 = 0 THEN 'reported' ELSE 'pending' END,
           CASE WHEN i % 4 = 0 THEN ((i * 7) % 100) / 10.0 END,
           CASE WHEN i % 50 = 0 THEN '["Win7"]' ELSE '[]' END,
           CASE WHEN i % 40 = 0 THEN 'lab-vm' END
    FROM n`)
  // Every 8th task contacted c2.evil.example (and so evil.example) at 203.0.113.9 and fired antivm_disk;
  // task 16 also dropped a file.
  h.sql(`INSERT INTO task_terms (task_id, kind, term)
    SELECT id, 'domain', 'c2.evil.example' FROM tasks WHERE id % 8 = 0
    UNION ALL SELECT id, 'domain', 'evil.example' FROM tasks WHERE id % 8 = 0
    UNION ALL SELECT id, 'domain', 'example' FROM tasks WHERE id % 8 = 0
    UNION ALL SELECT id, 'ip', '203.0.113.9' FROM tasks WHERE id % 8 = 0
    UNION ALL SELECT id, 'sig', 'antivm_disk' FROM tasks WHERE id % 8 = 0
    UNION ALL SELECT id, 'sig', 'antivm' FROM tasks WHERE id % 8 = 0
    UNION ALL SELECT 16, 'hash', '${DROPPED}'`)
  setLocalApiBase(h.url)
  globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input instanceof Request ? input.url : input))
    if (url.pathname === '/aviary/tasks') asked.push([...url.searchParams].map(([k, v]) => `${k}=${v}`).join('&'))
    return realFetch(input, init)
  }) as typeof fetch
  Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get() { return this.getAttribute('role') === 'grid' ? 640 : 0 } })
})
afterAll(async () => {
  cleanup()
  globalThis.fetch = realFetch
  await h.stop()
})
beforeEach(() => {
  cleanup()
  asked.length = 0
  useTasksView.setState({ statuses: [], categories: [], text: '', kind: 'any', q: '', sort: 'id', order: 'desc', scrollOffset: 0, selected: 0 })
})

function renderPage() {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(
    <QueryClientProvider client={qc}>
      <MemoryRouter initialEntries={['/tasks']}>
        <Routes><Route path="/tasks" element={<TasksPage />} /></Routes>
      </MemoryRouter>
    </QueryClientProvider>
  )
}

const rowIds = () => [...screen.getByRole('grid', { name: 'Tasks' }).querySelectorAll('[role="row"][data-task-id]')].map((r) => Number(r.getAttribute('data-task-id')))
const count = () => screen.getByTestId('task-count').textContent
const box = () => screen.getByRole('searchbox', { name: 'Search tasks' })
const loaded = () => waitFor(() => expect(rowIds().length).toBeGreaterThan(0))

describe('searching the task list', () => {
  it('finds tasks by domain, parent domain, IP, signature, dropped hash, tag and machine, as kind:value or plain', async () => {
    const user = userEvent.setup()
    renderPage()
    await loaded()
    const cases: [string, number[]][] = [
      ['domain:evil.example', newestFirst(ids((i) => i % 8 === 0))],
      ['c2.evil.example', newestFirst(ids((i) => i % 8 === 0))],
      ['ip:203.0.113.9', newestFirst(ids((i) => i % 8 === 0))],
      ['sig:antivm', newestFirst(ids((i) => i % 8 === 0))],
      [`hash:${DROPPED.slice(0, 8)}`, [16]],
      [DROPPED, [16]],
      ['tag:win7', newestFirst(ids((i) => i % 50 === 0))],
      ['machine:LAB-VM', newestFirst(ids((i) => i % 40 === 0))],
      ['evil.example tag:win7', newestFirst(ids((i) => i % 200 === 0))]
    ]
    for (const [q, want] of cases) {
      await user.clear(box())
      await user.type(box(), q)
      await waitFor(() => expect(rowIds(), q).toEqual(want.slice(0, rowIds().length)))
      await waitFor(() => expect(count(), q).toBe(`${want.length} task${want.length === 1 ? '' : 's'}`))
    }
    expect(asked.some((a) => a.includes('q=evil.example tag:win7'))).toBe(true)
  })

  it('searches the text as the kind picked next to the box', async () => {
    const user = userEvent.setup()
    renderPage()
    await loaded()
    await user.selectOptions(screen.getByRole('combobox', { name: 'Search in' }), 'domain')
    await user.type(box(), 'evil.example')
    await waitFor(() => expect(count()).toBe('50 tasks'))
    expect(asked.at(-1)).toContain('q=domain:evil.example')
    // The same text as a name finds nothing: no file name or URL holds it.
    await user.selectOptions(screen.getByRole('combobox', { name: 'Search in' }), 'name')
    await waitFor(() => expect(count()).toBe('0 tasks'))
    expect(asked.at(-1)).toContain('q=name:evil.example')
    expect(screen.getByText('No tasks match.')).toBeTruthy()
  })

  it('says at the box what a kind cannot be, and asks the service nothing', async () => {
    const user = userEvent.setup()
    renderPage()
    await loaded()
    const before = rowIds()
    asked.length = 0
    await user.type(box(), 'hash:xyz')
    const alert = await screen.findByRole('alert')
    expect(alert.textContent).toMatch(/^hash: wants an md5, sha1, sha256 or sha512, or its first 6 or more hex digits \(got 'xyz'\)$/)
    expect(box().getAttribute('aria-invalid')).toBe('true')
    await new Promise((r) => setTimeout(r, 500))
    expect(asked).toEqual([])
    expect(rowIds()).toEqual(before)
    await user.clear(box())
    await user.type(box(), 'ip:203.0.113.9')
    await waitFor(() => expect(count()).toBe('50 tasks'))
    expect(screen.queryByRole('alert')).toBeNull()
  })

  it('sorts by score, highest or lowest first, and filters by category', async () => {
    const user = userEvent.setup()
    renderPage()
    await loaded()
    const sortBy = screen.getByRole('combobox', { name: 'Sort tasks' })
    await user.selectOptions(sortBy, 'Highest score first')
    const all = ids(() => true)
    await waitFor(() => expect(rowIds()).toEqual([...all].sort(byScore).slice(0, rowIds().length)))
    expect(rowIds().length).toBeGreaterThan(10)
    await user.selectOptions(sortBy, 'Lowest score first')
    await waitFor(() => expect(rowIds()).toEqual([...all].sort((a, b) => byScore(b, a)).slice(0, rowIds().length)))
    expect(asked.at(-1)).toContain('sort=score&order=asc')

    const categories = screen.getByRole('group', { name: 'Filter by category' })
    await user.click(within(categories).getByRole('button', { name: 'URL' }))
    const urls = ids((i) => category(i) === 'url').sort((a, b) => byScore(b, a))
    await waitFor(() => expect(rowIds()).toEqual(urls.slice(0, rowIds().length)))
    await waitFor(() => expect(count()).toBe(`${urls.length} tasks`))
    await user.click(within(categories).getByRole('button', { name: 'archive' }))
    await waitFor(() => expect(count()).toBe(`${ids((i) => category(i) !== 'file').length} tasks`))
    expect(asked.at(-1)).toContain('category=url,archive')
    expect(within(categories).getByRole('button', { name: 'URL' }).getAttribute('aria-pressed')).toBe('true')
    await user.click(within(categories).getByRole('button', { name: 'any category' }))
    await waitFor(() => expect(count()).toBe(`${TASKS} tasks`))
  })

  it('keeps the search, its kind and the order when the page is left and opened again', async () => {
    const user = userEvent.setup()
    const first = renderPage()
    await loaded()
    await user.selectOptions(screen.getByRole('combobox', { name: 'Search in' }), 'sig')
    await user.type(box(), 'antivm_disk')
    await user.selectOptions(screen.getByRole('combobox', { name: 'Sort tasks' }), 'Highest score first')
    const want = ids((i) => i % 8 === 0).sort(byScore)
    await waitFor(() => expect(asked.at(-1)).toBe('offset=0&limit=100&q=sig:antivm_disk&sort=score'))
    await waitFor(() => expect(rowIds()).toEqual(want.slice(0, rowIds().length)))
    first.unmount()
    renderPage()
    expect((box() as HTMLInputElement).value).toBe('antivm_disk')
    expect((screen.getByRole('combobox', { name: 'Search in' }) as HTMLSelectElement).value).toBe('sig')
    expect((screen.getByRole('combobox', { name: 'Sort tasks' }) as HTMLSelectElement).value).toBe('score:desc')
    await loaded()
    expect(rowIds()).toEqual(want.slice(0, rowIds().length))
  })

  it('explains the syntax: every kind with what it finds', async () => {
    renderPage()
    await loaded()
    const help = screen.getByText('Search syntax').closest('details')!
    for (const k of SEARCH_KINDS) expect(within(help).getByText(`${k}:`)).toBeTruthy()
    expect(help.textContent).toContain('a domain the analysis resolved or contacted, or any of its subdomains')
  })
})
