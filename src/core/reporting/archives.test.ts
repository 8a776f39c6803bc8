// Archives are checked with the real tools clients use (GNU tar, bzip2, unzip, Python's
// zipfile), against an analysis folder with the awkward cases a hostile guest can produce.
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import { once } from 'node:events'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { archiveEntries, FileChangedError, tarContentType, tarFileExtension, tarStream, zipOfFiles, type TarCompression } from './archives'
import { childProcesses, digests, openFdsTo, readAtLeast, requireTools, run, toBuffer, toFile, waitFor } from './archive-test-tools'

const LONG_NAME = `${'a-very-long-dropped-file-name-'.repeat(6)}end.bin` // > 100 bytes, no slash
const UNICODE_NAME = 'сэмпл-文件-ñ.exe'
const SHA = 'ab'.repeat(32)

let tmp: string
let data: string // the data directory: links may resolve only below it
let analysis: string
let binaryContent: Buffer

function write(rel: string, content: string | Buffer, base = analysis): string {
  const file = path.join(base, rel)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
  return file
}

function freshDir(label: string): string {
  return fs.mkdtempSync(path.join(data, `${label}-`))
}

beforeAll(() => {
  requireTools()
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'aviary-archives-'))
  data = path.join(tmp, 'data')
  analysis = path.join(data, 'storage', 'analyses', '1')
  fs.mkdirSync(analysis, { recursive: true })

  binaryContent = randomBytes(300_000)
  const binary = write(SHA, binaryContent, path.join(data, 'storage', 'binaries'))
  fs.symlinkSync(binary, path.join(analysis, 'binary'))
  write('../../../../outside/secret.txt', 'not for the client') // beside the data dir
  const secret = path.join(tmp, 'outside', 'secret.txt')

  write('analysis.log', '2024-01-01 analysis started\n')
  write('task.json', JSON.stringify({ id: 1 }))
  write('dump.pcap', randomBytes(70_000))
  write('memory.dmp', randomBytes(4096))
  write('reports/report.json', JSON.stringify({ info: { id: 1 } }))
  write('logs/1234.bson', randomBytes(5000))
  write('memory/1234-1.dmp', randomBytes(1000))
  for (const shot of ['0002.jpg', '0001.jpg', '0001_small.jpg']) write(`shots/${shot}`, randomBytes(20_000))
  write(`files/${LONG_NAME}`, randomBytes(1234))
  write(`files/${UNICODE_NAME}`, 'unicode')
  write('files/nested/deep/a.txt', 'deep')
  write('files/empty.txt', '')
  write('package_files/pkg.bin', 'package file')
  fs.mkdirSync(path.join(analysis, 'extracted'))
  fs.mkdirSync(path.join(analysis, 'files', 'empty-dir'))
  // Links a guest might plant: out of the data dir, to /etc, dangling, and back up the tree.
  fs.symlinkSync(secret, path.join(analysis, 'files', 'secret'))
  fs.symlinkSync('/etc/passwd', path.join(analysis, 'files', 'passwd'))
  fs.symlinkSync('/etc', path.join(analysis, 'etc'))
  fs.symlinkSync(path.join(analysis, 'nowhere'), path.join(analysis, 'files', 'dangling'))
  fs.symlinkSync('..', path.join(analysis, 'files', 'loop'))
  fs.symlinkSync('reports', path.join(analysis, 'reports-link')) // a directory inside the root: followed
  execFileSync('mkfifo', [path.join(analysis, 'files', 'fifo')])
})

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
})

const EXPECTED_ALL = [
  'analysis.log',
  'binary',
  'dump.pcap',
  'extracted/',
  'files/',
  `files/${LONG_NAME}`,
  'files/empty-dir/',
  'files/empty.txt',
  'files/nested/',
  'files/nested/deep/',
  'files/nested/deep/a.txt',
  `files/${UNICODE_NAME}`,
  'logs/',
  'logs/1234.bson',
  'memory/',
  'memory/1234-1.dmp',
  'package_files/',
  'package_files/pkg.bin',
  'reports/',
  'reports/report.json',
  'reports-link/',
  'reports-link/report.json',
  'shots/',
  'shots/0001.jpg',
  'shots/0001_small.jpg',
  'shots/0002.jpg',
  'task.json'
]

describe('archiveEntries', () => {
  it("lists everything but memory.dmp for 'all', sorted", async () => {
    const entries = await archiveEntries(analysis, 'all')
    expect(entries).not.toContain('memory.dmp')
    expect(entries).toEqual([...fs.readdirSync(analysis)].filter((n) => n !== 'memory.dmp').sort())
  })

  it('gives the single folder for dropped / package_files, or nothing', async () => {
    expect(await archiveEntries(analysis, 'dropped')).toEqual(['files'])
    expect(await archiveEntries(analysis, 'package_files')).toEqual(['package_files'])
    const bare = freshDir('bare')
    expect(await archiveEntries(bare, 'dropped')).toEqual([])
    expect(await archiveEntries(bare, 'package_files')).toEqual([])
  })

  it('keeps the Cuckoo content type and names the extension', () => {
    for (const c of ['bz2', 'gz', 'none'] as const) expect(tarContentType(c)).toBe('application/x-tar')
    expect([tarFileExtension('bz2'), tarFileExtension('gz'), tarFileExtension('none')]).toEqual(['.tar.bz2', '.tar.gz', '.tar'])
  })
})

describe('tarStream', () => {
  const opts = () => ({ containRoot: data })
  const listFlag: Record<TarCompression, string> = { bz2: '-tjf', gz: '-tzf', none: '-tf' }

  it.each(['bz2', 'gz', 'none'] as const)("'all' as %s lists what GNU tar expects, and no escaping link", async (c) => {
    const out = await toFile(tarStream(analysis, await archiveEntries(analysis, 'all'), c, opts()), path.join(tmp, `all-${c}.tar`))
    const listed = run('tar', [listFlag[c], out]).split('\n').filter(Boolean)
    expect(listed).toEqual(EXPECTED_ALL)
    if (c === 'none') {
      const raw = fs.readFileSync(out)
      expect(raw.includes('not for the client')).toBe(false)
      expect(raw.includes('root:x:0:0')).toBe(false)
    }
  })

  it("'all' extracts with tar -xjf to the same bytes, links dereferenced", async () => {
    const out = await toFile(tarStream(analysis, await archiveEntries(analysis, 'all'), 'bz2', opts()), path.join(tmp, 'x.tar.bz2'))
    const into = fs.mkdtempSync(path.join(tmp, 'extract-'))
    run('tar', ['-xjf', out, '-C', into])
    const left = ['memory.dmp', 'etc', 'files/passwd', 'files/secret', 'files/dangling', 'files/loop', 'files/fifo']
    const expected = digests(analysis, new Set(left))
    expect(expected.get('binary')).toBe(createHash('sha256').update(binaryContent).digest('hex'))
    expect(expected.get('reports-link/report.json')).toBeDefined()
    expect(digests(into, new Set())).toEqual(expected)
    expect(fs.lstatSync(path.join(into, 'binary')).isFile()).toBe(true)
    expect(fs.readFileSync(path.join(into, 'binary')).equals(binaryContent)).toBe(true)
    expect(fs.statSync(path.join(into, 'files', 'empty-dir')).isDirectory()).toBe(true)
    expect(fs.readFileSync(path.join(into, 'files', UNICODE_NAME), 'utf8')).toBe('unicode')
  })

  it('is deterministic', async () => {
    const entries = await archiveEntries(analysis, 'all')
    const a = await toBuffer(tarStream(analysis, entries, 'none', opts()))
    const b = await toBuffer(tarStream(analysis, [...entries].reverse(), 'none', opts()))
    expect(a.equals(b)).toBe(true)
  })

  it("'dropped' holds files/ only; a missing files dir gives a valid empty tar", async () => {
    const dropped = await toFile(tarStream(analysis, await archiveEntries(analysis, 'dropped'), 'bz2', opts()), path.join(tmp, 'd.tar.bz2'))
    expect(run('tar', ['-tjf', dropped]).split('\n').filter(Boolean)).toEqual(EXPECTED_ALL.filter((n) => n.startsWith('files/')))
    const bare = freshDir('bare')
    for (const c of ['bz2', 'gz', 'none'] as const) {
      const empty = await toFile(tarStream(bare, await archiveEntries(bare, 'dropped'), c, opts()), path.join(tmp, `empty-${c}`))
      expect(run('tar', [listFlag[c], empty])).toBe('')
    }
  })

  it('skips a top-level link out of the data dir and refuses a folder outside it', async () => {
    const listed = await toFile(tarStream(analysis, ['etc', 'task.json'], 'none', opts()), path.join(tmp, 'etc.tar'))
    expect(run('tar', ['-tf', listed]).trim()).toBe('task.json')
    const outside = tarStream(path.join(tmp, 'outside'), ['secret.txt'], 'none', opts())
    await expect(toBuffer(outside)).rejects.toThrow(/outside the data directory/)
  })

  it('reads names that are not UTF-8 through their bytes', async () => {
    const dir = freshDir('latin1')
    fs.mkdirSync(path.join(dir, 'files'))
    fs.writeFileSync(Buffer.concat([Buffer.from(path.join(dir, 'files') + '/'), Buffer.from([0x66, 0xe9, 0x2e, 0x62])]), 'latin-1 name')
    const out = await toFile(tarStream(dir, ['files'], 'none', opts()), path.join(tmp, 'latin1.tar'))
    expect(run('tar', ['-tf', out]).split('\n').filter(Boolean)).toEqual(['files/', 'files/f\uFFFD.b'])
  })

  it('throws synchronously on bad arguments', () => {
    expect(() => tarStream(analysis, ['../x'], 'none', opts())).toThrow(RangeError)
    expect(() => tarStream(analysis, ['a/b'], 'none', opts())).toThrow(RangeError)
    expect(() => tarStream(analysis, ['task.json'], 'zip' as TarCompression, opts())).toThrow(RangeError)
  })

  it.each(['bz2', 'gz', 'none'] as const)('an entry that vanished errors the %s stream', async (c) => {
    await expect(toBuffer(tarStream(analysis, ['task.json', 'gone'], c, opts()))).rejects.toThrow(/ENOENT/)
  })

  it.each(['bz2', 'gz', 'none'] as const)('a file that shrinks mid-read errors the %s stream', async (c) => {
    const dir = freshDir('shrink')
    // Random bytes: compressors emit output (and 'readable') long before the end of the file.
    const file = write('big.bin', randomBytes(8 * 1024 * 1024), dir)
    const stream = tarStream(dir, ['big.bin'], c, opts())
    await once(stream, 'readable') // the header is out: the size is committed
    fs.truncateSync(file, 1000)
    const err = await toBuffer(stream).then(() => null, (e: unknown) => e)
    expect(err).toBeInstanceOf(FileChangedError)
    expect(String(err)).toMatch(/big\.bin shrank/)
  })

  it('a file that grows mid-read is archived at its size when its header was written', async () => {
    const dir = freshDir('grow')
    const original = randomBytes(8 * 1024 * 1024)
    const file = write('big.bin', original, dir)
    const stream = tarStream(dir, ['big.bin'], 'gz', opts())
    await once(stream, 'readable')
    fs.appendFileSync(file, Buffer.alloc(1024 * 1024, 9))
    const out = await toFile(stream, path.join(tmp, 'grow.tar.gz'))
    const content = execFileSync('tar', ['-xzOf', out, 'big.bin'], { maxBuffer: 32 * 1024 * 1024 })
    expect(content.equals(original)).toBe(true)
  })

  it('streams a 1 GiB file with flat memory', async () => {
    const dir = freshDir('huge')
    const size = 1024 ** 3
    const fd = fs.openSync(path.join(dir, 'huge.bin'), 'w')
    fs.ftruncateSync(fd, size) // sparse: reads as zeros without taking disk space
    fs.closeSync(fd)
    const before = process.memoryUsage().rss
    let peak = before
    let total = 0
    let chunks = 0
    const started = Date.now()
    for await (const chunk of tarStream(dir, ['huge.bin'], 'none', opts())) {
      total += (chunk as Buffer).length
      if (++chunks % 16 === 0) peak = Math.max(peak, process.memoryUsage().rss)
    }
    const growthMb = (peak - before) / 1024 ** 2
    console.info(`1 GiB tar: rss growth ${growthMb.toFixed(1)} MB, ${Date.now() - started} ms`)
    expect(total).toBe(512 + size + 1024)
    expect(growthMb).toBeLessThan(200)
  }, 120_000)

  it.each(['bz2', 'gz', 'none'] as const)('destroying the %s stream early stops the work and closes the file', async (c) => {
    const dir = freshDir('abort')
    const big = write('big.bin', randomBytes(32 * 1024 * 1024), dir) // bzip2 is busy with it for seconds
    expect(childProcesses('bzip2')).toEqual([])
    const stream = tarStream(dir, ['big.bin'], c, opts())
    const errors: unknown[] = []
    stream.on('error', (e) => errors.push(e))
    await readAtLeast(stream, 64 * 1024)
    expect(childProcesses('bzip2')).toHaveLength(c === 'bz2' ? 1 : 0)
    expect(openFdsTo(big)).toBe(1)
    stream.destroy()
    expect(await waitFor(() => childProcesses('bzip2').length === 0)).toBe(true) // killed and reaped: not even a zombie
    expect(await waitFor(() => openFdsTo(big) === 0)).toBe(true)
    expect(errors).toEqual([])
  })
})

describe('zipOfFiles', () => {
  // [name, compress_type (0 = stored), size] per entry; throws unless every CRC checks out.
  const PY = 'import json,sys,zipfile\nz=zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\nprint(json.dumps([[i.filename,i.compress_type,i.file_size] for i in z.infolist()]))'
  const pyList = (zip: string): Array<[string, number, number]> => JSON.parse(run('python3', ['-c', PY, zip])) as Array<[string, number, number]>

  it('stores the regular files of shots/, sorted, with their bytes', async () => {
    const shots = path.join(analysis, 'shots')
    const dir = freshDir('shots')
    for (const name of fs.readdirSync(shots)) fs.copyFileSync(path.join(shots, name), path.join(dir, name))
    fs.mkdirSync(path.join(dir, 'sub'))
    fs.symlinkSync('/etc/passwd', path.join(dir, 'passwd.jpg'))
    fs.symlinkSync(path.join(shots, '0001.jpg'), path.join(dir, '0003.jpg'))
    const zip = await toFile(await zipOfFiles(dir), path.join(tmp, 'shots.zip'))
    expect(pyList(zip)).toEqual([
      ['0001.jpg', 0, 20_000],
      ['0001_small.jpg', 0, 20_000],
      ['0002.jpg', 0, 20_000]
    ])
    const methods = [...run('zipinfo', ['-v', zip]).matchAll(/compression method:\s+(.+)/g)].map((m) => m[1])
    expect(methods).toEqual(['none (stored)', 'none (stored)', 'none (stored)'])
    for (const name of ['0001.jpg', '0001_small.jpg', '0002.jpg']) {
      const extracted = execFileSync('unzip', ['-p', zip, name])
      expect(extracted.equals(fs.readFileSync(path.join(dir, name)))).toBe(true)
    }
    expect(spawnSync('unzip', ['-tq', zip]).status).toBe(0)
  })

  it('gives a valid empty zip for an empty folder', async () => {
    const zip = await toFile(await zipOfFiles(freshDir('noshots')), path.join(tmp, 'empty.zip'))
    expect(pyList(zip)).toEqual([])
  })

  it('rejects for a missing folder and errors the stream for a file that shrinks', async () => {
    await expect(zipOfFiles(path.join(tmp, 'nope'))).rejects.toThrow(/ENOENT/)
    const dir = freshDir('zshrink')
    const file = write('0001.jpg', randomBytes(8 * 1024 * 1024), dir)
    const stream = await zipOfFiles(dir)
    await readAtLeast(stream, 256 * 1024) // the file is open and its reading under way
    fs.truncateSync(file, 10)
    await expect(toBuffer(stream)).rejects.toThrow(/0001\.jpg shrank/)
  })

  it('closes the open file when destroyed early', async () => {
    const dir = freshDir('zabort')
    const file = write('0001.jpg', Buffer.alloc(8 * 1024 * 1024, 1), dir)
    const stream = await zipOfFiles(dir)
    await readAtLeast(stream, 256 * 1024)
    expect(openFdsTo(file)).toBe(1)
    stream.destroy()
    expect(await waitFor(() => openFdsTo(file) === 0)).toBe(true)
  })
})
