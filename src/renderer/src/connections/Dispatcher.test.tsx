// @vitest-environment jsdom
// A dispatcher in use, against real parts: this computer's service (whose proxy reaches the
// dispatcher), `aviary dist` with its worker, and one analysis node (engine off, so the task it is
// given stays pending there). The pages that do not apply to a dispatcher (the task list, the
// dashboard, the machines) are disabled with the reason instead of failing; the dispatcher's nodes
// are named, and its tasks open to what the dispatcher knows of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { createMemoryRouter, RouterProvider } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { startDispatcher, type Dispatcher } from '../../../dispatcher/index'
import { setLocalApiBase } from '../api/http'
import { useUi } from '../state/ui'
import { routes } from '../routes'

let local: Harness
let node: Harness
let dist: Dispatcher
let dir: string
let connection: number
let taskId: number

beforeAll(async () => {
  // jsdom has no matchMedia (the Layout's system theme reads it).
  window.matchMedia = ((q: string) => ({ matches: false, media: q, addEventListener: () => undefined, removeEventListener: () => undefined })) as unknown as typeof window.matchMedia
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-ui-dist-'))
  ;[local, node] = await Promise.all([
    startHarness(),
    startHarness({ machines: { driver: 'kvm', machines: [{ name: 'win10', ip: '192.168.122.101', snapshot: 'clean' }] } })
  ])
  dist = await startDispatcher({
    dataDir: dir, host: '127.0.0.1', port: 0, logLevel: 'warn',
    workerTuning: { assignIntervalMs: 100, nodeIntervalMs: 100, requestTimeoutMs: 2000, log: { info: () => undefined, warn: () => undefined } }
  })
  // Bodies by hand: under jsdom, FormData, Blob and URLSearchParams are jsdom's, which Node's fetch does not take.
  const reg = await fetch(`${dist.url}/api/node`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: `name=lab-node-1&url=${encodeURIComponent(node.url)}` })
  expect(reg.status).toBe(200)
  const b = '----aviarydist'
  const body = `--${b}\r\nContent-Disposition: form-data; name="file"; filename="dispatched.sh"\r\nContent-Type: application/octet-stream\r\n\r\n#!/bin/sh\necho hi\n\r\n--${b}--\r\n`
  taskId = ((await (await fetch(`${dist.url}/api/task`, { method: 'POST', body, headers: { 'Content-Type': `multipart/form-data; boundary=${b}` } })).json()) as { task_id: number }).task_id
  // The worker gives it to the node.
  await waitFor(async () => {
    const t = ((await (await fetch(`${dist.url}/api/task/${taskId}`)).json()) as { tasks: Record<string, { node_id: number | null }> }).tasks[taskId]
    expect(t?.node_id).not.toBeNull()
  }, { timeout: 15_000 })
  const saved = await fetch(`${local.url}/aviary/connections`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'team dispatcher', url: dist.url }) })
  connection = ((await saved.json()) as { connection: { id: number; kind: string } }).connection.id
  setLocalApiBase(local.url)
  useUi.getState().setConnection(connection)
}, 60_000)

afterAll(async () => {
  cleanup()
  useUi.getState().setConnection(null)
  await dist?.stop()
  await Promise.all([local?.stop(), node?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

function app(at: string) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
  return render(<QueryClientProvider client={qc}><RouterProvider router={createMemoryRouter(routes, { initialEntries: [at] })} /></QueryClientProvider>)
}

describe('a dispatcher in use', () => {
  it('disables the pages that do not apply, with the reason, and never shows their errors', async () => {
    for (const [at, label] of [['/tasks', 'Tasks'], ['/', 'Dashboard'], ['/machines', 'Machines']] as const) {
      app(at)
      const note = await screen.findByTestId('not-for-dispatcher')
      expect(note.textContent).toMatch(/team dispatcher is a dispatcher/)
      const nav = within(screen.getByRole('navigation', { name: 'Main' }))
      const item = nav.getByText(label)
      expect(item.getAttribute('aria-disabled')).toBe('true')
      expect(item.getAttribute('title')).toMatch(/dispatcher/)
      await new Promise((r) => setTimeout(r, 300))
      expect(screen.queryByRole('alert')).toBeNull()
      expect(document.body.textContent).not.toMatch(/No such endpoint|Loading…/)
      cleanup()
    }
  })

  it('submits files and URLs to the dispatcher, and says it takes no hashes', async () => {
    const user = userEvent.setup()
    app('/submit')
    expect((await screen.findByTestId('submit-to-dispatcher')).textContent).toMatch(/hashes cannot be sent/)
    await user.type(screen.getByRole('textbox', { name: /URLs and hashes/ }), 'http://example.com/from-ui{Enter}d41d8cd98f00b204e9800998ecf8427e')
    await user.click(screen.getByRole('button', { name: 'Submit 1 URL, 1 hash' }))
    const items = await screen.findAllByRole('listitem')
    await waitFor(() => expect(items.map((li) => li.dataset.state).sort()).toEqual(['done', 'error']))
    const done = items.find((li) => li.dataset.state === 'done') as HTMLElement
    const id = Number(within(done).getByRole('link', { name: /^task \d+$/ }).textContent?.replace('task ', ''))
    const t = ((await (await fetch(`${dist.url}/api/task/${id}`)).json()) as { tasks: Record<string, { url: string }> }).tasks[id]
    expect(t?.url).toBe('http://example.com/from-ui')
    expect(items.find((li) => li.dataset.state === 'error')?.textContent).toMatch(/keeps no samples/)
  })

  it('names the nodes of its tasks, and opens a task to what the dispatcher knows of it', async () => {
    const user = userEvent.setup()
    app('/connections')
    const entry = await screen.findByRole('listitem', { name: 'Connection team dispatcher' }, { timeout: 10_000 })
    await user.click(within(entry).getByRole('button', { name: 'Nodes and tasks' }))
    const tasks = await screen.findByRole('region', { name: 'Dispatcher tasks' })
    const row = await within(tasks).findByText('dispatched.sh', {}, { timeout: 10_000 })
    const tr = row.closest('tr') as HTMLElement
    expect(within(tr).getByText('lab-node-1')).toBeTruthy()
    await user.click(within(tr).getByRole('link', { name: `Task ${taskId}` }))
    const view = await screen.findByRole('region', { name: `Dispatcher task ${taskId}` })
    await within(view).findByText('dispatched.sh')
    expect(view.textContent).toContain('lab-node-1')
    expect(view.textContent).toMatch(/The report comes here once the node has analysed it/)
  })
})
