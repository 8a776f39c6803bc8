// Deleting a task whose processing is queued or under way, in a real service with its processor:
// /tasks/rereport and /tasks/delete raced, and deletes issued while processing writes the reports.
// Before, a delete could answer 500 (rm racing the reports being written: ENOTEMPTY), or the
// processor made reports/ again after the delete and /tasks/report served a task that /tasks/view
// said did not exist. Now a delete waits for the task's processing to end, and nothing of the task
// is left on disk or served. The analysis folders are built by the test, as processor.test.ts does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { finishRun, startHarness, type Harness } from '../../../test/service-harness'
import { submitFile, waitForTask } from '../../../test/e2e/e2e-helpers'

/** Dropped files per task: enough that processing one takes a moment (each is hashed and typed). */
const DROPPED = 20
const ROUNDS = 18

let h: Harness
beforeAll(async () => {
  h = await startHarness({ engine: true, machines: { machines: [] } })
})
afterAll(async () => h?.stop())

const folder = (id: number) => path.join(h.dataDir, 'storage', 'analyses', String(id))

/** A task as a finished run leaves it: status completed, files/ holding `dropped` dropped files. */
async function finishedTask(n: number, dropped = DROPPED): Promise<number> {
  const id = await submitFile(h, `s${n}.sh`, `#!/bin/sh\necho ${n}\n`)
  const dir = h.analysisDir(id)
  mkdirSync(path.join(dir, 'files'))
  const index: string[] = []
  for (let i = 0; i < dropped; i++) {
    const rel = `files/${i.toString(16).padStart(16, '0')}_drop${i}.bin`
    writeFileSync(path.join(dir, rel), randomBytes(16 * 1024))
    index.push(JSON.stringify({ path: rel, filepath: `C:\\drop${i}.bin`, pids: [100 + i] }))
  }
  writeFileSync(path.join(dir, 'files.json'), index.join('\n') + '\n')
  writeFileSync(path.join(dir, 'analysis.log'), '2026-11-23 10:00:00,000 [aviary.engine] INFO: started\n')
  finishRun(h, id)
  return id
}

const view = (id: number) => h.json<{ task?: { status: string; processing: string | null } }>(`/tasks/view/${id}`)

/** Waits until the task's processing has started (processing names this service), or has ended. */
async function untilProcessing(id: number): Promise<boolean> {
  for (let i = 0; i < 2000; i++) {
    const { body } = await view(id)
    if (body.task?.processing) return true
    if (body.task?.status !== 'completed') return false
    await sleep(2)
  }
  return false
}

/** Nothing of the task is served, and its folder is gone. */
async function expectGone(id: number): Promise<void> {
  expect((await view(id)).status).toBe(404)
  for (const p of [`/tasks/report/${id}`, `/tasks/report/${id}/html`, `/tasks/summary/${id}`, `/tasks/timeline/${id}`]) {
    expect((await h.get(p)).status, p).toBe(404)
  }
  expect(existsSync(folder(id))).toBe(false)
}

describe('deleting a task whose processing is queued or under way', () => {
  it('waits for the processing, answers 200, and leaves nothing on disk or served', { timeout: 240_000 }, async () => {
    const ids: number[] = []
    for (let n = 0; n < ROUNDS; n++) ids.push(await finishedTask(n))
    for (const id of ids) expect(await waitForTask(h, id, ['reported'], 120_000)).toBe('reported')

    let midway = 0
    for (const [n, id] of ids.entries()) {
      // Three kinds of round: rereport and delete sent together; delete just after the rereport
      // answered (processing queued or starting); delete once processing is seen under way.
      const rereport = h.get(`/tasks/rereport/${id}`)
      if (n % 3 > 0) expect(await (await rereport).json()).toEqual({ success: true })
      if (n % 3 === 2 && await untilProcessing(id)) midway++
      const del = await h.get(`/tasks/delete/${id}`)
      expect(del.status, `delete of ${id}: ${await del.clone().text()}`).toBe(200)
      expect(await del.json()).toEqual({ status: 'OK' })
      expect([200, 404]).toContain((await rereport).status)
      await expectGone(id)
    }
    expect(midway).toBeGreaterThan(0) // some deletes did come while processing wrote the reports

    // The processor goes idle: it handles tasks oldest first, one at a time, so once a task
    // completed after every delete is reported, nothing is left that could write a folder again.
    const last = await finishedTask(ROUNDS)
    expect(await waitForTask(h, last, ['reported'], 60_000)).toBe('reported')
    await sleep(200)
    for (const id of ids) expect(existsSync(folder(id)), `folder of ${id}`).toBe(false)
  })

  it('deletes a task queued for processing at once, and processing never starts on it', async () => {
    // While a long processing runs, a second completed task waits behind it; deleting that one
    // does not wait for the other's processing.
    const busy = await finishedTask(100, DROPPED * 10)
    expect(await untilProcessing(busy)).toBe(true)
    const queued = await finishedTask(101)
    expect((await view(queued)).body.task).toMatchObject({ status: 'completed', processing: null })
    expect((await h.get(`/tasks/delete/${queued}`)).status).toBe(200)
    expect((await view(busy)).body.task).toMatchObject({ status: 'completed', processing: expect.stringMatching(/^aviary:/) })
    await expectGone(queued)
    expect(await waitForTask(h, busy, ['reported'], 60_000)).toBe('reported')
    await sleep(200)
    expect(existsSync(folder(queued))).toBe(false)
  })
})
