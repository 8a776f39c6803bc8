// Signing in to the UI of a service started with an API token, in Debian's Chromium through
// Playwright: the page loads, its calls are refused, the sign-in form takes the token, and then
// the task list, the live event stream (which cannot send an Authorization header) and a reload
// all work on the session cookie, which the page's scripts cannot read. Sign out brings the form back.
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startHarness, type Harness } from '../service-harness'

// page.evaluate callbacks run in the browser; this file compiles without the DOM library.
interface InPage { document: { cookie: string } }

const SHOTS = path.resolve('test-results/ui-e2e') // not committed, like ui.e2e.test.ts's
const TOKEN = 'ui-e2e-sign-in-token'
const bearer = { authorization: `Bearer ${TOKEN}` }
let h: Harness
let browser: Browser
let page: Page

beforeAll(async () => {
  h = await startHarness({ apiToken: TOKEN }) // the harness runs no engine: tasks stay pending
  for (const url of ['http://first.example/', 'http://second.example/']) {
    expect((await h.post('/tasks/create/url', new URLSearchParams({ url }), bearer)).status).toBe(200)
  }
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.on('pageerror', (err) => { throw err })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await h?.stop()
})

describe('the UI of a service with an API token', () => {
  it('asks for the token, then shows the task list live; sign out asks again', async () => {
    await page.goto(`${h.url}/#/tasks`)
    const dialog = page.getByRole('dialog', { name: 'Sign in' })
    await dialog.waitFor({ timeout: 15_000 })
    expect(await page.locator('[role="row"][data-task-id]').count()).toBe(0)

    await dialog.getByLabel('API token').fill('wrong')
    await dialog.getByRole('button', { name: 'Sign in' }).click()
    expect(await dialog.getByRole('alert').textContent()).toBe('token: not the API token of this service')
    mkdirSync(SHOTS, { recursive: true })
    await page.screenshot({ path: path.join(SHOTS, 'sign-in.png') })

    await dialog.getByLabel('API token').fill(TOKEN)
    await dialog.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('[role="row"][data-task-id="2"]').waitFor({ timeout: 15_000 })
    expect(await dialog.count()).toBe(0)
    expect(await page.locator('[role="row"][data-task-id]').count()).toBe(2)
    // The event stream opened on the cookie: a task added elsewhere appears without a reload.
    await expect.poll(() => page.locator('[data-live]').getAttribute('data-live'), { timeout: 15_000 }).toBe('true')
    await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://third.example/' }), bearer)
    await page.locator('[role="row"][data-task-id="3"]').waitFor({ timeout: 15_000 })
    // HttpOnly: the page's scripts never see the session, and the token is nowhere in the page.
    expect(await page.evaluate(() => (globalThis as unknown as InPage).document.cookie)).not.toContain('aviary_session')
    const cookies = await page.context().cookies(h.url)
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])).toEqual([['aviary_session', true, 'Strict']])
    expect(cookies[0]!.value).not.toContain(TOKEN)

    // A reload keeps the session.
    await page.reload()
    await page.locator('[role="row"][data-task-id="3"]').waitFor({ timeout: 15_000 })
    expect(await dialog.count()).toBe(0)

    await page.getByRole('button', { name: 'Sign out' }).click()
    await dialog.waitFor({ timeout: 15_000 })
    expect(await page.context().cookies(h.url)).toEqual([])
    expect((await h.get('/tasks/list', { cookie: `aviary_session=${cookies[0]!.value}` })).status).toBe(401)
  }, 90_000)
})
