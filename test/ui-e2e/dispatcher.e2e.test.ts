// The UI's Connections page against a real dispatcher (`aviary dist`'s composition root) with one
// real node (asking for an API token): the dispatcher is added as a connection through the local service's proxy, and its
// nodes and tasks are shown. Chromium as in ui.e2e.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startHarness, type Harness } from '../service-harness'
import { startDispatcher, type Dispatcher } from '../../src/dispatcher/index'

const SHOTS = path.resolve('test-results/ui-e2e')

let local: Harness
let node: Harness
let dist: Dispatcher
let dir: string
let browser: Browser
let page: Page

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-ui-dist-'))
  local = await startHarness()
  node = await startHarness({ apiToken: 'node-token' })
  // No worker: the task stays pending, as the page is about showing what the dispatcher holds.
  dist = await startDispatcher({ dataDir: dir, host: '127.0.0.1', port: 0, worker: false, logLevel: 'warn' })
  const reg = await fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: 'lab-node-1', url: node.url, token: 'node-token' }) })
  expect(reg.status).toBe(200)
  // A node disabled with DELETE is no longer listed (the spec), so the page does not show it.
  const old = await fetch(`${dist.url}/api/node`, { method: 'POST', body: new URLSearchParams({ name: 'retired-node', url: node.url, token: 'node-token' }) })
  expect(old.status).toBe(200)
  expect((await fetch(`${dist.url}/api/node/retired-node`, { method: 'DELETE' })).status).toBe(200)
  const form = new FormData()
  form.append('file', new Blob(['#!/bin/sh\necho hi\n']), 'dispatched\u202Egpj.sh')
  const sub = await fetch(`${dist.url}/api/task`, { method: 'POST', body: form })
  expect(sub.status).toBe(200)
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.on('pageerror', (err) => { throw err })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await dist?.stop()
  await node?.stop()
  await local?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('a dispatcher as a connection', () => {
  it('is recognised as a dispatcher, and shows its nodes and tasks', async () => {
    await page.goto(`${local.url}/#/connections`)
    const add = page.getByRole('form', { name: 'Add a connection' })
    await add.getByLabel('Name').fill('team dispatcher')
    await add.getByLabel('URL').fill(dist.url)
    await add.getByRole('button', { name: 'Add' }).click()
    const entry = page.getByRole('listitem', { name: 'Connection team dispatcher' })
    await entry.waitFor({ timeout: 15_000 })
    await entry.getByRole('button', { name: 'Nodes and tasks' }).click()
    const nodes = page.getByRole('region', { name: 'Dispatcher nodes' })
    await nodes.getByText('lab-node-1').waitFor({ timeout: 15_000 })
    // Its health and that the dispatcher holds its token (never the token itself).
    const row = nodes.locator('tr[data-node="lab-node-1"]')
    expect(await row.textContent()).toMatch(/up\s*token/)
    expect(await nodes.locator('tr[data-node]').count()).toBe(1)
    expect(await nodes.textContent()).not.toContain('retired-node')
    expect(await page.content()).not.toContain('node-token')
    const tasks = page.getByRole('region', { name: 'Dispatcher tasks' })
    await tasks.getByText('pending').first().waitFor({ timeout: 15_000 })
    expect(await tasks.textContent()).toContain('dispatchedRLOgpj.sh')
    await page.screenshot({ path: path.join(SHOTS, 'connections-dispatcher.png'), fullPage: true })
  }, 60_000)
})
