// GET /aviary/tasks/{id}/dropped/{folder}/{name}: one dropped file, alone (Cuckoo serves them only
// as the `dropped` archive). Served as an attachment under a safe name, read only from the task's
// own files/ or package_files/ folder: a link planted there that leads out of the task's folder is a
// 404 like a file that is not there; bad names get a 400 naming the field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import path from 'node:path'
import { startHarness, type Harness } from '../../../test/service-harness'

let h: Harness
let id: number
let other: number

beforeAll(async () => {
  h = await startHarness()
  id = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.com' }))).body.task_id as number
  other = (await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://example.org' }))).body.task_id as number
  const dir = h.analysisDir(id)
  for (const sub of ['files', 'package_files']) mkdirSync(path.join(dir, sub))
  writeFileSync(path.join(dir, 'files', '0123456789abcdef_payload.exe'), 'MZ payload')
  writeFileSync(path.join(dir, 'files', 'fedcba9876543210_in"voice\u202Egpj.exe'), 'MZ hostile name')
  writeFileSync(path.join(dir, 'package_files', 'extra.txt'), 'pkg')
  mkdirSync(path.join(dir, 'files', 'a-folder'))
  const secret = path.join(h.analysisDir(other), 'secret.txt')
  writeFileSync(secret, 'another task\'s file')
  symlinkSync(secret, path.join(dir, 'files', 'link-out'))
})
afterAll(async () => h.stop())

const url = (folder: string, name: string, task = id) => `/aviary/tasks/${task}/dropped/${folder}/${encodeURIComponent(name)}`

describe('one dropped file', () => {
  it('is served as an attachment with a safe name', async () => {
    const res = await h.get(url('files', '0123456789abcdef_payload.exe'))
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('MZ payload')
    expect(res.headers.get('content-type')).toBe('application/octet-stream')
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${id}-payload.exe.bin"`)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    const hostile = await h.get(url('files', 'fedcba9876543210_in"voice\u202Egpj.exe'))
    expect(hostile.status).toBe(200)
    expect(hostile.headers.get('content-disposition')).toBe(`attachment; filename="${id}-in_voice_gpj.exe.bin"`)
    expect((await h.get(url('package_files', 'extra.txt'))).status).toBe(200)
  })

  it('is a 404 when it is not a file of this task\'s folder', async () => {
    for (const p of [url('files', 'missing'), url('files', 'a-folder'), url('files', 'link-out'), url('files', '0123456789abcdef_payload.exe', other), url('files', 'x', 999_999)]) {
      const res = await h.get(p)
      expect(res.status, p).toBe(404)
      expect(((await res.json()) as { message: string }).message).toMatch(/not found/i)
    }
  })

  it('answers a bad folder or name with a 400 naming it', async () => {
    // URL parsers (fetch's too) resolve "..", even as %2E%2E: sent raw, as a hostile client would.
    const raw = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const { hostname, port } = new URL(h.url)
      request({ hostname, port, path: `/aviary/tasks/${id}/dropped/files/..` }, (res) => {
        let body = ''
        res.on('data', (c: Buffer) => { body += c.toString() }).on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      }).on('error', reject).end()
    })
    expect(raw.status).toBe(400)
    expect((JSON.parse(raw.body) as { message: string }).message).toMatch(/^name\b/)
    const cases: [string, RegExp][] = [
      [url('shots', '0001.jpg'), /^folder\b/], [url('files', 'a/b'), /^name\b/],
      [url('files', 'x'.repeat(300)), /^name\b/]
    ]
    for (const [p, field] of cases) {
      const res = await h.get(p)
      expect(res.status, p).toBe(400)
      expect(((await res.json()) as { message: string }).message, p).toMatch(field)
    }
  })
})
