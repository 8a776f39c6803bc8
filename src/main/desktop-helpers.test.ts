// The Electron-free halves of the desktop bridge, against a real service: downloads of the
// service's files, and the notices for finished tasks that main turns into notifications.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../test/service-harness'
import { downloadTo, safeFileName, serviceUrl } from './downloads'
import { visible, watchFinishedTasks, type TaskNotice } from './task-notifications'

let h: Harness
let dir: string
beforeAll(async () => {
  h = await startHarness()
  dir = mkdtempSync(path.join(tmpdir(), 'aviary-dl-'))
})
afterAll(async () => {
  await h?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('saveDownload helpers', () => {
  it('accepts only URLs of the local service', () => {
    expect(serviceUrl(`${h.url}/pcap/get/1`, h.url)?.pathname).toBe('/pcap/get/1')
    expect(serviceUrl('/memory/get/1/2', h.url)?.href).toBe(`${h.url}/memory/get/1/2`)
    for (const bad of ['https://example.com/x', 'file:///etc/passwd', `${h.url.replace('127.0.0.1', 'localhost')}/x`, 42, null]) {
      expect(serviceUrl(bad, h.url)).toBeNull()
    }
  })

  it('makes suggested names safe', () => {
    expect(safeFileName('../../etc/passwd')).toBe('_.._etc_passwd')
    expect(safeFileName('invoice\u202Egpj.exe')).toBe('invoice_gpj.exe')
    expect(safeFileName('in\u200Bvoice\u2066.pdf\u{E0020}.exe')).toBe('in_voice_.pdf_.exe')
    expect(safeFileName('a'.repeat(199) + '\u{1F426}')).toBe('a'.repeat(199))
    expect(safeFileName('.bashrc')).toBe('bashrc')
    expect(safeFileName('')).toBe('download')
    expect(safeFileName(undefined)).toBe('download')
    expect(safeFileName('dump.pcap')).toBe('dump.pcap')
  })

  it('streams a file of the service to disk, and leaves nothing when the service says no', async () => {
    const id = ((await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com/' }))).body.task_id) as number
    const pcap = Buffer.alloc(300_000, 9)
    writeFileSync(path.join(h.analysisDir(id), 'dump.pcap'), pcap)
    const file = path.join(dir, 'dump.pcap')
    await downloadTo(new URL(`${h.url}/pcap/get/${id}`), file)
    expect(readFileSync(file).equals(pcap)).toBe(true)
    const missing = path.join(dir, 'missing.pcap')
    await expect(downloadTo(new URL(`${h.url}/pcap/get/999999`), missing)).rejects.toThrow(/the download failed: .+/)
    expect(existsSync(missing) || existsSync(`${missing}.part`)).toBe(false)
  })
})

describe('finished-task notices', () => {
  it('writes every invisible character of a notice as its code point (zero-width and tag characters too)', () => {
    expect(visible('in\u200Bvoice\u202E\u{E0041}x')).toBe('in<U+200B>voice<U+202E><U+E0041>x')
    expect(visible('plain name.exe')).toBe('plain name.exe')
  })

  it('notices a task once when it is reported or fails, with hidden characters made visible', async () => {
    const bus = h.service.events!
    const notices: TaskNotice[] = []
    const stop = watchFinishedTasks(bus, (n) => notices.push(n))
    // Statuses change in the engine, which this instance does not run: the bus carries the
    // service's own JSON of each task with the status the engine would have set.
    const emit = async (id: number, status: string) => {
      const { task } = (await h.json<{ task: Record<string, unknown> }>(`/tasks/view/${id}`)).body
      bus.emit('task', { id, json: JSON.stringify({ ...task, status }) })
    }
    try {
      const a = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://a.example/' }))).body.task_id as number
      const f = new FormData()
      f.append('file', new Blob(['MZ']), 'invoice\u202Egpj.exe')
      const b = (await h.post('/tasks/create/file', f)).body.task_id as number
      await new Promise((r) => setTimeout(r, 50)) // the submissions' own events first
      expect(notices).toEqual([])
      for (const status of ['running', 'completed', 'reported', 'reported']) await emit(a, status)
      await emit(b, 'failed_analysis')
      expect(notices).toEqual([
        { taskId: a, title: `Task ${a} finished`, body: 'http://a.example/\nThe report is ready' },
        { taskId: b, title: `Task ${b} failed`, body: 'invoice<U+202E>gpj.exe\nfailed analysis' }
      ])
      // Unsubscribed, nothing more arrives.
      stop()
      await emit(b, 'reported')
      expect(notices).toHaveLength(2)
    } finally {
      stop()
    }
  })
})
