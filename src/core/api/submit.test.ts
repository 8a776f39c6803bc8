// POST /tasks/create/submit: several files, lines of URLs and hashes, and archives (made here by
// the real zip, 7z and tar tools) unpacked to one task per member.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { form, startHarness, type Harness } from '../../../test/service-harness'

type T = Record<string, unknown> & { id: number; target: string; options: string | null; sample: Record<string, unknown> }
let h: Harness
const work = mkdtempSync(path.join(tmpdir(), 'aviary-submit-'))
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex')

function run(cmd: string, args: string[], cwd = work) {
  try {
    execFileSync(cmd, args, { cwd, stdio: 'pipe' })
  } catch (err) {
    throw new Error(`${cmd} failed or is missing (run scripts/install-debian-deps.sh): ${(err as Error).message}`, { cause: err })
  }
}

beforeAll(async () => {
  h = await startHarness({ unpackLimits: { maxMemberBytes: 8 * 1024 * 1024, maxTotalBytes: 64 * 1024 * 1024 } })
  mkdirSync(path.join(work, 'files'))
  writeFileSync(path.join(work, 'files', 'a.exe'), 'MZ member a')
  writeFileSync(path.join(work, 'files', 'b.pdf'), '%PDF-1.4 member b')
})
afterAll(async () => {
  await h.stop()
  rmSync(work, { recursive: true, force: true })
})

async function submit(fields: Record<string, string>, files: { field?: string; name: string; data: Uint8Array | string }[] = []) {
  return h.post('/tasks/create/submit', form(fields, files))
}
const view = async (id: number) => (await h.json<{ task: T }>(`/tasks/view/${id}`)).body.task

describe('POST /tasks/create/submit', () => {
  it('makes one task per file, from both file and files fields', async () => {
    const r = await submit({ priority: '2' }, [{ name: 'one.exe', data: 'one' }, { field: 'files', name: 'two.dll', data: 'two' }, { field: 'files', name: 'three.js', data: 'three' }])
    expect(r.status).toBe(200)
    expect(r.body.errors).toEqual([])
    const ids = r.body.task_ids as number[]
    expect(ids).toHaveLength(3)
    const tasks = await Promise.all(ids.map(view))
    expect(tasks.map((t) => path.basename(t.target))).toEqual(['one.exe', 'two.dll', 'three.js'])
    for (const t of tasks) expect(t).toMatchObject({ category: 'file', priority: 2, submit_id: r.body.submit_id })
  })

  it('takes URLs and hashes of stored samples from strings, and reports the rest', async () => {
    const known = 'a known sample'
    await h.post('/tasks/create/file', form({}, [{ name: 'known.bin', data: known }]))
    const md5 = createHash('md5').update(known).digest('hex')
    const lines = ['google.com', 'https://1.2.3.4:9001/wow', '', md5.toUpperCase(), sha256(known), 'f'.repeat(64), 'hello world', 'ftp://x.org/']
    const r = await submit({ strings: lines.join('\r\n') })
    expect(r.status).toBe(200)
    const tasks = await Promise.all((r.body.task_ids as number[]).map(view))
    expect(tasks.map((t) => t.target.startsWith('http') ? t.target : path.basename(t.target)))
      .toEqual(['http://google.com', 'https://1.2.3.4:9001/wow', 'known.bin', 'known.bin'])
    expect(tasks[2]!.sample.md5).toBe(md5)
    expect(r.body.errors).toEqual([
      `sha256 ${'f'.repeat(64)} is not a sample of this instance`,
      "'hello world' is neither a URL nor the md5, sha1, sha256 or sha512 of a stored sample",
      "'ftp://x.org/' is neither a URL nor the md5, sha1, sha256 or sha512 of a stored sample"
    ])
  })

  it('answers 400 when there is nothing to submit', async () => {
    const r = await submit({ strings: '\n \n' })
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(/^files: /)
  })

  const archives: [string, string[], string?][] = [
    ['plain.zip', ['zip', '-qr', 'plain.zip', 'files']],
    ['infected.zip', ['zip', '-qr', '-P', 'infected', 'infected.zip', 'files']],
    ['aes.zip', ['7z', 'a', '-tzip', '-mem=AES256', '-psecret', 'aes.zip', 'files'], 'secret'],
    ['files.tar', ['tar', 'cf', 'files.tar', 'files']],
    ['files.tgz', ['tar', 'czf', 'files.tgz', 'files']],
    ['files.tar.bz2', ['tar', 'cjf', 'files.tar.bz2', 'files']]
  ]
  for (const [name, [cmd, ...args], password] of archives) {
    it(`unpacks ${name} into one archive task per member`, async () => {
      run(cmd!, args)
      const data = readFileSync(path.join(work, name))
      const r = await submit(password ? { options: `password=${password},free=yes` } : {}, [{ name, data }])
      expect(r.status).toBe(200)
      expect(r.body.errors).toEqual([])
      const tasks = await Promise.all((r.body.task_ids as number[]).map(view))
      const byName = Object.fromEntries(tasks.map((t) => [path.basename(t.target), t]))
      expect(Object.keys(byName).sort()).toEqual(['a.exe', 'b.pdf'])
      expect(byName['a.exe']).toMatchObject({ category: 'archive' })
      expect(byName['a.exe']!.options).toMatch(/(^|,)filename=files\/a\.exe$/)
      expect(byName['a.exe']!.sample.sha256).toBe(sha256('MZ member a'))
      expect(readFileSync(byName['b.pdf']!.target, 'utf8')).toBe('%PDF-1.4 member b')
      // the archive itself is kept as a sample too
      expect((await h.json(`/files/view/sha256/${sha256(data)}`)).status).toBe(200)
    })
  }

  it('reports a wrong password instead of failing', async () => {
    run('zip', ['-qr', '-P', 'other', 'other.zip', 'files'])
    const r = await submit({}, [{ name: 'other.zip', data: readFileSync(path.join(work, 'other.zip')) }])
    expect(r.status).toBe(200)
    expect(r.body.task_ids).toEqual([])
    expect((r.body.errors as string[]).join('\n')).toMatch(/password/)
  })

  it('refuses zip-slip members and never writes outside the data directory', async () => {
    const script = `
import zipfile
z = zipfile.ZipFile('slip.zip', 'w')
z.writestr('../../../../../../tmp/aviary-zip-slip-proof', 'escaped')
z.writestr('/etc/aviary-abs-proof', 'abs')
z.writestr('C:\\\\Windows\\\\evil.exe', 'drive')
z.writestr('ok/good.exe', 'good')
z.close()`
    run('python3', ['-c', script])
    const r = await submit({}, [{ name: 'slip.zip', data: readFileSync(path.join(work, 'slip.zip')) }])
    expect(r.status).toBe(200)
    const tasks = await Promise.all((r.body.task_ids as number[]).map(view))
    expect(tasks.map((t) => path.basename(t.target))).toEqual(['good.exe'])
    expect(r.body.errors as string[]).toHaveLength(3)
    for (const e of r.body.errors as string[]) expect(e).toMatch(/unsafe path/)
    expect(existsSync('/tmp/aviary-zip-slip-proof')).toBe(false)
    expect(existsSync('/etc/aviary-abs-proof')).toBe(false)
  })

  it('stops a decompression bomb with an error entry and leaves no scratch files', async () => {
    run('python3', ['-c', `
import zipfile
z = zipfile.ZipFile('bomb.zip', 'w', zipfile.ZIP_DEFLATED)
z.writestr('small.txt', 'fine')
z.writestr('zeros.bin', b'\\0' * (64 * 1024 * 1024))
z.close()`])
    const data = readFileSync(path.join(work, 'bomb.zip'))
    expect(data.length).toBeLessThan(200_000)
    const r = await submit({}, [{ name: 'bomb.zip', data }])
    expect(r.status).toBe(200)
    expect((r.body.errors as string[]).join('\n')).toMatch(/bomb|limit|expands/i)
    expect(readdirSync(path.join(h.dataDir, 'tmp'))).toEqual([])
  })
})
