// `aviary retention` as a user runs it: the built bin (test/global-setup.ts bundles out/cli before
// the tests), a real process, on a stopped service's data directory and against a running
// service's API with a token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { createLayout } from '../storage/layout'
import { openDatabase } from '../db/database'
import { TasksRepository } from '../db/tasks.repository'
import { formatDatetime } from '../../shared/time'
import { RuleStore } from './retention-rules'
import { RetentionLog } from './retention-log'
import { startHarness, type Harness } from '../../../test/service-harness'
import type { Preview, RunRecord } from '../../shared/api/retention'

const run = promisify(execFile)
const BIN = path.resolve('bin/aviary.js')
const TOKEN = 'retention-cli-token'
let dataDir: string

interface Result { code: number; stdout: string; stderr: string }
async function aviary(...args: string[]): Promise<Result> {
  // AVIARY_URL from the developer's shell must not turn a local run into a remote one.
  const env = { ...process.env, AVIARY_URL: '', AVIARY_API_TOKEN: '' }
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

/** Reported tasks finished `days` ago, with analysis folders, in a data directory no service uses. */
function seed(dir: string, targets: string[], days: number): number[] {
  const layout = createLayout(dir)
  layout.ensure()
  const db = openDatabase(layout.database)
  const repo = new TasksRepository(db)
  const when = formatDatetime(new Date(Date.now() - days * 86_400_000))
  const ids = targets.map((target) => {
    const id = repo.insert({
      category: 'url', target, sample_id: null, package: null, timeout: 0, priority: 1, options: null, machine: null,
      platform: null, tags: [], custom: null, owner: '', memory: false, enforce_timeout: false, clock: null, submit_id: null, errors: []
    })
    db.prepare("UPDATE tasks SET status = 'reported', score = 1, added_on = ?, completed_on = ? WHERE id = ?").run(when, when, id)
    mkdirSync(layout.analysis(id), { recursive: true })
    writeFileSync(path.join(layout.analysis(id), 'analysis.log'), 'x'.repeat(5000))
    return id
  })
  db.close()
  return ids
}

beforeAll(() => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'aviary-retention-cli-'))
})
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

describe('aviary retention', () => {
  it('lists, previews, dry-runs and runs on a data directory', async () => {
    const [plain, hostile] = seed(dataDir, ['http://old.example/', 'http://evil.example/\u001b[2J\u001b]0;owned\u0007'], 40)
    const [young] = seed(dataDir, ['http://young.example/'], 1)
    const rules = new RuleStore(dataDir)
    rules.add({ name: 'older than a month', older_than_days: 30 })
    rules.add({ name: 'off', statuses: ['failed_analysis'], enabled: false })

    const list = await aviary('retention', 'list', '--data', dataDir)
    expect(list).toEqual({ code: 0, stderr: '', stdout: [
      'Schedule: off (every 60 min when on)',
      '#1 older than a month [enabled]: completed more than 30 days ago; keeps samples',
      '#2 off [disabled]: status failed_analysis; keeps samples',
      ''
    ].join('\n') })

    const preview = await aviary('retention', 'preview', '--data', dataDir)
    expect(preview.code).toBe(0)
    expect(preview.stdout).toMatch(new RegExp(`^\\s+${plain}\\s+reported\\s+1\\.0\\s+40\\.0\\s+\\S+ KiB\\s+http://old\\.example/$`, 'm'))
    // A target's control characters never reach the terminal.
    expect([...preview.stdout].filter((c) => c !== '\n' && (c < ' ' || c === '\u007f'))).toEqual([])
    expect(preview.stdout).toContain('http://evil.example/?[2J?]0;owned?')
    expect(preview.stdout).toMatch(/^2 tasks, \S+ KiB; 0 samples, 0 B; disk free now/m)
    const json = JSON.parse((await aviary('retention', 'preview', '--data', dataDir, '--json')).stdout) as Preview
    expect(json.tasks.map((t) => t.id)).toEqual([plain, hostile])

    const dry = await aviary('retention', 'run', '--dry-run', '--data', dataDir)
    expect(dry.stdout).toMatch(/dry run: nothing was deleted\n$/)
    expect(existsSync(createLayout(dataDir).analysis(plain!))).toBe(true)

    const done = await aviary('retention', 'run', '--data', dataDir, '--json')
    expect(done.code).toBe(0)
    const record = JSON.parse(done.stdout) as RunRecord
    expect(record.deleted.map((t) => t.id)).toEqual(json.tasks.map((t) => t.id))
    expect(record).toMatchObject({ trigger: 'cli', rules: [1], skipped: [], freed_bytes: json.total.bytes })
    for (const id of [plain!, hostile!]) expect(existsSync(createLayout(dataDir).analysis(id))).toBe(false)
    expect(existsSync(createLayout(dataDir).analysis(young!))).toBe(true)
    expect(new RetentionLog(dataDir).recent(1)[0]).toEqual(record)

    const again = await aviary('retention', 'run', '--data', dataDir)
    expect(again.stdout).toMatch(/^0 tasks and 0 samples deleted, 0 B freed, 0 skipped$/m)
  })

  it('refuses a data directory a service is using, and says how to reach it', async () => {
    const h = await startHarness()
    try {
      const res = await aviary('retention', 'run', '--data', h.dataDir)
      expect(res.code).toBe(1)
      expect(res.stderr).toMatch(/^aviary retention: another Aviary \(pid \d+\) is using this data directory .*--remote and the address it printed when it started \(http:\/\/127\.0\.0\.1:8090 unless/)
    } finally {
      await h.stop()
    }
    const missing = await aviary('retention', 'list', '--data', path.join(dataDir, 'nothing-here'))
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringMatching(/no Aviary data in .*nothing-here \(no aviary\.db\)/) })
    expect((await aviary('retention', 'preview', '--rule', 'x')).stderr).toMatch(/a rule id/)
  })

  it('works through a running service\'s API with its token', async () => {
    const h: Harness = await startHarness({ apiToken: TOKEN })
    const bearer = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
    try {
      const created = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://remote.example/' }), { authorization: `Bearer ${TOKEN}` })
      const id = created.body.task_id as number
      h.sql("UPDATE tasks SET status = 'failed_analysis' WHERE id = ?", id)
      await fetch(`${h.url}/aviary/retention/rules`, { method: 'POST', headers: bearer, body: JSON.stringify({ name: 'failed', statuses: ['failed_analysis'] }) })

      const refused = await aviary('retention', 'list', '--remote', h.url)
      expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/GET \/aviary\/retention: /) })
      const list = await aviary('retention', 'list', '--remote', h.url, '--api-token', TOKEN)
      expect(list.stdout).toContain('#1 failed [enabled]: status failed_analysis; keeps samples')
      const preview = await aviary('retention', 'preview', '--rule', '1', '--remote', h.url, '--api-token', TOKEN)
      expect(preview.stdout).toMatch(new RegExp(`^\\s+${id}\\s+failed_analysis\\s+-\\s+`, 'm'))
      const done = await aviary('retention', 'run', '--remote', h.url, '--api-token', TOKEN)
      expect(done.stdout).toMatch(/^1 tasks and 0 samples deleted, 0 B freed, 0 skipped$/m)
      expect((await h.get(`/tasks/view/${id}`, { authorization: `Bearer ${TOKEN}` })).status).toBe(404)
    } finally {
      await h.stop()
    }
  })
})
