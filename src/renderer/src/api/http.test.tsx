// @vitest-environment jsdom
// The page's calls of Aviary's own routes check each answer against the route's response schema
// (src/shared/api): a real service's answers fit and come back typed; an answer of another shape,
// or one that is not JSON, is an HttpError that names the request and what does not fit, and the
// page shows it where it shows errors instead of drawing wrong numbers.
//
// The misshapen answers come from a stand-in for a broken or hostile remote server (a few lines
// of node:http, saved as a connection and reached through the real service's proxy): a real
// Aviary never sends them, which is the point.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { act, cleanup, render, screen } from '@testing-library/react'
import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { MemoryRouter } from 'react-router'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { fetchJson, HttpError, sendJson, setLocalApiBase } from './http'
import { useUi } from '../state/ui'
import { DashboardPage } from '../pages/Dashboard'
import { ConnectionList } from '../../../shared/api/responses'
import { ErrorBody, TASK_STATUSES } from '../../../shared/api/schemas'
import { AviaryStats } from '../../../shared/api/ui-schemas'
import { ControlledMachines } from '../../../shared/api/machine-controls'
import { OneRule, RetentionSettings, RunList } from '../../../shared/api/retention'

let h: Harness
let broken: Server
let conn: number

/** Aviary's routes as a broken server answers them: numbers as text, an HTML page with a 200. */
function startBroken(): Promise<string> {
  broken = createServer((req, res) => {
    const send = (status: number, type: string, body: string) => { res.writeHead(status, { 'Content-Type': type }); res.end(body) }
    const url = req.url ?? ''
    if (url === '/cuckoo/status') return send(200, 'application/json', JSON.stringify({ version: '2.0.7', hostname: 'broken', tasks: { total: 1 } }))
    if (url.startsWith('/aviary/stats')) {
      // Everything as Aviary sends it but the total, a number written as a word.
      const byStatus = Object.fromEntries(TASK_STATUSES.map((st) => [st, 0]))
      return send(200, 'application/json', JSON.stringify({
        tasks: { total: 'many', by_status: byStatus }, days: [], machines: { available: 1, total: 1 }, disk: { total: 10, free: 5, used: 5 },
        cpu: { load: [0.1, 0.1, 0.1], cores: 2 }, memory: { total: 10, free: 5 }
      }))
    }
    if (url === '/aviary/machines') return send(200, 'text/html', '<!DOCTYPE html><title>Maintenance</title>')
    send(404, 'application/json', JSON.stringify({ message: 'no such route' }))
  })
  return new Promise((resolve) => broken.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(broken.address() as AddressInfo).port}`)))
}

beforeAll(async () => {
  const [harness, brokenUrl] = await Promise.all([startHarness({ machines: { machines: [] } }), startBroken()])
  h = harness
  setLocalApiBase(h.url)
  const saved = await fetch(`${h.url}/aviary/connections`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'broken', url: brokenUrl }) })
  const body = (await saved.json()) as { connection?: { id: number } }
  if (!body.connection) throw new Error(`saving the connection: ${saved.status} ${JSON.stringify(body)}`)
  conn = body.connection.id
}, 60_000)
afterEach(() => {
  cleanup()
  act(() => useUi.getState().setConnection(null))
})
afterAll(async () => {
  broken?.closeAllConnections() // the proxy's keep-alive sockets would hold close() open
  await Promise.all([h?.stop(), new Promise((r) => broken?.close(r))])
})

describe('fetchJson and sendJson', () => {
  it("read a real service's answers with their routes' schemas", async () => {
    const settings = await fetchJson(null, '/aviary/retention', RetentionSettings)
    expect(settings.rules).toEqual([])
    const { rule } = await sendJson(null, 'POST', '/aviary/retention/rules', OneRule, { name: 'old', older_than_days: 30 })
    expect(rule).toMatchObject({ name: 'old', older_than_days: 30, enabled: true })
    expect((await fetchJson(null, '/aviary/retention', RetentionSettings)).rules.map((r) => r.id)).toEqual([rule.id])
    expect((await sendJson(null, 'DELETE', `/aviary/retention/rules/${rule.id}`, ErrorBody)).message).toEqual(expect.any(String))
    expect((await fetchJson(null, '/aviary/retention/runs?limit=5', RunList)).runs).toEqual([])
    expect((await fetchJson(null, '/aviary/connections', ConnectionList)).connections.map((c) => c.name)).toEqual(['broken'])
    expect((await fetchJson(null, '/aviary/stats', AviaryStats)).tasks.total).toBe(0)
    expect(await fetchJson(null, '/aviary/machines', ControlledMachines)).toMatchObject({ machines: [] })
  })

  it('refuse an answer of another shape, naming the request and the first misfit', async () => {
    const err = await fetchJson(conn, '/aviary/stats', AviaryStats).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(HttpError)
    expect((err as HttpError).status).toBe(0)
    expect((err as HttpError).message).toBe('GET /aviary/stats: answered 200 with JSON of another shape (/tasks/total must be integer)')
    const html = await fetchJson(conn, '/aviary/machines', ControlledMachines).catch((e: unknown) => e)
    expect(html).toBeInstanceOf(HttpError)
    expect((html as HttpError).message).toBe('GET /aviary/machines: answered 200 with a body that is not JSON: "<!DOCTYPE html><title>Maintenance</title…"') // its first 40 characters
    // A refusal is still the server's own message and status.
    const refused = await fetchJson(conn, '/aviary/retention', RetentionSettings).catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 404, message: 'no such route' })
  })

  it('a page shows the misfit where it shows errors, and draws nothing from it', async () => {
    act(() => useUi.getState().setConnection(conn))
    const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } })
    render(<QueryClientProvider client={qc}><MemoryRouter><DashboardPage /></MemoryRouter></QueryClientProvider>)
    const alert = await screen.findByRole('alert', {}, { timeout: 15_000 })
    expect(alert.textContent).toBe('Could not load the status: GET /aviary/stats: answered 200 with JSON of another shape (/tasks/total must be integer)')
    expect(screen.queryByTestId('tasks-total')).toBeNull()
    expect(screen.queryByRole('list', { name: 'Tasks by state' })).toBeNull()
  })
})
