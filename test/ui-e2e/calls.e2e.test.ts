// The calls view end to end, as an analyst uses it: a shell sample really runs on a network-
// namespace guest (physical driver, `aviary agent`, namespace avcv58) under Aviary's analyzer and
// strace; processing writes the calls store; the built UI, served by the same instance at /, shows
// them in Debian's Chromium through playwright-core. A process picked in the tree shows its calls,
// paged by the service's GET /aviary/tasks/<id>/calls/<pid> (the requests are watched), filtered
// by category and searched there; failed calls are marked; the selected call's arguments are shown
// whole. Screenshots go to test-results/ui-e2e/ (not committed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import type { Harness } from '../service-harness'
import { submitFile, waitForTask } from '../e2e/e2e-helpers'

const SHOTS = path.resolve('test-results/ui-e2e')
const SAMPLE = `#!/bin/sh
wget -q -O /tmp/cv-page.html http://calls-view.example/payload
cat /etc/passwd > /dev/null
cat /tmp/cv-missing-file 2> /dev/null
echo dropped > /tmp/cv-dropped.txt
`

let guest: NetnsGuest
let h: Harness
let browser: Browser
let page: Page
let id: number
/** Every calls request the page made (path and query). */
const asked: string[] = []

const grid = () => page.getByRole('grid', { name: 'Calls' })
const rowCount = async () => Number(await grid().getAttribute('aria-rowcount'))
const shownCalls = () => grid().locator('[role="row"][data-call]')

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  ;({ guest, h } = await startNetnsAnalysisNode({ index: 58, prefix: 'avcv' }))
  id = await submitFile(h, 'calls-view.sh', SAMPLE, { timeout: '30' })
  expect(await waitForTask(h, id, ['reported', 'failed_analysis', 'failed_processing'], 120_000)).toBe('reported')
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 1000 } })
  page.on('pageerror', (err) => { throw err })
  page.on('request', (r) => {
    const u = new URL(r.url())
    if (u.pathname.startsWith(`/aviary/tasks/${id}/calls`)) asked.push(`${u.pathname}${u.search}`)
  })
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await h?.stop()
  await guest?.close()
})

describe('the calls view in Chromium, on a real run', () => {
  it('shows the calls of the process picked in the tree, paged by the service', async () => {
    await page.goto(`${h.url}/#/tasks/${id}?tab=behavior`)
    const tree = page.getByRole('tree', { name: 'Process tree' })
    await tree.waitFor()
    await grid().waitFor()
    await expect.poll(() => shownCalls().count()).toBeGreaterThan(0)
    // The view reads the service's listing and pages, never the full report.
    expect(asked[0]).toBe(`/aviary/tasks/${id}/calls`)
    expect(asked.some((a) => a.startsWith(`/aviary/tasks/${id}/calls/`) && a.includes('offset=0'))).toBe(true)

    // wget: many calls (the loader, its libraries, the fetch); a window of them in the DOM.
    await tree.getByRole('button', { name: 'wget', exact: true }).click()
    await expect.poll(() => page.getByRole('combobox', { name: 'Process' }).evaluate((s: { selectedOptions: { text: string }[] }) => s.selectedOptions[0]?.text ?? '')).toMatch(/^wget · pid/)
    await expect.poll(rowCount).toBeGreaterThan(60)
    expect(await shownCalls().count()).toBeLessThan(Math.min(await rowCount(), 70))
    await page.screenshot({ path: path.join(SHOTS, 'calls-wget.png'), fullPage: true })

    // Its network calls, filtered by the service: the connect to the fake internet on port 80.
    await page.getByRole('group', { name: 'Categories' }).getByRole('button', { name: /^network/ }).click()
    await expect.poll(() => asked.some((a) => /category=network/.test(a))).toBe(true)
    await expect.poll(async () => (await shownCalls().allTextContents()).join('\n')).toContain(`ip_address=${guest.internetIp}`)
    const categories = await shownCalls().evaluateAll((rows) => rows.map((r) => r.querySelectorAll('[role="gridcell"]')[2]?.textContent))
    expect(new Set(categories)).toEqual(new Set(['network']))
  }, 60_000)

  it('searches a process\'s calls, marks the failed ones and shows a call whole from the keyboard', async () => {
    const tree = page.getByRole('tree', { name: 'Process tree' })
    // The second cat reads a file that does not exist: its openat failed with ENOENT.
    const cats = tree.getByRole('button', { name: 'cat', exact: true })
    expect(await cats.count()).toBe(2)
    await cats.nth(1).click()
    await page.getByRole('group', { name: 'Categories' }).getByRole('button', { name: /^file/ }).click()
    await page.getByRole('searchbox', { name: 'Search calls' }).fill('cv-missing')
    await expect.poll(() => asked.some((a) => /q=cv-missing/.test(a))).toBe(true)
    await expect.poll(rowCount).toBe(1)
    const failed = shownCalls().first()
    expect(await failed.getAttribute('data-failed')).toBe('true')
    expect(await failed.textContent()).toMatch(/openat.*\/tmp\/cv-missing-file.*-1 ENOENT.*failed/)

    // The first cat's read of /etc/passwd, chosen with the keyboard: the details show its arguments.
    await cats.nth(0).click()
    await page.getByRole('searchbox', { name: 'Search calls' }).fill('/etc/passwd')
    await expect.poll(rowCount).toBeGreaterThan(0)
    await grid().focus()
    await page.keyboard.press('Home')
    const details = page.getByRole('region', { name: 'Call details' })
    await expect.poll(async () => details.textContent()).toMatch(/\/etc\/passwd/)
    expect(await details.getByRole('rowheader', { name: 'filepath' }).locator('xpath=following-sibling::td').textContent()).toBe('/etc/passwd')
    await page.screenshot({ path: path.join(SHOTS, 'calls-search.png'), fullPage: true })
  }, 60_000)

  it('counts the processes, not the roots of the tree', async () => {
    const processes = (await h.json<{ behavior: { processes: unknown[] } }>(`/tasks/report/${id}`)).body.behavior.processes.length
    expect(processes).toBeGreaterThan(2)
    const title = await page.getByRole('region', { name: 'Processes' }).locator('h3').textContent()
    expect(title).toBe(`Processes(${processes})`)
  })
})
