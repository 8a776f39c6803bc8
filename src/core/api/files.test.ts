// Samples by hash or id, and their bytes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash, randomBytes } from 'node:crypto'
import { form, startHarness, type Harness } from '../../../test/service-harness'

let h: Harness
const data = randomBytes(70_000)
const md5 = createHash('md5').update(data).digest('hex')
const sha256 = createHash('sha256').update(data).digest('hex')
let taskIds: number[] = []

beforeAll(async () => {
  h = await startHarness()
  for (const name of ['one.exe', 'two.exe']) {
    taskIds.push((await h.post('/tasks/create/file', form({}, [{ name, data }]))).body.task_id as number)
  }
  taskIds = taskIds.sort((a, b) => a - b)
})
afterAll(async () => h.stop())

describe('GET /files/view', () => {
  it('finds a sample by md5, sha256 (any case) and id, with the tasks that use it', async () => {
    const byMd5 = await h.json<{ sample: Record<string, unknown> }>(`/files/view/md5/${md5}`)
    expect(byMd5.status).toBe(200)
    expect(byMd5.body.sample).toMatchObject({ md5, sha256, file_size: data.length, tasks: taskIds })
    const id = byMd5.body.sample.id as number
    expect((await h.json(`/v1/files/view/sha256/${sha256.toUpperCase()}`)).body).toEqual(byMd5.body)
    expect((await h.json(`/files/view/id/${id}`)).body).toEqual(byMd5.body)
  })

  it('answers 404 for unknown samples and 400 for bad lookup terms', async () => {
    expect(await h.json(`/files/view/md5/${'0'.repeat(32)}`)).toMatchObject({ status: 404, body: { message: 'File not found' } })
    expect(await h.json('/files/view/id/999999')).toMatchObject({ status: 404 })
    expect(await h.json('/files/view/id/0')).toMatchObject({ status: 400, body: { message: expect.stringMatching(/^Invalid lookup term/) } })
    // non-digit ids are no route (404, as Flask's int converter): ids.test.ts
    for (const p of ['/files/view/id/-1', '/files/view/id/abc']) expect((await h.json(p)).status, p).toBe(404)
    for (const p of ['/files/view/md5/xyz', `/files/view/sha256/${md5}`]) {
      const r = await h.json<{ message: string }>(p)
      expect(r.status, p).toBe(400)
      expect(r.body.message).toMatch(/^(md5|sha256|id): /)
    }
  })
})

describe('GET /files/get', () => {
  it('returns the stored bytes', async () => {
    const res = await h.get(`/files/get/${sha256}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^application\/octet-stream/)
    expect(Buffer.from(await res.arrayBuffer()).equals(data)).toBe(true)
    expect(await h.json(`/files/get/${'a'.repeat(64)}`)).toMatchObject({ status: 404, body: { message: 'File not found' } })
    expect((await h.json('/files/get/../../etc/passwd')).status).toBeLessThan(500)
  })
})
