// `aviary retention list | preview | run`: the rules, their dry run, and a run, either on the
// local data directory (no service may be using it: the run takes its lock, as `aviary serve`
// does) or through the API of a running service (`--remote`, or AVIARY_URL), as `aviary submit`.
import { existsSync } from 'node:fs'
import { Command, InvalidArgumentError, Option } from 'commander'
import type { TSchema, Static } from 'typebox'
import { AnswerShape, ApiClientError, decodeAnswer, refusalMessage } from '../../shared/api/client'
import { printable } from '../../shared/api/request-errors'
import { Preview, RetentionSettings, RunRecord, type Rule } from '../../shared/api/retention'
import { createLayout } from '../storage/layout'
import { DataDirLockedError, lockDataDir } from '../storage/data-lock'
import { openDatabase } from '../db/database'
import { TasksRepository } from '../db/tasks.repository'
import { TasksService } from '../tasks/tasks.service'
import { ApiError } from '../errors'
import { DEFAULT_HOST, DEFAULT_PORT, defaultDataDir } from '../config'
import { RetentionService } from './retention.service'

interface Where { data?: string; remote?: string; apiToken?: string; json?: boolean }
interface Backend {
  settings(): Promise<RetentionSettings>
  preview(rule: number | undefined): Promise<Preview>
  run(rule: number | undefined): Promise<RunRecord>
  close(): void
}

const ruleId = (v: string): number => {
  if (!/^[0-9]{1,9}$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('a rule id (a whole number from 1)')
  return Number(v)
}

/** Adds `aviary retention` to the program; `done` receives the exit status. */
export function retentionCommand(program: Command, done: (code: number) => void): void {
  const cmd = program.command('retention').description('rules that delete old analyses: list them, preview what they would delete, run them')
  const where = (c: Command) => c
    .option('--data <dir>', 'data directory of a stopped service (default: $AVIARY_DATA or the per-user data directory)')
    .addOption(new Option('--remote <base>', `a running service's API instead, e.g. http://${DEFAULT_HOST}:${DEFAULT_PORT}`).env('AVIARY_URL'))
    .addOption(new Option('--api-token <token>', 'Bearer token of the API').env('AVIARY_API_TOKEN'))
    .option('--json', 'print the answer as JSON')
  where(cmd.command('list').description('the rules and the schedule'))
    .action(async (o: Where) => done(await withBackend(o, async (b) => print(o, await b.settings(), formatSettings))))
  where(cmd.command('preview').description('dry run: every task the enabled rules (or one rule) would delete now, and the disk it would free'))
    .option('--rule <id>', 'only this rule (enabled or not)', ruleId)
    .action(async (o: Where & { rule?: number }) => done(await withBackend(o, async (b) => print(o, await b.preview(o.rule), formatPreview))))
  where(cmd.command('run').description('delete what the preview lists now, one task at a time as /tasks/delete does'))
    .option('--rule <id>', 'only this rule (enabled or not)', ruleId)
    .option('--dry-run', 'only preview: delete nothing')
    .action(async (o: Where & { rule?: number; dryRun?: boolean }) => done(await withBackend(o, async (b) =>
      o.dryRun ? print(o, await b.preview(o.rule), (p) => `${formatPreview(p)}dry run: nothing was deleted\n`) : print(o, await b.run(o.rule), formatRun))))
}

async function withBackend(o: Where, use: (b: Backend) => Promise<void>): Promise<number> {
  let backend: Backend
  try {
    backend = o.remote ? remote(o.remote, o.apiToken) : local(o.data ?? defaultDataDir())
  } catch (err) {
    process.stderr.write(`aviary retention: ${(err as Error).message}\n`)
    return 1
  }
  try {
    await use(backend)
    return 0
  } catch (err) {
    process.stderr.write(`aviary retention: ${err instanceof ApiError || err instanceof ApiClientError ? err.message : String(err)}\n`)
    return 1
  } finally {
    backend.close()
  }
}

function local(dataDir: string): Backend {
  const layout = createLayout(dataDir)
  if (!existsSync(layout.database)) throw new Error(`no Aviary data in ${layout.root} (no aviary.db); give --data, or --remote for a service`)
  let unlock: () => void
  try {
    unlock = lockDataDir(layout.root)
  } catch (err) {
    if (!(err instanceof DataDirLockedError)) throw err
    throw new Error(`${err.message} (${layout.root}): while it runs, ask it through its API with --remote and the address it printed when it started (http://${DEFAULT_HOST}:${DEFAULT_PORT} unless started with -H or -p), or AVIARY_URL`, { cause: err })
  }
  const db = openDatabase(layout.database)
  const tasks = new TasksRepository(db)
  const retention = new RetentionService({ db, layout, tasks: new TasksService(tasks, layout) })
  return {
    settings: async () => retention.settings(),
    preview: (rule) => retention.preview({ rule }),
    run: (rule) => retention.run({ rule }, 'cli'),
    close: () => { db.close(); unlock() }
  }
}

/** The retention routes of a service; answers are checked against their schemas and capped. */
function remote(base: string, token: string | undefined): Backend {
  const root = base.replace(/\/+$/, '')
  const call = async <T extends TSchema>(method: string, path: string, shape: T, body?: unknown): Promise<Static<T>> => {
    const where = `${root} ${method} ${path}`
    let res: Response
    try {
      res = await fetch(root + path, {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body)
      })
    } catch (err) {
      const e = err as Error
      throw new ApiClientError(0, `cannot reach ${root}: ${e.cause instanceof Error ? e.cause.message : e.message}`)
    }
    const text = await readCapped(res, MAX_ANSWER)
    if (!res.ok) throw new ApiClientError(res.status, `${where}: ${refusalMessage(res.status, res.statusText, text)}`)
    return decodeAnswer(where, res.status, text, new AnswerShape(shape), MAX_ANSWER)
  }
  return {
    settings: () => call('GET', '/aviary/retention', RetentionSettings),
    preview: (rule) => call('GET', `/aviary/retention/preview${rule === undefined ? '' : `?rule=${rule}`}`, Preview),
    run: (rule) => call('POST', '/aviary/retention/run', RunRecord, rule === undefined ? {} : { rule }),
    close: () => undefined
  }
}

/** A run that deleted 200,000 tasks answers ~40 MB of JSON. */
const MAX_ANSWER = 256 * 1024 * 1024

async function readCapped(res: Response, cap: number): Promise<string | null> {
  const reader = res.body?.getReader()
  if (!reader) return ''
  const decoder = new TextDecoder()
  let text = ''
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return text + decoder.decode()
    size += value.byteLength
    if (size > cap) { await reader.cancel(); return null }
    text += decoder.decode(value, { stream: true })
  }
}

function print<T>(o: Where, value: T, format: (v: T) => string): void {
  process.stdout.write(o.json ? JSON.stringify(value, null, 2) + '\n' : format(value))
}

// ---- text output. Targets are a sample's names and URLs: control characters never reach the terminal.

const shown = (s: string) => printable(s)

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  let v = n
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++ }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`
}

export function describeRule(r: Rule): string {
  const parts: string[] = []
  if (r.older_than_days !== undefined) parts.push(`${r.age_of} more than ${r.older_than_days} days ago`)
  if (r.statuses) parts.push(`status ${r.statuses.join(' or ')}`)
  if (r.score_below !== undefined) parts.push(`score below ${r.score_below}`)
  if (r.score_above !== undefined) parts.push(`score above ${r.score_above}`)
  if (r.tags) parts.push(`tagged ${r.tags.map(shown).join(' or ')}`)
  if (r.larger_than_mb !== undefined) parts.push(`folder larger than ${r.larger_than_mb} MiB`)
  if (r.free_until_gb !== undefined) parts.push(`largest first until ${r.free_until_gb} GiB are free`)
  return `${parts.join(', ')}; ${r.keep_samples ? 'keeps samples' : 'removes unused samples'}`
}

function formatSettings(s: RetentionSettings): string {
  const sch = s.schedule
  const lines = [sch.enabled
    ? `Schedule: every ${sch.interval_minutes} min, next run ${sch.next_run_at ?? '-'}${sch.last_run_at ? `, last ${sch.last_run_at}` : ''}`
    : `Schedule: off (every ${sch.interval_minutes} min when on)`]
  if (s.rules.length === 0) lines.push('No rules.')
  for (const r of s.rules) lines.push(`#${r.id} ${shown(r.name)} [${r.enabled ? 'enabled' : 'disabled'}]: ${describeRule(r)}`)
  return lines.join('\n') + '\n'
}

interface Row { id: number; status: string; score: number | null; bytes: number; target: string }
function table(rows: Row[], age?: (id: number) => string): string[] {
  const out = [`${'ID'.padStart(7)}  ${'STATUS'.padEnd(17)} ${'SCORE'.padStart(5)} ${age ? 'AGE(d)'.padStart(7) : ''} ${'SIZE'.padStart(10)}  TARGET`]
  for (const t of rows) {
    out.push(`${String(t.id).padStart(7)}  ${t.status.padEnd(17)} ${(t.score === null ? '-' : t.score.toFixed(1)).padStart(5)} ${age ? age(t.id).padStart(7) : ''} ${formatBytes(t.bytes).padStart(10)}  ${shown(t.target)}`)
  }
  return out
}

function formatPreview(p: Preview): string {
  const ages = new Map(p.tasks.map((t) => [t.id, t.age_days.toFixed(1)]))
  const lines = [`Rules: ${p.rules.length ? p.rules.join(', ') : 'none enabled'}`]
  if (p.tasks.length) lines.push(...table(p.tasks, (id) => ages.get(id) ?? ''))
  for (const s of p.samples) lines.push(`  sample ${s.sha256} (${formatBytes(s.bytes)}) goes too: no other task uses it`)
  lines.push(`${p.total.tasks} tasks, ${formatBytes(p.total.bytes)}; ${p.samples.length} samples, ${formatBytes(p.total.sample_bytes)}` +
    (p.disk ? `; disk free now ${formatBytes(p.disk.free)} of ${formatBytes(p.disk.total)}` : ''))
  return lines.join('\n') + '\n'
}

function formatRun(r: RunRecord): string {
  const lines = [`Rules: ${r.rules.length ? r.rules.join(', ') : 'none enabled'}`]
  if (r.deleted.length) lines.push('Deleted:', ...table(r.deleted))
  for (const t of r.deleted) if (t.warning) lines.push(`  task ${t.id}: ${shown(t.warning)}`)
  for (const s of r.samples) lines.push(`  sample ${s.sha256} removed (${formatBytes(s.bytes)})`)
  for (const s of r.skipped) lines.push(`  task ${s.id} skipped: ${shown(s.reason)}`)
  lines.push(`${r.deleted.length} tasks and ${r.samples.length} samples deleted, ${formatBytes(r.freed_bytes)} freed, ${r.skipped.length} skipped`)
  return lines.join('\n') + '\n'
}
