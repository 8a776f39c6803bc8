// Retention end to end, as an analyst uses it: the built UI served by a headless instance, in
// Debian's Chromium through playwright-core. A rule is written on the Retention page, previewed
// before it is saved, saved, previewed again, and run: exactly the previewed tasks go (their
// analysis folders too); the running and pending tasks, old and low-scored as they are, stay.
// axe-core checks each state in both themes; every state is saved under test-results/ui-e2e/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startHarness, type Harness } from '../service-harness'

const SHOTS = path.resolve('test-results/ui-e2e')
const AXE = readFileSync(path.resolve('node_modules/axe-core/axe.min.js'), 'utf8')

interface AxeResult { violations: { id: string; impact: string | null; nodes: { target: string[]; html: string }[] }[] }
interface InPage { axe: { run(context: unknown, options: unknown): Promise<AxeResult> } }

let h: Harness
let browser: Browser
let page: Page
const ids = { dropper: 0, failed: 0, malware: 0, fresh: 0, running: 0, pending: 0 }

/** A URL task in `status`, `days` old, with `score` and an analysis folder of `kib` KiB. */
async function task(name: string, status: string, days: number, score: number | null, kib: number): Promise<number> {
  const created = await h.post('/tasks/create/url', new URLSearchParams({ url: `http://${name}.example/` }))
  const id = created.body.task_id as number
  const d = new Date(Date.now() - days * 86_400_000)
  const stamp = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')} 08:30:00`
  h.sql('UPDATE tasks SET status = ?, score = ?, added_on = ?, started_on = ?, completed_on = ? WHERE id = ?',
    status, score, stamp, status === 'pending' ? null : stamp, ['pending', 'running'].includes(status) ? null : stamp, id)
  writeFileSync(path.join(h.analysisDir(id), 'analysis.log'), Buffer.alloc(kib * 1024, 0x61))
  return id
}

const folder = (id: number) => path.join(h.dataDir, 'storage', 'analyses', String(id))

/** axe-core's serious and critical findings in the page's own part (`main`; the frame around it is the layout's to check). */
async function axeFindings(): Promise<string[]> {
  await page.evaluate(AXE)
  const r = await page.evaluate(() => (globalThis as unknown as InPage).axe.run('main', { resultTypes: ['violations'] }))
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => `${n.target.join(' ')} ${n.html.slice(0, 160)}`).join(', ')}`)
}

/** Saves a screenshot of the state, and checks it with axe in the light and the dark theme. */
async function checkState(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true })
  expect(await axeFindings()).toEqual([])
  await page.getByLabel('Theme').selectOption('dark')
  expect(await axeFindings()).toEqual([])
  await page.screenshot({ path: path.join(SHOTS, `${name}-dark.png`), fullPage: true })
  await page.getByLabel('Theme').selectOption('light')
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  h = await startHarness() // no engine: the test owns every task's state
  ids.dropper = await task('old-dropper', 'reported', 45, 1.2, 300)
  ids.failed = await task('old-failed', 'failed_analysis', 60, 0, 40)
  ids.malware = await task('old-malware', 'reported', 45, 9, 120)
  ids.fresh = await task('fresh', 'reported', 3, 0.5, 80)
  ids.running = await task('old-running', 'running', 45, 0, 60)
  ids.pending = await task('old-pending', 'pending', 45, 0, 10)
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] })
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.on('pageerror', (err) => { throw err })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await h?.stop()
})

describe('Retention in Chromium', () => {
  it('writes a rule, previews it, saves it, and deletes exactly what the preview listed', async () => {
    await page.goto(`${h.url}/#/retention`)
    await page.getByRole('heading', { name: 'Retention', level: 1 }).waitFor({ timeout: 15_000 })
    await page.getByText('No rules yet.').waitFor()
    await checkState('retention-empty')

    await page.getByRole('button', { name: 'New rule' }).click()
    const form = page.getByRole('form', { name: 'New rule' })
    await form.getByLabel('Name').fill('older than 30 days, score below 2')
    await form.getByLabel('Older than (days)').fill('30')
    await form.getByLabel('Score below').fill('2')
    await form.getByRole('button', { name: 'Preview' }).click()
    const table = page.getByRole('table', { name: 'Tasks the run would delete' })
    await table.waitFor()
    const listed = async () => (await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => Number((r as unknown as { dataset: { taskId: string } }).dataset.taskId))))
    // Running and pending tasks are old and scored 0 too, but are never listed.
    expect(await listed()).toEqual([ids.dropper, ids.failed])
    await checkState('retention-draft-preview')

    await form.getByRole('button', { name: 'Save rule' }).click()
    const rules = page.getByRole('table', { name: 'Retention rules' })
    await rules.getByText('finished more than 30 days ago, score below 2').waitFor()

    await rules.getByRole('button', { name: 'Preview rule older than 30 days, score below 2' }).click()
    await page.getByRole('heading', { name: /^Preview: rule #1 / }).waitFor()
    expect(await listed()).toEqual([ids.dropper, ids.failed])
    const row = table.locator(`tr[data-task-id="${ids.dropper}"]`)
    expect(await row.textContent()).toMatch(/^#\d+http:\/\/old-dropper\.example\/reported1\.24[45]\.\d\d+(\.\d)? KiB$/)
    const summary = (await page.getByTestId('preview-summary').textContent()) ?? ''
    expect(summary).toMatch(/^2 tasks would be deleted, freeing 34\d(\.\d)? KiB\. Disk free now: \S+ \S+ of \S+ \S+\.$/)
    await checkState('retention-preview')

    await page.getByRole('button', { name: 'Delete these 2 tasks…' }).click()
    await page.getByRole('group', { name: /^Delete 2 tasks, their analyses/ }).waitFor()
    await page.getByRole('button', { name: 'Yes, delete all 2' }).click()
    const result = page.getByTestId('run-result')
    await result.waitFor({ timeout: 15_000 })
    expect(await result.textContent()).toMatch(/^Deleted 2 tasks, freed 34\d(\.\d)? KiB\.$/)
    await page.getByRole('list', { name: 'Recent retention runs' }).getByText(/run from the UI or API: deleted 2 tasks/).waitFor()
    await checkState('retention-run')

    for (const id of [ids.dropper, ids.failed]) {
      expect((await h.get(`/tasks/view/${id}`)).status).toBe(404)
      expect(existsSync(folder(id))).toBe(false)
    }
    for (const id of [ids.malware, ids.fresh, ids.running, ids.pending]) {
      expect((await h.get(`/tasks/view/${id}`)).status).toBe(200)
      expect(existsSync(folder(id))).toBe(true)
    }
    const runs = (await h.json<{ runs: { deleted: { id: number }[]; trigger: string }[] }>('/aviary/retention/runs')).body.runs
    expect(runs.map((r) => [r.trigger, r.deleted.map((t) => t.id)])).toEqual([['api', [ids.dropper, ids.failed]]])
  }, 120_000)
})
