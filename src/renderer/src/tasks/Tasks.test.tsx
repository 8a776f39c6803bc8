// @vitest-environment jsdom
// The Tasks page against a real service holding thousands of tasks (inserted by SQL): only a
// window of rows is in the DOM, state chips and search narrow the list, a state changed in the
// database shows without a reload, and the keyboard moves the selection and opens a task.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { act, cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter, Route, Routes, useParams } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { TasksPage } from '../pages/Tasks'
import { useTasksView } from './filter-store'

const TASKS = 3000
let h: Harness


beforeAll(async () => {
  // A host that routes nothing (machines.json without a routing section).
  h = await startHarness({ machines: { driver: 'kvm', resultserver: { ip: '192.168.122.1', port: 2042 },
    machines: [{ name: 'win10', ip: '192.168.122.101', snapshot: 'clean', platform: 'windows' }] } })
  // Every 10th task is a file task with a sample of known hashes; the others are URL tasks.
  h.sql(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${TASKS})
    INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
    SELECT 100 + i, 'data', printf('%032x', i), 'ABCDEF01', printf('%040x', i), printf('%064x', i), printf('%0128x', i), NULL, '2026-01-01 00:00:00'
    FROM n WHERE i % 10 = 0`)
  h.sql(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${TASKS})
    INSERT INTO tasks (category, target, sample_id, clock, added_on, status)
    SELECT CASE WHEN i % 10 = 0 THEN 'file' ELSE 'url' END,
           CASE WHEN i % 10 = 0 THEN '/data/storage/uploads/x/sample' || i || '.exe' ELSE 'http://site' || i || '.example/' END,
           CASE WHEN i % 10 = 0 THEN (SELECT id FROM samples WHERE md5 = printf('%032x', i)) END,
           '2026-01-01 00:00:00', '2026-01-01 00:00:00',
           CASE WHEN i % 3 = 0 THEN 'reported' ELSE 'pending' END
    FROM n`)
  setLocalApiBase(h.url)
  // jsdom has no layout: give scroll containers the height of a real window's list (640 px),
  // so the virtualizer computes the window a browser would.
  Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get() { return this.getAttribute('role') === 'grid' ? 640 : 0 } })
})
afterAll(async () => {
  cleanup()
  await h.stop()
})
beforeEach(() => {
  cleanup()
  useTasksView.setState({ statuses: [], q: '', scrollOffset: 0, selected: 0 })
})

function TaskStub() {
  return <p>task page {useParams().id}</p>
}

function renderPage(pollMs = 5_000) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(
    <QueryClientProvider client={qc}>
      <MemoryRouter initialEntries={['/tasks']}>
        <Routes>
          <Route path="/tasks" element={<TasksPage pollMs={pollMs} />} />
          <Route path="/tasks/:id" element={<TaskStub />} />
        </Routes>
      </MemoryRouter>
    </QueryClientProvider>
  )
}

const rows = () => screen.getByRole('grid', { name: 'Tasks' }).querySelectorAll('[role="row"][data-task-id]')
const rowIds = () => [...rows()].map((r) => Number(r.getAttribute('data-task-id')))

describe('Tasks page', () => {
  it('renders only a window of the thousands of rows, with the total as scroll height', async () => {
    renderPage()
    await waitFor(() => expect(rows().length).toBeGreaterThan(0), { timeout: 10_000 })
    const grid = screen.getByRole('grid', { name: 'Tasks' })
    // 640 px of 32 px rows plus overscan: a few dozen rows, never the whole list.
    expect(rows().length).toBeGreaterThan(15)
    expect(rows().length).toBeLessThan(60)
    expect(grid.getAttribute('aria-rowcount')).toBe(String(TASKS))
    expect(screen.getByTestId('task-count').textContent).toBe('3,000 tasks')
    expect(rowIds()[0]).toBe(TASKS) // newest first
    const inner = grid.firstElementChild?.nextElementSibling ?? grid.lastElementChild
    expect((inner as HTMLElement).style.height).toBe(`${TASKS * 32}px`)
    // A file task shows its name, not its stored path.
    expect(within(grid).getAllByText(/^sample\d+\.exe$/).length).toBeGreaterThan(0)
    expect(grid.textContent).not.toContain('/data/storage/uploads')
  })

  it('narrows the list with the state chips', async () => {
    const user = userEvent.setup()
    renderPage()
    await waitFor(() => expect(rows().length).toBeGreaterThan(0))
    await user.click(screen.getByRole('button', { name: 'reported' }))
    expect(screen.getByRole('button', { name: 'reported' }).getAttribute('aria-pressed')).toBe('true')
    await waitFor(() => {
      const statuses = [...rows()].map((r) => r.querySelector('[data-status]')?.getAttribute('data-status'))
      expect(statuses.length).toBeGreaterThan(0)
      expect(new Set(statuses)).toEqual(new Set(['reported']))
    })
    await waitFor(() => expect(screen.getByTestId('task-count').textContent).toBe('1,000 tasks'))
    await user.click(screen.getByRole('button', { name: 'all' }))
    await waitFor(() => expect(new Set([...rows()].map((r) => r.querySelector('[data-status]')?.getAttribute('data-status')))).toEqual(new Set(['reported', 'pending'])))
  })

  it('searches by hash and by target once typing pauses', async () => {
    const user = userEvent.setup()
    renderPage()
    await waitFor(() => expect(rows().length).toBeGreaterThan(0))
    const box = screen.getByRole('searchbox', { name: 'Search tasks' })
    await user.type(box, (1230).toString(16).padStart(64, '0'))
    await waitFor(() => expect(rowIds()).toEqual([1230]))
    await user.clear(box)
    await user.type(box, 'site1234.example')
    await waitFor(() => expect(rowIds()).toEqual([1234]))
    expect(screen.getByTestId('task-count').textContent).toBe('1 task')
  })

  it('shows a state changed in the database without a reload (polling without an event stream)', async () => {
    renderPage(300)
    await waitFor(() => expect(rows().length).toBeGreaterThan(0))
    const id = rowIds()[2] as number
    const badge = () => screen.getByRole('grid').querySelector(`[data-task-id="${id}"] [data-status]`)?.getAttribute('data-status')
    const before = badge()
    const next = before === 'running' ? 'failed_analysis' : 'running'
    h.sql('UPDATE tasks SET status = ? WHERE id = ?', next, id)
    await waitFor(() => expect(badge()).toBe(next), { timeout: 5_000 })
    expect(screen.getByRole('grid').querySelector(`[data-task-id="${id}"]`)).not.toBeNull()
  })

  it('has no Route column on a host that routes nothing, while no task has a route', async () => {
    expect((await h.json<{ routed: boolean }>('/aviary/routes')).body.routed).toBe(false)
    renderPage()
    await waitFor(() => expect(rows().length).toBeGreaterThan(0))
    const headers = [...screen.getByTestId('task-header').querySelectorAll('span')].map((e) => e.textContent)
    expect(headers).toEqual(['ID', 'Status', 'Target', 'Category', 'Machine', 'Score', 'Added'])
    expect(rows()[0]?.querySelectorAll('[role="gridcell"]')).toHaveLength(headers.length)
    // The Target column takes the rest of the row and never less than 8rem.
    expect(screen.getByTestId('task-header').className).toContain('minmax(8rem,1fr)')
  })

  it('marks a sample that did not start, and names the archive a member came from', async () => {
    const notStarted = TASKS - 3
    const member = TASKS - 4
    h.sql(`UPDATE tasks SET status = 'reported', score = 0, errors = ? WHERE id = ?`,
      JSON.stringify(['the sample did not start: Exec format error (ENOEXEC)']), notStarted)
    h.sql(`UPDATE tasks SET category = 'archive', target = '/data/storage/uploads/y/inner1.sh', options = 'archive=two.zip,filename=d/inner1.sh' WHERE id = ?`, member)
    renderPage()
    await waitFor(() => expect(rows().length).toBeGreaterThan(0))
    const row = (id: number) => screen.getByRole('grid').querySelector(`[data-task-id="${id}"]`) as HTMLElement
    await waitFor(() => expect(row(notStarted).querySelector('[data-not-started]')).not.toBeNull())
    expect(row(notStarted).querySelector('[data-not-started]')?.getAttribute('title')).toBe('The sample did not start: Exec format error (ENOEXEC)')
    // No green 0.0 that reads as clean: the score says there is nothing to score.
    expect(row(notStarted).querySelector('[data-level]')).toBeNull()
    expect(within(row(notStarted)).getByTestId('score-not-started').getAttribute('title')).toContain('did not start')
    expect(within(row(member)).getByTestId('target-archive').textContent).toBe('two.zip › inner1.sh')
    // Another reported task keeps its score.
    expect(row(TASKS - 5).querySelector('[data-not-started]')).toBeNull()
  })

  it('shows each task\'s route in its own column, empty until the analysis chose one', async () => {
    h.sql("UPDATE tasks SET route = 'internet' WHERE id = ?", TASKS)
    h.sql("UPDATE tasks SET route = 'vpn\u202Ede' WHERE id = ?", TASKS - 1)
    renderPage()
    await waitFor(() => expect(rows().length).toBeGreaterThan(0))
    const headers = [...screen.getByTestId('task-header').querySelectorAll('span')].map((e) => e.textContent)
    const column = headers.indexOf('Route')
    expect(column).toBeGreaterThan(-1)
    const routeOf = (id: number) => screen.getByRole('grid').querySelector(`[data-task-id="${id}"]`)?.querySelectorAll('[role="gridcell"]')[column]
    await waitFor(() => expect(routeOf(TASKS)?.textContent).toBe('internet'))
    expect(routeOf(TASKS - 1)?.textContent).toBe('vpnRLOde') // shown, never applied
    expect(routeOf(TASKS - 1)?.querySelector('[data-control="RLO"]')).not.toBeNull()
    expect(routeOf(TASKS - 2)?.textContent).toBe('')
    // The column lines up with its header: every row has one cell per header.
    expect(screen.getByRole('grid').querySelector(`[data-task-id="${TASKS}"]`)?.querySelectorAll('[role="gridcell"]')).toHaveLength(headers.length)
  })

  it('moves the selection with the arrows and opens the task with Enter', async () => {
    const user = userEvent.setup()
    renderPage()
    await waitFor(() => expect(rows().length).toBeGreaterThan(0))
    const grid = screen.getByRole('grid', { name: 'Tasks' })
    act(() => grid.focus())
    await user.keyboard('{ArrowDown}{ArrowDown}{ArrowUp}')
    expect(grid.getAttribute('aria-activedescendant')).toBe('task-row-1')
    const selectedId = document.getElementById('task-row-1')?.getAttribute('data-task-id')
    expect(document.getElementById('task-row-1')?.getAttribute('aria-selected')).toBe('true')
    await user.keyboard('{Enter}')
    expect(await screen.findByText(`task page ${selectedId}`)).toBeTruthy()
  })
})
