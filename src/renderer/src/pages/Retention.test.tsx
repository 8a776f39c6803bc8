// @vitest-environment jsdom
// The Retention page against a real service: a rule written in the form and previewed before it
// is saved, the service's refusal shown with its field marked, a saved rule's preview listing the
// tasks and the space, "Delete" deleting exactly those (a pending task left alone), the record of
// the run, the schedule turned on, and rules enabled and disabled.
import type { ReactElement } from 'react'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { useUi } from '../state/ui'
import { RetentionPage } from './Retention'

let h: Harness
const ids: Record<string, number> = {}

/** A URL task in `status`, finished `days` ago with `score`, and an analysis folder of `kib` KiB. */
async function task(name: string, status: string, days: number, score: number | null, kib = 20): Promise<number> {
  const created = await h.post('/tasks/create/url', new URLSearchParams({ url: `http://${name}.example/` }))
  const id = created.body.task_id as number
  const d = new Date(Date.now() - days * 86_400_000)
  const stamp = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')} 09:00:00`
  h.sql('UPDATE tasks SET status = ?, score = ?, added_on = ?, completed_on = ? WHERE id = ?', status, score, stamp, status === 'pending' ? null : stamp, id)
  writeFileSync(path.join(h.analysisDir(id), 'analysis.log'), Buffer.alloc(kib * 1024, 0x61))
  return id
}

beforeAll(async () => {
  h = await startHarness()
  ids.old = await task('old-harmless', 'reported', 40, 1)
  ids.failed = await task('old-failed', 'failed_analysis', 50, null)
  ids.high = await task('old-dangerous', 'reported', 40, 8)
  ids.young = await task('young', 'reported', 2, 0)
  ids.pending = await task('old-pending', 'pending', 60, 0)
  setLocalApiBase(h.url)
  useUi.getState().setConnection(null)
})
afterEach(() => cleanup())
afterAll(async () => h.stop())

function renderPage(ui: ReactElement) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(<QueryClientProvider client={qc}><MemoryRouter>{ui}</MemoryRouter></QueryClientProvider>)
}

const previewRows = () => within(screen.getByRole('table', { name: 'Tasks the run would delete' })).getAllByRole('row').slice(1)
const rowIds = () => previewRows().map((r) => Number(r.getAttribute('data-task-id')))

describe('Retention page', () => {
  it('previews a rule as written, refuses a contradiction naming the field, and saves it', async () => {
    const user = userEvent.setup()
    renderPage(<RetentionPage />)
    expect(await screen.findByText('No rules yet.', {}, { timeout: 10_000 })).toBeTruthy()
    expect((screen.getByRole('button', { name: 'Preview all enabled rules' }) as HTMLButtonElement).disabled).toBe(true)
    await user.click(screen.getByRole('button', { name: 'New rule' }))
    const form = screen.getByRole('form', { name: 'New rule' })
    await user.type(within(form).getByLabelText('Name'), 'old and harmless')
    await user.type(within(form).getByLabelText('Older than (days)'), '30')
    await user.type(within(form).getByLabelText('Score below'), '2')
    await user.type(within(form).getByLabelText('Score above'), '5')
    await user.click(within(form).getByRole('button', { name: 'Save rule' }))
    const alert = await within(form).findByRole('alert')
    expect(alert.textContent).toBe('score_below: must be above score_above (5): no score is below 2 and above 5')
    expect(within(form).getByLabelText('Score below').getAttribute('aria-invalid')).toBe('true')

    await user.clear(within(form).getByLabelText('Score above'))
    await user.click(within(form).getByRole('button', { name: 'Preview' }))
    await screen.findByRole('heading', { name: /Preview: the rule as written/ })
    // Tasks without a score never match a score condition: the failed one is not listed.
    expect(rowIds()).toEqual([ids.old])
    expect(screen.getByText('Save the rule to run it.')).toBeTruthy()
    expect(screen.queryByRole('button', { name: /^Delete these/ })).toBeNull()

    await user.click(within(form).getByRole('button', { name: 'Save rule' }))
    const table = await screen.findByRole('table', { name: 'Retention rules' })
    expect(within(table).getByText('finished more than 30 days ago, score below 2')).toBeTruthy()
    expect(within(table).getByText('kept')).toBeTruthy()

    // One task: said in the singular everywhere ("Delete these 1 task" was the fault).
    const saved = within(table).getByRole('button', { name: 'Preview rule old and harmless' })
    await user.click(saved)
    await screen.findByRole('heading', { name: /^Preview: rule #\d+ old and harmless$/ })
    expect(rowIds()).toEqual([ids.old])
    expect(screen.getByTestId('preview-summary').textContent).toMatch(/^1 task would be deleted, freeing /)
    expect(screen.queryByRole('button', { name: /^Delete these/ })).toBeNull()
    await user.click(screen.getByRole('button', { name: 'Delete this task…' }))
    const question = screen.getByRole('group', { name: /^Delete 1 task, its analysis\? This cannot be undone\.$/ })
    expect(within(question).getByRole('button', { name: 'Yes, delete it' })).toBeTruthy()
    await user.click(within(question).getByRole('button', { name: 'Cancel' }))
    expect((await h.get(`/tasks/view/${ids.old}`)).status).toBe(200)
  })

  it('previews a saved rule with its tasks and space, deletes exactly those, and records the run', async () => {
    const user = userEvent.setup()
    const added = await fetch(`${h.url}/aviary/retention/rules`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'old ones', older_than_days: 30, keep_samples: false })
    })
    const rule = ((await added.json()) as { rule: { id: number } }).rule
    renderPage(<RetentionPage />)
    const row = (await screen.findByRole('table', { name: 'Retention rules' })).querySelector(`tr[data-rule-id="${rule.id}"]`) as HTMLElement
    expect(within(row).getByText('removed when unused')).toBeTruthy()
    await user.click(within(row).getByRole('button', { name: 'Preview rule old ones' }))
    await screen.findByRole('heading', { name: `Preview: rule #${rule.id} old ones` })
    // The pending task is old and has a low score, but is never listed.
    expect(rowIds()).toEqual([ids.old, ids.failed, ids.high])
    const first = within(previewRows()[0]!)
    expect(first.getByRole('link', { name: `#${ids.old}` }).getAttribute('href')).toBe(`/tasks/${ids.old}`)
    expect(first.getByText('http://old-harmless.example/')).toBeTruthy()
    expect(first.getByText('reported')).toBeTruthy()
    expect(first.getByText('1.0')).toBeTruthy()
    expect(screen.getByTestId('preview-summary').textContent).toMatch(/^3 tasks would be deleted, freeing \d+(\.\d+)? KiB\. Disk free now: /)

    // Nothing goes before the question is answered; Cancel leaves everything.
    await user.click(screen.getByRole('button', { name: 'Delete these 3 tasks…' }))
    const question = screen.getByRole('group', { name: /^Delete 3 tasks, their analyses/ })
    expect(question.textContent).toContain('This cannot be undone.')
    await user.click(within(question).getByRole('button', { name: 'Cancel' }))
    expect(screen.queryByRole('group', { name: /^Delete 3 tasks/ })).toBeNull()
    for (const id of [ids.old, ids.failed, ids.high]) expect((await h.get(`/tasks/view/${id}`)).status).toBe(200)
    await user.click(screen.getByRole('button', { name: 'Delete these 3 tasks…' }))
    await user.click(screen.getByRole('button', { name: 'Yes, delete all 3' }))
    const result = await screen.findByTestId('run-result', {}, { timeout: 15_000 })
    expect(result.textContent).toMatch(/^Deleted 3 tasks, freed \d+(\.\d+)? KiB\.$/)
    // What the run did replaces the dry run: no "would be deleted", no links to tasks now gone.
    expect(screen.getByRole('heading', { name: `Run: rule #${rule.id} old ones` })).toBeTruthy()
    expect(screen.queryByTestId('preview-summary')).toBeNull()
    expect(screen.queryByRole('table', { name: 'Tasks the run would delete' })).toBeNull()
    // The pending task, which no rule deletes, is mentioned.
    expect((await screen.findByTestId('retention-unfinished', {}, { timeout: 10_000 })).textContent).toBe('1 task is not finished (pending, running or being processed): no rule deletes it until it is reported or failed.')
    for (const id of [ids.old, ids.failed, ids.high]) expect((await h.get(`/tasks/view/${id}`)).status).toBe(404)
    for (const id of [ids.young, ids.pending]) expect((await h.get(`/tasks/view/${id}`)).status).toBe(200)
    const runs = await screen.findByRole('list', { name: 'Recent retention runs' })
    await waitFor(() => expect(within(runs).getAllByRole('listitem')[0]!.textContent).toMatch(/run from the UI or API: deleted 3 tasks, freed/))
  })

  it('turns the schedule on, and a rule off', async () => {
    const user = userEvent.setup()
    renderPage(<RetentionPage />)
    await screen.findByTestId('schedule-state')
    expect(screen.getByTestId('schedule-state').textContent).toBe('Off: rules run only when you run them.')
    await user.click(screen.getByRole('checkbox', { name: 'Run the enabled rules on a schedule' }))
    await user.clear(screen.getByRole('spinbutton', { name: 'Minutes between runs' }))
    await user.type(screen.getByRole('spinbutton', { name: 'Minutes between runs' }), '120')
    await user.click(screen.getByRole('button', { name: 'Save schedule' }))
    await waitFor(() => expect(screen.getByTestId('schedule-state').textContent).toMatch(/^On: next run \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.$/))
    const settings = (await h.json<{ schedule: { enabled: boolean; interval_minutes: number } }>('/aviary/retention')).body
    expect(settings.schedule).toMatchObject({ enabled: true, interval_minutes: 120 })

    for (const box of screen.getAllByRole('checkbox', { name: /^Rule .* enabled$/ })) {
      await user.click(box)
      await waitFor(() => expect((box as HTMLInputElement).checked).toBe(false))
    }
    await waitFor(() => expect((screen.getByRole('button', { name: 'Preview all enabled rules' }) as HTMLButtonElement).disabled).toBe(true))
    const rules = (await h.json<{ rules: { enabled: boolean }[] }>('/aviary/retention')).body.rules
    expect(rules.map((r) => r.enabled)).toEqual([false, false])
  })
})
