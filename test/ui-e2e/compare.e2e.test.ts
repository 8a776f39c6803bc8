// Compare, end to end in Debian's Chromium: the built UI served by this computer's service, a
// second service with an API token saved as a remote connection, a reported analysis on each
// (made by each engine from an analysis folder: test/compare-analyses.ts). A row picked on this
// computer's task list and one on the remote's (the Server switch between), Compare, the two side
// by side with what only one has marked; the URL reloaded as a bookmark; an analysis archive as
// one side; "Compare with…" from a task's page; axe-core on the comparison, light and dark. The
// reports are digested in a Web Worker here (a real browser has one); the page logs no error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startHarness, type Harness } from '../service-harness'
import { dropperRuns, reportedAnalysis } from '../compare-analyses'

const SHOTS = path.resolve('test-results/ui-e2e')
const TOKEN = 'compare-e2e-token'
const AXE = readFileSync(path.resolve('node_modules/axe-core/axe.min.js'), 'utf8')

interface AxeResult { violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[] }
interface InPage { axe: { run(context: unknown, options: unknown): Promise<AxeResult> } }

let local: Harness
let remote: Harness
let browser: Browser
let page: Page
let lab = 0
const ids = { a: 0, b: 0 }
const errors: string[] = []

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  ;[local, remote] = await Promise.all([
    startHarness({ engine: true, machines: { machines: [] } }),
    startHarness({ engine: true, machines: { machines: [] }, apiToken: TOKEN })
  ])
  const runs = dropperRuns({ b: { Authorization: `Bearer ${TOKEN}` } })
  ;[ids.a, ids.b] = await Promise.all([reportedAnalysis(local, runs.a), reportedAnalysis(remote, runs.b)])
  const res = await fetch(`${local.url}/aviary/connections`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'lab', url: remote.url, token: TOKEN }) })
  lab = ((await res.json()) as { connection: { id: number } }).connection.id
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.on('pageerror', (err) => errors.push(err.message))
  // Failed requests are named by the response listener; the console's "Failed to load resource"
  // has no URL (and also counts the browser's own /favicon.ico, which the layout's owner handles).
  page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text()) })
  page.on('response', (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`) })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await Promise.all([remote?.stop(), local?.stop()])
})

/**
 * axe-core's serious and critical findings in the page's content, as it is (evaluated, so the page's
 * CSP does not apply to it). The layout around it (header, navigation) is checked by the UI's own e2e.
 */
async function axeFindings(): Promise<string[]> {
  await page.evaluate(AXE)
  const r = await page.evaluate(() => (globalThis as unknown as InPage).axe.run('main', { resultTypes: ['violations'] }))
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`)
}

/** The mark of the row of `table` holding an element that reads exactly `text`. */
const mark = (table: string, text: string) =>
  page.getByRole('table', { name: table }).getByRole('row').filter({ has: page.getByText(text, { exact: true }) }).first().locator('[data-where]').getAttribute('data-where', { timeout: 5000 })

describe('Compare in Chromium', () => {
  it('picks a task here and one on a remote from the task lists, and shows them side by side', async () => {
    await page.goto(`${local.url}/#/tasks`)
    await page.getByRole('checkbox', { name: `Compare task ${ids.a}` }).click()
    await page.getByLabel('Server', { exact: true }).selectOption({ label: 'lab' })
    await page.getByTestId('task-count').filter({ hasText: '1 task' }).waitFor()
    await page.getByRole('checkbox', { name: `Compare task ${ids.b}` }).click()
    await page.screenshot({ path: path.join(SHOTS, 'compare-picked.png') })
    await page.getByRole('button', { name: 'Compare (2 of 2)' }).click()
    await page.getByTestId('score-compare').waitFor({ timeout: 30_000 })
    expect(new URL(page.url()).hash).toBe(`#/compare?a=local%3A${ids.a}&b=${lab}%3A${ids.b}`)

    expect(await mark('signatures', 'contacts_bare_ip')).toBe('b')
    expect(await mark('signatures', 'drops_executable')).toBe('both')
    expect(await mark('process names', 'curl')).toBe('a')
    expect(await mark('process names', 'wget')).toBe('b')
    expect(await mark('domains', 'c2.example')).toBe('b')
    expect(await mark('HTTP requests', 'http://evil.example/payload2')).toBe('b')
    expect(await mark('ELF libraries', 'libselinux.so.1')).toBe('b')
    expect(await page.getByRole('region', { name: 'Dropped files' }).getByTestId('tally').first().textContent()).toBe('0 only in A · 1 only in B · 1 in both')
    await page.screenshot({ path: path.join(SHOTS, 'compare.png'), fullPage: true })
    expect(await axeFindings()).toEqual([])
    await page.getByLabel('Theme').selectOption('dark')
    expect(await axeFindings()).toEqual([])
    await page.screenshot({ path: path.join(SHOTS, 'compare-dark.png'), fullPage: true })
    await page.getByLabel('Theme').selectOption('light')
  }, 90_000)

  it('comes back the same from the URL alone (a bookmark), with only the differences', async () => {
    await page.goto(`${local.url}/#/compare?a=local:${ids.a}&b=${lab}:${ids.b}&diff=1`)
    await page.reload()
    await page.getByTestId('score-compare').waitFor({ timeout: 30_000 })
    expect(await page.getByRole('checkbox', { name: 'Only differences' }).isChecked()).toBe(true)
    expect(await page.getByRole('table', { name: 'signatures' }).getByText('drops_executable').count()).toBe(0)
    expect(await mark('signatures', 'contacts_bare_ip')).toBe('b')
    expect(await axeFindings()).toEqual([])
  }, 60_000)

  it('takes a side from an analysis archive, read in the page\'s worker', async () => {
    const archive = Buffer.from(await (await fetch(`${local.url}/tasks/report/${ids.a}/all`)).arrayBuffer())
    await page.goto(`${local.url}/#/compare?a=${lab}:${ids.b}`)
    await page.getByRole('group', { name: 'Pick task B' }).getByLabel('Report file').setInputFiles({ name: 'all.tar.bz2', mimeType: 'application/x-bzip2', buffer: archive })
    await page.getByTestId('score-compare').waitFor({ timeout: 30_000 })
    expect(new URL(page.url()).hash).toBe(`#/compare?a=${lab}%3A${ids.b}&b=file`)
    expect(await mark('process names', 'curl')).toBe('b')
    expect(await mark('signatures', 'contacts_bare_ip')).toBe('a')
  }, 60_000)

  it('"Compare with…" on a task\'s page picks a remote task from its list', async () => {
    await page.goto(`${local.url}/#/tasks`)
    await page.getByLabel('Server', { exact: true }).selectOption({ label: 'This computer' })
    await page.goto(`${local.url}/#/tasks/${ids.a}`)
    await page.getByRole('button', { name: 'Compare with…' }).click()
    const picker = page.getByRole('group', { name: `Compare task ${ids.a} with` })
    await picker.getByLabel('Server to compare from').selectOption({ label: 'lab' })
    await picker.getByRole('button', { name: new RegExp(`^Compare with task ${ids.b}(?!\\d)`) }).click()
    await page.getByTestId('score-compare').waitFor({ timeout: 30_000 })
    expect(new URL(page.url()).hash).toBe(`#/compare?a=local%3A${ids.a}&b=${lab}%3A${ids.b}`)
    expect(await mark('process names', 'wget')).toBe('b')
    expect(errors).toEqual([])
  }, 60_000)
})
