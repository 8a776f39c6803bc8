// The UI end to end, as an analyst uses it: the built renderer served by a headless instance at /,
// driven in Debian's Chromium through Playwright. A network namespace plays the analysis machine
// (physical driver, `aviary agent`), so the dropped sample really runs and its task really moves
// from pending to reported on screen. A second task gets a folder with screenshots and a memory
// dump (the netns guest has no screen), a second instance with an API token plays a remote
// server, and an `all` archive is opened offline. Every page is saved as a screenshot under
// test-results/ui-e2e/ (not committed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import sharp from 'sharp'
import { chromium, type Browser, type Page } from 'playwright-core'
import type { NetnsGuest } from '../guests/netns-guest'
import { startNetnsAnalysisNode } from '../guests/netns-analysis-node'
import { startHarness, type Harness } from '../service-harness'
import { waitForTask } from '../e2e/e2e-helpers'

// The callbacks of page.evaluate run in the browser; this file compiles without the DOM library,
// so they name the few browser globals they use through this type (a cast, gone at run time).
interface InPage {
  DataTransfer: new () => { items: { add(file: unknown): void } }
  File: new (parts: string[], name: string, o: { type: string }) => unknown
  marker?: number
  document: { documentElement: { classList: { contains(name: string): boolean } } }
}

const SHOTS = path.resolve('test-results/ui-e2e')
const SAMPLE = '#!/bin/sh\necho hello from the sample > /tmp/ui-e2e.txt\nsleep 2\n'
const TOKEN = 'remote-token-for-ui-e2e'

let guest: NetnsGuest
let local: Harness
let remote: Harness
let browser: Browser
let page: Page

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true })
}

async function go(hash: string): Promise<void> {
  await page.goto(`${local.url}/#${hash}`)
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  ;({ guest, h: local } = await startNetnsAnalysisNode({ index: 8, prefix: 'avui', tags: ['e2e'] }))
  remote = await startHarness({ apiToken: TOKEN })
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true })
  page.on('pageerror', (err) => { throw err })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await remote?.stop()
  await local?.stop()
  await guest?.close()
})

describe('the UI in Chromium', () => {
  let taskId: number

  it('takes a sample dropped on the window, and the task list follows it to reported without a reload', async () => {
    await go('/submit')
    await page.getByRole('heading', { name: 'Submit' }).waitFor()
    const dt = await page.evaluateHandle((text) => {
      const g = globalThis as unknown as InPage
      const d = new g.DataTransfer()
      d.items.add(new g.File([text], 'invoice\u202Egpj.sh', { type: 'text/x-sh' }))
      return d
    }, SAMPLE)
    for (const type of ['dragenter', 'dragover', 'drop']) await page.dispatchEvent('main', type, { dataTransfer: dt })
    const item = page.getByRole('list', { name: 'Submissions' }).getByRole('listitem').first()
    await expect.poll(() => item.getAttribute('data-state')).toBe('queued')
    // The bidi override is shown as a marker, never applied.
    expect(await item.getByTestId('item-name').textContent()).toBe('invoiceRLOgpj.sh')
    await page.getByRole('button', { name: /^Submit 1 file/ }).click()
    await expect.poll(() => item.getAttribute('data-state'), { timeout: 30_000 }).toBe('done')
    expect(await item.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('100')
    const link = item.getByRole('link', { name: /^task \d+$/ })
    taskId = Number((await link.textContent())!.replace('task ', ''))
    expect(await item.textContent()).toMatch(/[0-9a-f]{64}/) // its sha256 once done
    await shot('submit')

    await go('/tasks')
    await page.evaluate(() => { (globalThis as unknown as InPage).marker = 42 })
    const row = page.locator(`[role="row"][data-task-id="${taskId}"]`)
    await row.waitFor({ timeout: 15_000 })
    const seen = new Set<string>()
    const deadline = Date.now() + 90_000
    while (Date.now() < deadline) {
      const status = await row.locator('[data-status]').getAttribute('data-status').catch(() => null)
      if (status) seen.add(status)
      if (status === 'reported' || status?.startsWith('failed')) break
      await page.waitForTimeout(200)
    }
    expect([...seen].pop()).toBe('reported')
    expect(seen.size).toBeGreaterThan(1) // it changed state on screen
    expect(await page.evaluate(() => (globalThis as unknown as InPage).marker)).toBe(42) // no reload
    await shot('tasks')
  }, 150_000)

  it('opens the report: summary, process tree, and every tab', async () => {
    await go(`/tasks/${taskId}`)
    await page.getByRole('tablist', { name: 'Report' }).waitFor({ timeout: 20_000 })
    expect(await page.locator('main').textContent()).toContain('invoice')
    expect(await page.locator('main').innerHTML()).not.toContain('\u202E')
    await shot('task-summary')
    for (const tab of ['Signatures', 'Behavior', 'Network', 'Static', 'Dropped', 'Raw JSON']) {
      await page.getByRole('tab', { name: tab }).click()
      await page.waitForTimeout(150)
      await shot(`task-${tab.toLowerCase().replace(/\W+/g, '-')}`)
    }
    await page.getByRole('tab', { name: 'Behavior' }).click()
    // The tab switches after the click resolves: wait for its content, then read it.
    await page.locator('main').getByText('sleep 2').first().waitFor({ timeout: 10_000 })
    const behavior = (await page.locator('main').textContent()) ?? ''
    expect(behavior).toContain('sleep 2')
    // The command line names the sample as the guest ran it: the RLO shown as a marker, no mojibake.
    expect(behavior).toMatch(/\/sh \S*invoiceRLOgpj\.sh/)
  })

  it('shows screenshots full size with arrow keys, and downloads a memory dump', async () => {
    const form = new FormData()
    form.append('file', new Blob(['MZ fake']), 'shots.exe')
    // A platform no machine has keeps it pending (else the scheduler may take it first and clear
    // its folder for a run); marked completed, the engine only processes it.
    form.append('platform', 'darwin')
    const created = await local.post('/tasks/create/file', form)
    const id = created.body.task_id as number
    const marked = local.sql("UPDATE tasks SET status = 'completed', started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ? AND status = 'pending'", id)
    expect(marked).toMatchObject({ changes: 1 })
    const dir = local.analysisDir(id)
    mkdirSync(path.join(dir, 'shots'), { recursive: true })
    mkdirSync(path.join(dir, 'memory'), { recursive: true })
    for (const [i, color] of [[1, '#c00'], [2, '#0a0'], [3, '#00c']] as const) {
      const jpg = await sharp({ create: { width: 640, height: 400, channels: 3, background: color } }).jpeg().toBuffer()
      writeFileSync(path.join(dir, 'shots', `000${i}.jpg`), jpg)
    }
    const dump = Buffer.alloc(256 * 1024, 0x5a)
    writeFileSync(path.join(dir, 'memory', '4242-1.dmp'), dump)
    local.service.engine!.processPending()
    expect(await waitForTask(local, id, ['reported', 'failed_processing'], 60_000)).toBe('reported')

    await go(`/tasks/${id}?tab=screenshots`)
    await page.getByRole('tab', { name: 'Screenshots' }).click()
    await page.getByRole('button', { name: /^Screenshot .*open full size/ }).first().click()
    const dialog = page.getByRole('dialog')
    await expect.poll(() => dialog.getAttribute('aria-label')).toBe('Screenshot 1 of 3')
    await page.keyboard.press('ArrowRight')
    await expect.poll(() => dialog.getAttribute('aria-label')).toBe('Screenshot 2 of 3')
    const img = dialog.locator('img')
    await expect.poll(() => img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBe(640)
    await shot('task-screenshots')
    await page.keyboard.press('Escape')
    await expect.poll(() => dialog.count()).toBe(0)

    await page.getByRole('tab', { name: 'Memory' }).click()
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: '4242-1' }).click()])
    const saved = await download.path()
    expect(readFileSync(saved).equals(dump)).toBe(true)
    await shot('task-memory')
  }, 90_000)

  it('adds a second instance as a remote connection and browses its tasks', async () => {
    const form = new FormData()
    form.append('url', 'http://remote-only.example/x')
    const res = await fetch(`${remote.url}/tasks/create/url`, { method: 'POST', body: form, headers: { authorization: `Bearer ${TOKEN}` } })
    expect(res.status).toBe(200)
    await go('/connections')
    const add = page.getByRole('form', { name: 'Add a connection' })
    await add.getByLabel('Name').fill('lab server')
    await add.getByLabel('URL').fill(remote.url)
    await add.getByLabel(/^Token/).fill(TOKEN)
    await add.getByRole('button', { name: 'Add' }).click()
    const entry = page.getByRole('listitem', { name: 'Connection lab server' })
    await entry.waitFor({ timeout: 15_000 })
    await shot('connections')
    await entry.getByRole('button', { name: 'Use' }).click()
    await go('/tasks')
    await page.getByText('http://remote-only.example/x').waitFor({ timeout: 15_000 })
    expect(await page.locator('[role="row"][data-task-id]').count()).toBe(1)
    await shot('tasks-remote')
    // Back to this computer for the next pages.
    await page.getByRole('combobox', { name: 'Server' }).selectOption({ label: 'This computer' })
    await page.locator(`[role="row"][data-task-id="${taskId}"]`).waitFor({ timeout: 15_000 })
  }, 60_000)

  it('opens an `all` archive offline and shows the same report views', async () => {
    const archive = Buffer.from(await (await local.get(`/tasks/report/${taskId}/all?tar=gz`)).arrayBuffer())
    const file = path.join(SHOTS, `task-${taskId}.tar.gz`)
    writeFileSync(file, archive)
    await go('/offline')
    await page.getByLabel('Analysis archive').setInputFiles(file)
    await page.getByRole('tablist', { name: 'Report' }).waitFor({ timeout: 30_000 })
    expect(await page.locator('main').textContent()).toContain('invoice')
    await shot('offline')
  }, 60_000)

  it('draws the dashboard and the machines page, in light and dark', async () => {
    await go('/')
    await page.locator('svg').first().waitFor({ timeout: 15_000 })
    await shot('dashboard')
    await go('/machines')
    await page.getByText('netns8').first().waitFor({ timeout: 15_000 })
    await shot('machines')
    await page.getByLabel('Theme').selectOption('dark')
    expect(await page.evaluate(() => (globalThis as unknown as InPage).document.documentElement.classList.contains('dark'))).toBe(true)
    await shot('machines-dark')
    await go('/')
    await page.locator('svg').first().waitFor()
    await shot('dashboard-dark')
  }, 60_000)
})
