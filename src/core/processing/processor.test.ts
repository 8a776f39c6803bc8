// The processor in a running service: a task that reaches `completed` is turned into its reports
// and moves to `reported`; /tasks/rereport does it again; a folder whose reports cannot be
// written fails the task's processing with the reason, and nothing the run collected is lost.
// The analysis folders are made by the test (the engine's e2e tests cover real runs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { finishRun, startHarness, type Harness } from '../../../test/service-harness'
import { submitFile, waitForTask, stages } from '../../../test/e2e/e2e-helpers'
import { missingConsumerFields } from '../../../test/cuckoo-report-fields'
import { schemaProblems } from '../../../test/report-contract'

describe('processing finished analyses', () => {
  let h: Harness

  beforeAll(async () => {
    h = await startHarness({ engine: true, machines: { machines: [] } })
  })
  afterAll(async () => h?.stop())

  /** A task as a finished run leaves it: status completed, a folder with the run's files. */
  async function finishedTask(name: string, files: Record<string, string>): Promise<{ id: number; dir: string }> {
    const id = await submitFile(h, name, `#!/bin/sh\necho ${name}\n`)
    return { id, dir: finishRun(h, id, files) }
  }

  it('turns a completed task into report.json and report.html, and moves it to reported', async () => {
    const behavior = [
      { type: 'analyzer', version: 1, package: 'sh', task: 1, time: Date.now() },
      { type: 'process', pid: 10, ppid: 1, command_line: 'sh /tmp/a.sh', exe: '/bin/sh', first_seen: Date.now(), exited: Date.now() + 5 }
    ].map((e) => JSON.stringify(e)).join('\n') + '\n'
    const { id, dir } = await finishedTask('a.sh', {
      'logs/behavior.jsonl': behavior,
      'files/0123456789abcdef_note.txt': 'dropped\n',
      'files.json': JSON.stringify({ path: 'files/0123456789abcdef_note.txt', filepath: '/tmp/note.txt', pids: [10] }) + '\n',
      'analysis.log': '2026-11-23 10:00:00,000 [aviary.engine] INFO: started\n'
    })
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    const report = JSON.parse(readFileSync(path.join(dir, 'reports/report.json'), 'utf8')) as Record<string, Record<string, unknown>>
    expect(Object.keys(report)).toEqual(expect.arrayContaining(['info', 'target', 'static', 'strings', 'behavior', 'network', 'dropped', 'screenshots', 'procmemory', 'signatures', 'debug']))
    expect(schemaProblems(report)).toEqual([])
    expect(report.info).toMatchObject({ id, category: 'file' })
    expect((report.target as { file: { name: string; size: number } }).file).toMatchObject({ name: 'a.sh' })
    // Read and hashed by the service's hashing workers, typed by its batched file(1).
    const sum = (alg: string): string => createHash(alg).update('dropped\n').digest('hex')
    expect(report.dropped).toEqual([expect.objectContaining({
      name: 'note.txt', filepath: '/tmp/note.txt', pids: [10], size: 8, type: 'ASCII text',
      md5: sum('md5'), sha1: sum('sha1'), sha256: sum('sha256'), sha512: sum('sha512'), urls: []
    })])
    expect((report.debug as { log: string[] }).log).toEqual(['2026-11-23 10:00:00,000 [aviary.engine] INFO: started'])
    expect(readFileSync(path.join(dir, 'reports/report.html'), 'utf8')).toMatch(/<html/)
    expect(await stages(h, id)).toEqual(expect.arrayContaining(['processing', 'reported']))
  })

  it('reports a URL task with target.url and every field consumers read', async () => {
    const created = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://evil.example.com/a?b=1' }))
    const id = created.body.task_id as number
    mkdirSync(h.analysisDir(id), { recursive: true })
    h.sql("UPDATE tasks SET status = 'completed', started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ?", id)
    h.service.engine!.processPending()
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    const report = JSON.parse(readFileSync(path.join(h.analysisDir(id), 'reports/report.json'), 'utf8')) as Record<string, Record<string, unknown>>
    // A task that never ran on a machine: MISP's importer reads info.machine unguarded, so only the others.
    expect(missingConsumerFields(report, 'url', ['Cortex', 'FAME', 'CuckooWeb'])).toEqual([])
    expect(schemaProblems(report)).toEqual([])
    expect(report.target).toMatchObject({ category: 'url', url: 'http://evil.example.com/a?b=1' })
  })

  it('rereport processes the task again', async () => {
    const { id, dir } = await finishedTask('b.sh', {})
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    rmSync(path.join(dir, 'reports/report.json'))
    const r = await h.json<{ success: boolean }>(`/tasks/rereport/${id}`)
    expect(r.body.success).toBe(true)
    expect(await waitForTask(h, id, ['reported', 'failed_processing'], 30_000)).toBe('reported')
    expect(existsSync(path.join(dir, 'reports/report.json'))).toBe(true)
    expect((await stages(h, id)).filter((s) => s === 'reported')).toHaveLength(2)
  })

  it('a report that cannot be written fails processing with the reason, keeping what the run collected', async () => {
    // reports/ is a file, not a folder: the report cannot be written there.
    const { id, dir } = await finishedTask('c.sh', { 'files/0123456789abcdef_kept.bin': 'kept', reports: 'not a folder' })
    expect(await waitForTask(h, id, ['failed_processing'], 30_000)).toBe('failed_processing')
    const { body } = await h.json<{ task: { errors: string[] } }>(`/tasks/view/${id}`)
    expect(body.task.errors.some((e) => /^processing failed: /.test(e))).toBe(true)
    expect(readFileSync(path.join(dir, 'files/0123456789abcdef_kept.bin'), 'utf8')).toBe('kept')
  })
})
