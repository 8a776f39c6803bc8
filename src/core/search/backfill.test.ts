// Reports written before the search index, as after an upgrade from an Aviary without it: a real
// service processes real analysis folders into report.json, the database is then put back as such
// an Aviary leaves it (no report terms, no scores, schema 6), and migration 7 queues the reported
// tasks. The backfill must find the same terms processing found, give scores back, survive a
// report that is not JSON and a section too large to parse, and lose to processing when a task is
// reported again meanwhile. Last, a service started on that folder does it by itself.
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { finishRun, startHarness, type Harness } from '../../../test/service-harness'
import { submitFile, waitForTask } from '../../../test/e2e/e2e-helpers'
import type { TaskSearchResult } from '../../shared/api/ui-schemas'
import { openDatabase, type Db } from '../db/database'
import { TaskTermsRepository } from '../db/task-terms.repository'
import { createLayout } from '../storage/layout'
import { SearchBackfill } from './backfill'

const DROPPED = 'what the old sample dropped\n'
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

interface Term { kind: string; term: string }

describe('the search index for reports written before it', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'aviary-backfill-'))
  const ids: Record<'dropper' | 'url' | 'broken' | 'large', number> = { dropper: 0, url: 0, broken: 0, large: 0 }
  const before = new Map<number, { terms: Term[]; score: number | null }>()
  const reportFile = (id: number) => path.join(dataDir, 'storage', 'analyses', String(id), 'reports', 'report.json')
  const termsIn = (db: Database.Database | Db, id: number): Term[] =>
    db.prepare("SELECT kind, term FROM task_terms WHERE task_id = ? AND kind <> 'tag' ORDER BY kind, term").all(id) as Term[]

  /** The database as an Aviary before the index left it: no report terms, no scores, no queue, schema 6. */
  function asBeforeTheIndex(): void {
    const db = new Database(path.join(dataDir, 'aviary.db'))
    db.exec(`DELETE FROM task_terms WHERE kind <> 'tag'; UPDATE tasks SET score = NULL;
      DROP TRIGGER search_backfill_delete; DROP TABLE search_backfill; PRAGMA user_version = 6;`)
    db.close()
  }

  beforeAll(async () => {
    writeFileSync(path.join(dataDir, 'machines.json'), JSON.stringify({ machines: [] }))
    const h: Harness = await startHarness({ engine: true, dataDir })
    try {
      const processed = async (id: number, files: Record<string, string>) => {
        finishRun(h, id, files)
        expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
      }
      const now = Date.now()
      const behavior = [
        { type: 'process', pid: 10, ppid: 1, command_line: 'sh /tmp/old.sh', exe: '/bin/sh', first_seen: now, exited: now + 5 },
        { type: 'process', pid: 11, ppid: 10, command_line: 'sh -c id', exe: '/bin/sh', first_seen: now + 1, exited: now + 2 },
        { type: 'connection', proto: 'tcp', src: '10.0.0.2', sport: 40000, dst: '203.0.113.61', dport: 443, pid: 10, time: now }
      ].map((e) => JSON.stringify(e)).join('\n') + '\n'
      ids.dropper = await submitFile(h, 'old.sh', '#!/bin/sh\nid\n')
      await processed(ids.dropper, {
        'logs/behavior.jsonl': behavior,
        'files/0123456789abcdef_old.txt': DROPPED,
        'files.json': JSON.stringify({ path: 'files/0123456789abcdef_old.txt', filepath: '/tmp/old.txt', pids: [10] }) + '\n'
      })
      const created = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://old-landing.example/path?x=1' }))
      ids.url = created.body['task_id'] as number
      await processed(ids.url, {})
      for (const key of ['broken', 'large'] as const) {
        ids[key] = await submitFile(h, `${key}.sh`, `#!/bin/sh\necho ${key}\n`)
        await processed(ids[key], { 'logs/behavior.jsonl': behavior })
      }
      const db = new Database(path.join(dataDir, 'aviary.db'), { readonly: true })
      for (const id of Object.values(ids)) {
        const score = db.prepare('SELECT score FROM tasks WHERE id = ?').pluck().get(id) as number | null
        before.set(id, { terms: termsIn(db, id), score })
      }
      db.close()
    } finally {
      await h.stop()
    }
    // Not JSON at all; and a network section far larger than the others.
    writeFileSync(reportFile(ids.broken), '{"network": {"domains": [')
    const large = JSON.parse(readFileSync(reportFile(ids.large), 'utf8')) as { network: { domains: unknown[] } }
    large.network.domains = Array.from({ length: 3000 }, (_, i) => ({ domain: `n${i}.too-large.example`, ip: '198.51.100.1' }))
    writeFileSync(reportFile(ids.large), JSON.stringify(large))
    asBeforeTheIndex()
  }, 180_000)

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  it('reads each queued report once and finds what processing found', async () => {
    expect(before.get(ids.dropper)!.terms).toEqual(expect.arrayContaining([
      { kind: 'sig', term: 'starts_shell' }, { kind: 'ip', term: '203.0.113.61' }, { kind: 'hash', term: sha256(DROPPED) }
    ]))
    expect(before.get(ids.url)!.terms).toEqual(expect.arrayContaining([{ kind: 'domain', term: 'old-landing.example' }]))
    expect(before.get(ids.dropper)!.score).toBeGreaterThan(0)

    const db = openDatabase(path.join(dataDir, 'aviary.db'))
    try {
      const queue = new TaskTermsRepository(db)
      expect(queue.queuedCount()).toBe(4) // migration 7: every reported task without report terms
      for (const id of Object.values(ids)) expect(termsIn(db, id)).toEqual([])

      const lines: string[] = []
      const log = { info: (m: string) => lines.push(`info ${m}`), warn: (m: string) => lines.push(`warn ${m}`) }
      const backfill = new SearchBackfill({ db, layout: createLayout(dataDir), log, maxPartBytes: 64 * 1024 })
      backfill.start()
      await backfill.idle()

      expect(queue.queuedCount()).toBe(0)
      for (const key of ['dropper', 'url'] as const) {
        const id = ids[key]
        expect(termsIn(db, id), key).toEqual(before.get(id)!.terms)
        expect(db.prepare('SELECT score FROM tasks WHERE id = ?').pluck().get(id), key).toBe(before.get(id)!.score)
      }
      expect(termsIn(db, ids.broken)).toEqual([])
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^warn task ${ids.broken}: search index: its report could not be read \\(.+\\); rereport the task to index it$`)))
      // The large section is left out with a reason; the report's other parts are indexed.
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^warn task ${ids.large}: search index: too large to read here, left out: network \\(\\d+ MiB\\)`)))
      expect(termsIn(db, ids.large)).toContainEqual({ kind: 'sig', term: 'starts_shell' })
      expect(termsIn(db, ids.large).some((t) => t.term.endsWith('too-large.example'))).toBe(false)
      expect(lines.at(-1)).toBe('info search index: 3 of 4 earlier reports indexed, 1 could not be read (see above)')
      expect(lines.some((l) => l.includes(dataDir))).toBe(false) // a log line names tasks, not server paths
    } finally {
      db.close()
    }
  })

  it('loses to processing: a task reported again, or deleted, leaves the queue', () => {
    const db = openDatabase(path.join(dataDir, 'aviary.db'))
    try {
      const repo = new TaskTermsRepository(db)
      db.prepare('INSERT INTO search_backfill (task_id) VALUES (?), (?)').run(ids.dropper, ids.url)
      const newer = [{ kind: 'domain' as const, term: 'newer.example' }]
      expect(repo.replace(ids.dropper, newer)).toBe(true) // processing, while the backfill reads the old report
      expect(repo.replaceQueued(ids.dropper, [{ kind: 'domain', term: 'older.example' }])).toBe(false)
      expect(termsIn(db, ids.dropper)).toEqual(newer)
      db.prepare('DELETE FROM tasks WHERE id = ?').run(ids.url)
      expect(repo.queuedCount()).toBe(0)
      expect(repo.replaceQueued(ids.url, newer)).toBe(false)
    } finally {
      db.close()
    }
  })

  it('runs by itself in a service started on such a data folder', async () => {
    asBeforeTheIndex()
    const h = await startHarness({ engine: true, dataDir })
    try {
      const found = async (q: string): Promise<number[]> => {
        const { status, body } = await h.json<TaskSearchResult>(`/aviary/tasks?q=${encodeURIComponent(q)}`)
        expect(status, q).toBe(200)
        return body.tasks.map((t) => t.id)
      }
      await expect.poll(() => found('sig:starts_shell'), { timeout: 20_000 }).toEqual([ids.large, ids.dropper].sort((a, b) => b - a))
      expect(await found(`hash:${sha256(DROPPED)}`)).toEqual([ids.dropper])
      expect(await found('ip:203.0.113.61')).toEqual([ids.large, ids.dropper].sort((a, b) => b - a))
      const scored = await h.json<TaskSearchResult>('/aviary/tasks?sort=score')
      expect(scored.body.tasks.find((t) => t.id === ids.dropper)?.score).toBe(before.get(ids.dropper)!.score)
    } finally {
      await h.stop()
    }
  }, 60_000)
})
