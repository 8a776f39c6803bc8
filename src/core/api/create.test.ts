// POST /tasks/create/file and /tasks/create/url over a real socket. Sample hashes are checked
// against coreutils, Python's zlib, the ssdeep tool and file(1), not against stored strings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { form, startHarness, type Harness } from '../../../test/service-harness'

const tool = (cmd: string, args: string[]) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' })
  } catch (err) {
    throw new Error(`${cmd} is needed by this test (run scripts/install-debian-deps.sh): ${(err as Error).message}`, { cause: err })
  }
}
const sum = (cmd: string, file: string) => tool(cmd, [file]).split(' ')[0]
const crc32 = (file: string) =>
  tool('python3', ['-c', 'import sys,zlib;print("%08X" % (zlib.crc32(open(sys.argv[1],"rb").read()) & 0xffffffff))', file]).trim()
const ssdeepOf = (file: string) => tool('ssdeep', ['-s', '-b', file]).trim().split('\n').pop()!.split(',')[0]

let h: Harness
const fixtures = mkdtempSync(path.join(tmpdir(), 'aviary-fixtures-'))

beforeAll(async () => {
  h = await startHarness({
    machines: { machines: [{ name: 'win7', ip: '192.168.56.101', platform: 'windows', tags: ['x64'] }] }
  })
})
afterAll(async () => {
  await h.stop()
  rmSync(fixtures, { recursive: true, force: true })
})

async function upload(name: string, data: Uint8Array | string, fields: Record<string, string> = {}) {
  return h.post('/tasks/create/file', form(fields, [{ name, data }]))
}

describe('POST /tasks/create/file', () => {
  const cases: [string, () => Uint8Array | string][] = [
    ['empty.bin', () => new Uint8Array()],
    ['hello.txt', () => 'hello'],
    ['random.bin', () => randomBytes(1_500_000 + 123)],
    ['ls', () => readFileSync('/usr/bin/ls')],
    ['text.txt', () => 'line one\nline two\n'.repeat(5000)]
  ]
  for (const [name, make] of cases) {
    it(`stores ${name} with hashes equal to the reference tools`, async () => {
      const data = make()
      const file = path.join(fixtures, name)
      writeFileSync(file, data)
      const { status, body } = await upload(name, data)
      expect(status).toBe(200)
      const id = body.task_id as number
      expect(Number.isInteger(id)).toBe(true)
      const { body: view } = await h.json<{ task: Record<string, any> }>(`/tasks/view/${id}`) // eslint-disable-line @typescript-eslint/no-explicit-any
      const task = view.task
      expect(task.status).toBe('pending')
      expect(task.category).toBe('file')
      expect(task.sample).toMatchObject({
        md5: sum('md5sum', file),
        sha1: sum('sha1sum', file),
        sha256: sum('sha256sum', file),
        sha512: sum('sha512sum', file),
        crc32: crc32(file),
        ssdeep: ssdeepOf(file),
        file_size: readFileSync(file).length,
        file_type: tool('file', ['-b', file]).trim()
      })
      expect(task.sample_id).toBe(task.sample.id)
      // stored by content, and the target keeps the submitted name inside the data dir
      const binary = path.join(h.dataDir, 'storage', 'binaries', task.sample.sha256)
      expect(readFileSync(binary).equals(readFileSync(file))).toBe(true)
      expect(path.basename(task.target)).toBe(name)
      expect(realpathSync(task.target).startsWith(realpathSync(h.dataDir))).toBe(true)
      expect(readFileSync(task.target).equals(readFileSync(file))).toBe(true)
    })
  }

  it('deduplicates samples by content', async () => {
    const data = randomBytes(5000)
    const a = await upload('a.exe', data)
    const b = await upload('b.exe', data)
    const ta = (await h.json<{ task: { sample_id: number; target: string } }>(`/tasks/view/${a.body.task_id}`)).body.task
    const tb = (await h.json<{ task: { sample_id: number; target: string } }>(`/tasks/view/${b.body.task_id}`)).body.task
    expect(ta.sample_id).toBe(tb.sample_id)
    expect(path.basename(tb.target)).toBe('b.exe')
  })

  it('refuses a known sample with unique on, and takes a new one', async () => {
    const data = randomBytes(300)
    expect((await upload('u.bin', data, { unique: '1' })).status).toBe(200)
    const again = await upload('u.bin', data, { unique: 'yes' })
    expect(again.status).toBe(400)
    expect(again.body.message).toBe('This file has already been submitted')
  })

  it('keeps hostile file names inside the data directory', async () => {
    const names = ['../../../escape.txt', '/etc/passwd', 'C:\\Windows\\evil.exe', '..', 'a\u0000b.exe', '\u202egnp.exe', ' ', 'x'.repeat(400) + '.exe']
    for (const name of names) {
      const { status, body } = await upload(name, `content of ${name}`)
      expect(status, name).toBe(200)
      const task = (await h.json<{ task: { target: string } }>(`/tasks/view/${body.task_id}`)).body.task
      const uploads = path.join(h.dataDir, 'storage', 'uploads')
      expect(path.dirname(path.dirname(task.target))).toBe(uploads)
      // separators and NUL never survive; bidi controls do (submit-names.test.ts: names are kept as sent)
      expect(path.basename(task.target)).not.toMatch(/[\u0000/\\]/) // eslint-disable-line no-control-regex
      expect(Buffer.byteLength(path.basename(task.target))).toBeLessThanOrEqual(200)
    }
    expect(existsSync(path.join(h.dataDir, '..', 'escape.txt'))).toBe(false)
    expect(existsSync(path.join(path.dirname(h.dataDir), '..', 'escape.txt'))).toBe(false)
  })

  it('applies the submitted settings', async () => {
    const { body } = await upload('s.exe', 'settings', {
      package: 'exe', timeout: '200', priority: '3', options: 'free=yes,route=none', machine: 'win7', platform: 'windows',
      tags: ' x64, ,win10,x64', custom: 'c', owner: 'alice', memory: 'TRUE', enforce_timeout: 'On', clock: '01-31-2026 13:45:00'
    })
    const task = (await h.json<{ task: Record<string, unknown> }>(`/tasks/view/${body.task_id}`)).body.task
    expect(task).toMatchObject({
      package: 'exe', timeout: 200, priority: 3, options: 'free=yes,route=none', machine: 'win7', platform: 'windows',
      tags: ['x64', 'win10'], custom: 'c', owner: 'alice', memory: true, enforce_timeout: true, clock: '2026-01-31 13:45:00'
    })
  })

  it('treats empty fields as defaults and names a machine by id', async () => {
    const { body } = await upload('d.exe', 'defaults', { package: '', timeout: '', priority: '', memory: '', machine: '1' })
    const task = (await h.json<{ task: Record<string, unknown> }>(`/tasks/view/${body.task_id}`)).body.task
    expect(task).toMatchObject({ package: null, timeout: 0, priority: 1, memory: false, machine: 'win7', options: null, owner: '', custom: null })
  })

  const bad: [Record<string, string>, string][] = [
    [{ priority: '0' }, 'priority'], [{ priority: '4' }, 'priority'], [{ priority: 'abc' }, 'priority'], [{ priority: '2.5' }, 'priority'],
    [{ timeout: '-1' }, 'timeout'], [{ timeout: 'ten' }, 'timeout'], [{ memory: 'maybe' }, 'memory'], [{ enforce_timeout: '2' }, 'enforce_timeout'],
    [{ unique: 'y' }, 'unique'], [{ clock: '2026-01-01' }, 'clock'], [{ clock: '13-45-2026 10:00:00' }, 'clock'],
    [{ machine: 'nope' }, 'machine'], [{ package: '../x' }, 'package'], [{ options: 'a=\u0001' }, 'options']
  ]
  for (const [fields, field] of bad) {
    it(`answers 400 naming ${field} for ${JSON.stringify(fields)}`, async () => {
      const { status, body } = await upload('v.bin', 'validation', fields)
      expect(status).toBe(400)
      expect(body.message).toMatch(new RegExp(`^${field}: `))
      const given = Object.values(fields)[0]!
      if (/^[\w.:-]+$/.test(given) && field !== 'machine') expect(body.message).toContain(`(got '${given}')`)
    })
  }

  it('answers 400 when the file part is missing or is a text field', async () => {
    const none = await h.post('/tasks/create/file', form({ priority: '1' }))
    expect(none.status).toBe(400)
    expect(none.body.message).toMatch(/^file: required/)
    const text = await h.post('/tasks/create/file', form({ file: 'not a file' }))
    expect(text.status).toBe(400)
    expect(text.body.message).toMatch(/^file: /)
    const json = await h.post('/tasks/create/file', JSON.stringify({ file: 'x' }), { 'content-type': 'application/json' })
    expect(json.status).toBe(400)
    expect(json.body.message).toMatch(/^file: /)
  })

  it('leaves no temporary upload behind after a refused request', async () => {
    await upload('t.bin', randomBytes(100_000), { priority: '9' })
    expect(readdirSync(path.join(h.dataDir, 'tmp'))).toEqual([])
  })
})

describe('upload limit', () => {
  it('answers 413 naming the limit and keeps nothing', async () => {
    const small = await startHarness({ maxUploadBytes: 1024 * 1024 })
    try {
      const { status, body } = await small.post('/tasks/create/file', form({}, [{ name: 'big.bin', data: randomBytes(1024 * 1024 + 1) }]))
      expect(status).toBe(413)
      expect(body.message).toBe('file: the upload exceeds the limit of 1 MiB')
      expect(readdirSync(path.join(small.dataDir, 'tmp'))).toEqual([])
      expect(readdirSync(path.join(small.dataDir, 'storage', 'binaries'))).toEqual([])
      const ok = await small.post('/tasks/create/file', form({}, [{ name: 'fits.bin', data: randomBytes(1024 * 1024) }]))
      expect(ok.status).toBe(200)
    } finally {
      await small.stop()
    }
  })
})

describe('POST /tasks/create/url', () => {
  it('accepts multipart, urlencoded and JSON bodies', async () => {
    const a = await h.post('/tasks/create/url', form({ url: 'https://example.com/a?b=c' }))
    const b = await h.post('/tasks/create/url', new URLSearchParams({ url: 'http://1.2.3.4:9001/wow', priority: '2' }))
    const c = await h.post('/tasks/create/url', JSON.stringify({ url: 'example.org/x', priority: 3 }), { 'content-type': 'application/json' })
    for (const r of [a, b, c]) expect(r.status).toBe(200)
    const view = async (id: unknown) => (await h.json<{ task: Record<string, unknown> }>(`/tasks/view/${id}`)).body.task
    expect(await view(a.body.task_id)).toMatchObject({ category: 'url', target: 'https://example.com/a?b=c', sample_id: null, sample: {} })
    expect(await view(b.body.task_id)).toMatchObject({ target: 'http://1.2.3.4:9001/wow', priority: 2 })
    expect(await view(c.body.task_id)).toMatchObject({ target: 'http://example.org/x', priority: 3 })
  })

  for (const url of ['', 'not a url', 'ftp://example.com/x', 'javascript:alert(1)', 'http://', 'http://exa mple.com', 'file:///etc/passwd', 'localhostt']) {
    it(`answers 400 naming url for ${JSON.stringify(url)}`, async () => {
      const { status, body } = await h.post('/tasks/create/url', new URLSearchParams({ url }))
      expect(status).toBe(400)
      expect(body.message).toMatch(/^url: /)
    })
  }
})
