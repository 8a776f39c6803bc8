// @vitest-environment jsdom
// The Task page before its report, against a real service whose engine has no machine: the facts
// (the target's file name, absolute times with the relative form on hover), a task no machine can
// run said so up front, the actions that do not apply disabled with the reason, the timeline in
// words, and the time a running analysis has used of its timeout.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter, Route, Routes } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { setLocalApiBase } from '../api/http'
import { TaskPage } from './Task'

let h: Harness

async function submit(name: string, content: string, fields: Record<string, string> = {}): Promise<number> {
  const b = '----aviarystate'
  const parts = Object.entries(fields).map(([k, v]) => `--${b}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('')
  const body = `${parts}--${b}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n${content}\r\n--${b}--\r\n`
  const res = await fetch(`${h.url}/tasks/create/file`, { method: 'POST', body, headers: { 'Content-Type': `multipart/form-data; boundary=${b}` } })
  const out = (await res.json()) as { task_id?: number }
  if (typeof out.task_id !== 'number') throw new Error(`submit: ${res.status} ${JSON.stringify(out)}`)
  return out.task_id
}

async function errorsOf(id: number): Promise<string[]> {
  return ((await (await fetch(`${h.url}/tasks/view/${id}`)).json()) as { task: { errors: string[] } }).task.errors
}

beforeAll(async () => {
  h = await startHarness({ engine: true, machines: { machines: [] } })
  setLocalApiBase(h.url)
})
afterAll(async () => h?.stop())
afterEach(cleanup)

function page(at: string) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(
    <QueryClientProvider client={qc}>
      <MemoryRouter initialEntries={[at]}><Routes><Route path="/tasks/:id" element={<TaskPage />} /></Routes></MemoryRouter>
    </QueryClientProvider>
  )
}

const fact = (name: string) => screen.getByRole('rowheader', { name }).nextElementSibling as HTMLElement

describe('Task page, before the report', () => {
  it('names the target by its file name, and gives times in full with the relative form on hover', async () => {
    const id = await submit('dropper.sh', '#!/bin/sh\necho hi\n')
    page(`/tasks/${id}`)
    await screen.findByRole('heading', { name: `Task ${id}` })
    expect(fact('Target').textContent).toBe('dropper.sh')
    expect(fact('Target').innerHTML).not.toContain('uploads')
    const added = fact('Added').querySelector('time') as HTMLElement
    expect(added.textContent).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    expect(added.getAttribute('title')).toMatch(/ago|now|second/)
  })

  it('says that no machine can run a task instead of promising a report, and disables what does not apply', async () => {
    const id = await submit('nomachine.sh', '#!/bin/sh\n')
    await waitFor(async () => expect((await errorsOf(id)).join()).toMatch(/^unschedulable: /), { timeout: 10_000 })
    page(`/tasks/${id}`)
    const note = await screen.findByTestId('unschedulable')
    expect(note.textContent).toMatch(/^No machine can run this task: no analysis machines are configured/)
    expect(screen.queryByText(/The report appears here/)).toBeNull()
    const actions = screen.getByRole('group', { name: 'Task actions' })
    for (const name of ['Reboot', 'Rereport']) {
      const button = within(actions).getByRole('button', { name }) as HTMLButtonElement
      expect(button.disabled).toBe(true)
      expect(button.title).toMatch(/pending/)
    }
    expect((within(actions).getByRole('button', { name: 'Reschedule' }) as HTMLButtonElement).disabled).toBe(false)
  })

  it('shows the stages in words, "finished: True" as the analyzer ending normally', async () => {
    const id = await submit('timeline.sh', '#!/bin/sh\n')
    const now = Date.now()
    h.sql('INSERT INTO task_events (task_id, at, stage, message) VALUES (?, ?, ?, ?)', id, now, 'analyzer_started', 'cuckoo agent 0.10')
    h.sql('INSERT INTO task_events (task_id, at, stage, message) VALUES (?, ?, ?, ?)', id, now + 1, 'finished', 'True')
    page(`/tasks/${id}`)
    const timeline = await screen.findByRole('list', { name: 'Timeline' })
    const finished = await within(timeline).findByText('analysis finished')
    const entry = finished.closest('li') as HTMLElement
    expect(entry.textContent).toContain('the analyzer ended normally')
    expect(entry.textContent).not.toContain('True')
    expect(within(timeline).getByText('analyzer started')).toBeTruthy()
  })

  it('shows how much of its timeout a running analysis has used', async () => {
    const id = await submit('running.sh', '#!/bin/sh\nsleep 100\n', { timeout: '120' })
    h.sql("UPDATE tasks SET status = 'running', started_on = datetime('now', 'localtime', '-30 seconds') WHERE id = ?", id)
    page(`/tasks/${id}`)
    const bar = await screen.findByRole('progressbar', { name: 'Analysis time' })
    expect(Number(bar.getAttribute('aria-valuemax'))).toBe(120)
    const used = Number(bar.getAttribute('aria-valuenow'))
    expect(used).toBeGreaterThanOrEqual(29)
    expect(used).toBeLessThan(60)
    expect(bar.getAttribute('aria-valuetext')).toMatch(/^\d+ s of 2 min 00 s$/)
    const actions = screen.getByRole('group', { name: 'Task actions' })
    expect((within(actions).getByRole('button', { name: 'Delete…' }) as HTMLButtonElement).title).toMatch(/running/)
  })
})
