// A submitted file keeps its name as submitted (unicode, bidi controls, spaces, characters
// Windows refuses): in the database, in /tasks/view, on disk, and as the guest's file name.
// Only separators (last component kept), NUL (`_`) and dot-only names (the sha256) change.
// Every submit route is checked, archive members included, with raw multipart bodies as clients
// such as Python's requests send them (UTF-8 names in quotes), and RFC 5987 `filename*`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { startHarness, type Harness } from '../../../test/service-harness'
import { analysisConf } from '../guest/analysis-conf'
import type { GuestStartSpec } from '../guest/start-spec'

let h: Harness
let db: Database.Database
const work = mkdtempSync(path.join(tmpdir(), 'aviary-names-'))
const sha256 = (b: string | Buffer) => createHash('sha256').update(b).digest('hex')

beforeAll(async () => {
  h = await startHarness()
  db = new Database(path.join(h.dataDir, 'aviary.db'), { readonly: true })
})
afterAll(async () => {
  db.close()
  await h.stop()
  rmSync(work, { recursive: true, force: true })
})

/** A multipart body written byte by byte: the name goes out as UTF-8, unescaped. */
function multipart(files: { field: string; name: string; data: Buffer | string; star?: boolean }[]): { body: Buffer; type: string } {
  const boundary = '----aviary-names-boundary'
  const parts: Buffer[] = []
  for (const f of files) {
    const disposition = f.star
      ? `form-data; name="${f.field}"; filename*=UTF-8''${encodeURIComponent(f.name)}`
      : `form-data; name="${f.field}"; filename="${f.name}"`
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\nContent-Type: application/octet-stream\r\n\r\n`, 'utf8'))
    parts.push(Buffer.isBuffer(f.data) ? f.data : Buffer.from(f.data))
    parts.push(Buffer.from('\r\n'))
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(parts), type: `multipart/form-data; boundary=${boundary}` }
}

async function post(p: string, files: Parameters<typeof multipart>[0]) {
  const { body, type } = multipart(files)
  const res = await fetch(h.url + p, { method: 'POST', headers: { 'content-type': type }, body })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

/** Where the name must show: the API, the DB row, the disk (inside the data dir), the guest's analysis.conf. */
async function expectName(taskId: number, expected: string) {
  const task = (await h.json<{ task: { target: string; category: string } }>(`/tasks/view/${taskId}`)).body.task
  expect(path.basename(task.target)).toBe(expected)
  const row = db.prepare('SELECT target FROM tasks WHERE id = ?').get(taskId) as { target: string }
  expect(row.target).toBe(task.target)
  expect(existsSync(task.target)).toBe(true)
  expect(path.dirname(path.dirname(realpathSync(task.target)))).toBe(path.join(realpathSync(h.dataDir), 'storage', 'uploads'))
  // The guest gets path.basename(target) as the sample's name (scheduler/analysis-run.ts).
  const spec = {
    taskId, category: task.category, target: task.target, package: null, options: null, timeout: 60, enforceTimeout: false,
    terminateProcesses: false, clock: new Date(), resultserver: { ip: '192.168.122.1', port: 2042 },
    analyzer: { dir: '/x', monitor: null }, pushFiles: [], platform: 'windows',
    file: { name: path.basename(task.target), type: null, peExports: [], localPath: task.target }
  } as GuestStartSpec
  return analysisConf(spec)
}

// [name as sent, name kept]
const KEPT: [string, string][] = [
  ['invoice\u202Egpj.exe', 'invoice\u202Egpj.exe'],
  ['отчёт.pdf', 'отчёт.pdf'],
  ['my report (final) v2.doc', 'my report (final) v2.doc'],
  ['  spaced  out  .exe', '  spaced  out  .exe'],
  ['日本語\u{1F426}.js', '日本語\u{1F426}.js'],
  ['zero\u200Bwidth\uFEFF\u2066iso\u2069.exe', 'zero\u200Bwidth\uFEFF\u2066iso\u2069.exe'],
  ['a:b*c?<d>|e.exe', 'a:b*c?<d>|e.exe'],
  ['..hidden.exe', '..hidden.exe']
]
const NEUTRALISED: [string, (data: string) => string][] = [
  ['C:\\Users\\bob\\evil.exe', () => 'evil.exe'],
  ['../../../escape.exe', () => 'escape.exe'],
  ['dir/sub/\u202Efdp.exe', () => '\u202Efdp.exe'],
  ['nul\u0000byte.exe', () => 'nul_byte.exe'],
  ['..', (d) => sha256(d)],
  ['x/..', (d) => sha256(d)]
]

describe('file names on POST /tasks/create/file', () => {
  for (const [sent, kept] of KEPT) {
    it(`keeps ${JSON.stringify(sent)}`, async () => {
      const r = await post('/tasks/create/file', [{ field: 'file', name: sent, data: `kept ${sent}` }])
      expect(r.status).toBe(200)
      const conf = await expectName(r.body.task_id as number, kept)
      // the guest's name is the same, but for what Windows cannot store (`:*?"<>|` become `_`)
      expect(conf).toContain(`file_name = ${kept.replace(/[<>:"|?*]/g, '_').replace(/^[. ]+|[. ]+$/g, '')}\n`)
    })
  }
  for (const [sent, kept] of NEUTRALISED) {
    it(`neutralises ${JSON.stringify(sent)}`, async () => {
      const data = `neutralised ${sent}`
      const r = await post('/v1/tasks/create/file', [{ field: 'file', name: sent, data }])
      expect(r.status).toBe(200)
      await expectName(r.body.task_id as number, kept(data))
    })
  }

  // RFC 7578 says not to send filename* in forms, but some clients do (alone: busboy's fast path
  // reads only the first filename parameter).
  it('takes RFC 5987 filename* names too', async () => {
    const r = await post('/tasks/create/file', [{ field: 'file', name: 'rapport\u202Efdp.exe', data: 'star', star: true }])
    const conf = await expectName(r.body.task_id as number, 'rapport\u202Efdp.exe')
    expect(conf).toContain('file_name = rapport\u202Efdp.exe\n')
  })

  it('keeps both names when the same bytes come under two names', async () => {
    const a = await post('/tasks/create/file', [{ field: 'file', name: 'одно.exe', data: 'same bytes' }])
    const b = await post('/tasks/create/file', [{ field: 'file', name: 'другое\u202Eexe.txt', data: 'same bytes' }])
    await expectName(a.body.task_id as number, 'одно.exe')
    await expectName(b.body.task_id as number, 'другое\u202Eexe.txt')
  })
})

describe('file names on POST /tasks/create/submit', () => {
  it('keeps the names of plain files (fields file and files)', async () => {
    const r = await post('/tasks/create/submit', [
      { field: 'file', name: 'счёт\u202Efdp.exe', data: 'submit one' },
      { field: 'files', name: 'two words.dll', data: 'submit two' },
      { field: 'files', name: 'C:\\tmp\\три.js', data: 'submit three' }
    ])
    expect(r.status).toBe(200)
    const ids = r.body.task_ids as number[]
    expect(ids).toHaveLength(3)
    await expectName(ids[0]!, 'счёт\u202Efdp.exe')
    await expectName(ids[1]!, 'two words.dll')
    await expectName(ids[2]!, 'три.js')
  })

  it('keeps the names of archive members (zip and tar), their folders in options.filename', async () => {
    const members = ['docs/отчёт.exe', 'invoice\u202Egpj.exe', 'with space/a b.exe']
    execFileSync('python3', ['-c', `
import sys, zipfile, tarfile, io
names = sys.argv[1:]
with zipfile.ZipFile('names.zip', 'w') as z:
    for i, n in enumerate(names): z.writestr(n, 'MZ zip member %d' % i)
with tarfile.open('names.tar.gz', 'w:gz', format=tarfile.PAX_FORMAT) as t:
    for i, n in enumerate(names):
        data = ('MZ tar member %d' % i).encode()
        info = tarfile.TarInfo(n); info.size = len(data); t.addfile(info, io.BytesIO(data))
`, ...members], { cwd: work })
    for (const archive of ['names.zip', 'names.tar.gz']) {
      const r = await post('/tasks/create/submit', [{ field: 'files', name: `пакет ${archive}`, data: readFileSync(path.join(work, archive)) }])
      expect(r.status, archive).toBe(200)
      expect(r.body.errors, archive).toEqual([])
      const ids = r.body.task_ids as number[]
      const seen = new Map<string, string>()
      for (const id of ids) {
        const task = (await h.json<{ task: { target: string; options: string } }>(`/tasks/view/${id}`)).body.task
        seen.set(path.basename(task.target), task.options)
        await expectName(id, path.basename(task.target))
      }
      expect([...seen.keys()].sort(), archive).toEqual(['a b.exe', 'invoice\u202Egpj.exe', 'отчёт.exe'])
      expect(seen.get('отчёт.exe'), archive).toContain('filename=docs/отчёт.exe')
      expect(seen.get('invoice\u202Egpj.exe'), archive).toContain('filename=invoice\u202Egpj.exe')
      // Each member names its archive, and the archive's name finds them all.
      for (const options of seen.values()) expect(options, archive).toContain(`archive=пакет ${archive}`)
      const found = await h.json<{ tasks: { id: number }[] }>(`/aviary/tasks?q=${encodeURIComponent(`name:"пакет ${archive}"`)}&order=asc`)
      expect(found.body.tasks.map((t) => t.id), archive).toEqual([...ids].sort((x, y) => x - y))
    }
  })
})
