// Archives are made at test time by the real tools analysts' archives come from (zip, 7z, GNU
// tar, bzip2) and, for the hostile ones no sane tool writes, by Python's zipfile/tarfile/struct.
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { detectArchive, sniffArchive, unpackArchive, UnpackLimitError, type ArchiveFormat, type ArchiveMember, type UnpackLimits } from './unpack'
import { safeMemberPath, showName } from './unpack-common'

const TOOLS: [string, string[]][] = [
  ['zip', ['-v']],
  ['unzip', ['-v']],
  ['7z', ['i']],
  ['tar', ['--version']],
  ['bzip2', ['--help']],
  ['python3', ['--version']]
]
const MiB = 1024 * 1024

let root: string // everything the tests create lives here; it is walked to catch stray writes

function requireTools(): void {
  for (const [tool, args] of TOOLS) {
    const probe = spawnSync(tool, args, { stdio: 'ignore' })
    if (probe.error) throw new Error(`required tool "${tool}" is not installed (${probe.error.message}); these tests need it`)
  }
}

function run(cmd: string, args: string[], cwd = root): void {
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] })
}

function python(script: string, ...args: string[]): void {
  execFileSync('python3', ['-c', script, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
}

/** A fresh directory with the given files (relative path → content). */
function tree(name: string, files: Record<string, string | Buffer>): string {
  const dir = path.join(root, name)
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
    fs.writeFileSync(path.join(dir, rel), content)
  }
  return dir
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex')
const shaFile = (f: string) => sha(fs.readFileSync(f))

function listAll(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()
}

interface Got {
  path: string
  containers: string[]
  sha256?: string
  size: number
  error?: unknown
}

/**
 * Unpacks with a consumer that hashes each member the way storage does, and checks that the
 * only directory written to was the scratch one, which must be empty again afterwards.
 */
async function unpack(
  file: string,
  opts: { format?: ArchiveFormat; password?: string; limits?: Partial<UnpackLimits>; onMember?: (m: ArchiveMember) => Promise<void> } = {}
) {
  const scratch = fs.mkdtempSync(path.join(root, 'scratch-'))
  const before = listAll(root)
  const got: Got[] = []
  const consume = async (m: ArchiveMember) => {
    const hash = createHash('sha256')
    let size = 0
    try {
      for await (const chunk of m.source as AsyncIterable<Buffer>) {
        hash.update(chunk)
        size += chunk.length
      }
      got.push({ path: m.path, containers: m.containers, sha256: hash.digest('hex'), size })
    } catch (error) {
      got.push({ path: m.path, containers: m.containers, size, error })
      throw error // as a real consumer would
    }
  }
  try {
    const result = await unpackArchive(file, {
      archiveName: path.basename(file),
      tmpDir: scratch,
      ...opts,
      onMember: opts.onMember ?? consume
    })
    return { ...result, got }
  } finally {
    expect(fs.readdirSync(scratch)).toEqual([])
    expect(listAll(root)).toEqual(before)
    fs.rmdirSync(scratch)
  }
}

// Python helpers to build bombs without compressing gigabytes: a deflate block of 1 MiB of
// zeros ending in a full flush does not refer back, so it can simply be repeated.
const PY_HELPERS = String.raw`
import bz2, gzip, struct, sys, tarfile, zlib
ZERO = bytes(1 << 20)
def zeros_deflate(mib):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(ZERO) + c.flush(zlib.Z_FULL_FLUSH)
    return block * mib + c.flush(zlib.Z_FINISH)
def zeros_crc(mib):
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(ZERO, crc)
    return crc
def zeros_gzip(mib):
    return b'\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff' + zeros_deflate(mib) + struct.pack('<II', zeros_crc(mib), (mib << 20) & 0xffffffff)
def zeros_bz2(mib):
    return bz2.compress(ZERO) * mib
def write_zip(path, members):
    out = bytearray(); cd = bytearray()
    for name, method, crc, csize, usize, data in members:
        off = len(out)
        out += struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, method, 0, 0x21, crc, csize, usize, len(name), 0) + name + data
        cd += struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, method, 0, 0x21, crc, csize, usize, len(name), 0, 0, 0, 0, 0, off) + name
    end = struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, len(members), len(members), len(cd), len(out), 0)
    open(path, 'wb').write(bytes(out + cd + end))
def tar_file(name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data)
    return ti.tobuf(tarfile.GNU_FORMAT) + data + bytes(-len(data) % 512)
def tar_header(name, size):
    ti = tarfile.TarInfo(name); ti.size = size
    return ti.tobuf(tarfile.GNU_FORMAT)
`

/** before.txt, then big.bin of `mib` MiB of zeros, then after.txt; compressed piece by piece. */
function zerosTar(name: string, format: 'tar.gz' | 'tar.bz2', mib: number): string {
  const file = path.join(root, name)
  python(
    `${PY_HELPERS}
mib = ${mib}
fmt = '${format}'
small = gzip.compress if fmt == 'tar.gz' else bz2.compress
zeros = zeros_gzip if fmt == 'tar.gz' else zeros_bz2
parts = [small(tar_file('before.txt', b'before\\n') + tar_header('big.bin', mib << 20)), zeros(mib),
         small(tar_file('after.txt', b'after\\n') + bytes(1024))]
open(sys.argv[1], 'wb').write(b''.join(parts))`,
    file
  )
  return file
}

/** big.bin of `mib` MiB of zeros, deflated, declaring `declared` bytes, then readme.txt. */
function zerosZip(name: string, mib: number, declared = mib * MiB): string {
  const file = path.join(root, name)
  python(
    `${PY_HELPERS}
data = zeros_deflate(${mib})
readme = b'read me\\n'
write_zip(sys.argv[1], [(b'big.bin', 8, zeros_crc(${mib}), len(data), ${declared}, data),
                        (b'readme.txt', 0, zlib.crc32(readme), len(readme), len(readme), readme)])`,
    file
  )
  return file
}

/** good.txt, then every kind of entry that must not be extracted, then after.txt. */
function hostileTar(): string {
  const tarFile = path.join(root, 'hostile.tar')
  if (fs.existsSync(tarFile)) return tarFile
  python(
    String.raw`import io, sys, tarfile
def add(t, name, data=b'evil', kind=tarfile.REGTYPE, link=''):
    ti = tarfile.TarInfo(name); ti.type = kind; ti.linkname = link
    if kind == tarfile.REGTYPE:
        ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)
with tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT) as t:
    add(t, 'good.txt', b'good')
    for name in ['../evil', '/etc/evil', 'a/../../up', 'C:\\evil', 'bad\x07name']:
        add(t, name)
    add(t, 'link', kind=tarfile.SYMTYPE, link='/etc/passwd')
    add(t, 'hard', kind=tarfile.LNKTYPE, link='/etc/shadow')
    add(t, 'tty', kind=tarfile.CHRTYPE)
    add(t, 'disk', kind=tarfile.BLKTYPE)
    add(t, 'pipe', kind=tarfile.FIFOTYPE)
    add(t, 'after.txt', b'after')`,
    tarFile
  )
  return tarFile
}

beforeAll(() => {
  requireTools()
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'aviary-unpack-'))
})

afterAll(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true })
})

describe('tools', () => {
  it('has every tool these tests build fixtures with', () => {
    expect(requireTools).not.toThrow()
  })
})

describe('member names', () => {
  it('normalizes safe names and refuses the ones that could escape', () => {
    expect(safeMemberPath('a/./b//c.exe')).toEqual({ path: 'a/b/c.exe', directory: false })
    expect(safeMemberPath('dir\\sub\\')).toEqual({ path: 'dir/sub', directory: true })
    expect(safeMemberPath('...hidden')).toEqual({ path: '...hidden', directory: false })
    for (const bad of ['', '/', './', '..', 'a/..', '/x', '\\x', '\\\\srv\\share\\x', 'C:\\x', 'c:x', 'a\\..\\..\\x', 'a/.. /x', 'x\0y', 'x\u009by']) {
      expect(safeMemberPath(bad), bad).toBeNull()
    }
    expect(showName('a\x01b\u202etxt.exe')).toBe('a\\x01b\\u202etxt.exe')
    expect(showName('a\u200bb\u00adc\u{E0041}.exe')).toBe('a\\u200bb\\xadc\\u{e0041}.exe')
  })
})

describe('sniffArchive / detectArchive', () => {
  it('recognizes formats by content and ignores compressed files without a tar', async () => {
    const dir = tree('detect', { 'a.txt': 'hello\n'.repeat(100), 'b.bin': randomBytes(2000) })
    run('zip', ['-q', 'x.zip', 'a.txt'], dir)
    run('tar', ['cf', 'x.tar', 'a.txt', 'b.bin'], dir)
    run('tar', ['czf', 'x.tgz', 'a.txt'], dir)
    run('tar', ['cjf', 'x.tbz', 'a.txt'], dir)
    run('zip', ['-q', 'a.zip', 'a.txt'], dir)
    execFileSync('sh', ['-c', 'gzip -c a.txt > a.txt.gz && bzip2 -c a.txt > a.txt.bz2'], { cwd: dir })
    python(
      `import zipfile, sys
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    z.writestr('[Content_Types].xml', '<Types/>')
    z.writestr('word/document.xml', '<w:document/>')`,
      path.join(dir, 'report.docx')
    )
    const at = (f: string) => path.join(dir, f)
    expect(await detectArchive(at('x.zip'))).toBe('zip')
    expect(await detectArchive(at('x.tar'))).toBe('tar')
    expect(await detectArchive(at('x.tgz'))).toBe('tar.gz')
    expect(await detectArchive(at('x.tbz'))).toBe('tar.bz2')
    expect(await detectArchive(at('a.txt.gz'))).toBeNull()
    expect(await detectArchive(at('a.txt.bz2'))).toBeNull()
    expect(await detectArchive(at('report.docx'))).toBeNull()
    expect(await detectArchive(at('b.bin'))).toBeNull()

    const head = fs.readFileSync(at('x.tar')).subarray(0, 512)
    expect(sniffArchive(head)).toBe('tar')
    const badSum = Buffer.from(head)
    badSum[0] = (badSum[0] ?? 0) ^ 1
    expect(sniffArchive(badSum)).toBeNull()
    expect(sniffArchive(fs.readFileSync(at('x.tgz')).subarray(0, 512))).toBe('gzip')
    expect(sniffArchive(fs.readFileSync(at('x.tbz')).subarray(0, 512))).toBe('bzip2')
    expect(sniffArchive(Buffer.from('PK\x05\x06' + '\0'.repeat(18), 'latin1'))).toBe('zip')
    expect(sniffArchive(Buffer.from('MZ\x90\0'))).toBeNull()
  })
})

describe('zip', () => {
  it('yields every file with its path and exact content, skipping directories', async () => {
    const files = {
      'readme.txt': 'read me\n',
      'bin/sample.exe': randomBytes(300 * 1024),
      'docs/pdf0.pdf': `%PDF-1.4\n${'x'.repeat(5000)}\n%%EOF\n`,
      'empty.txt': ''
    }
    const dir = tree('plain', files)
    run('zip', ['-q', '-r', '-X', path.join(root, 'plain.zip'), '.'], dir)
    const r = await unpack(path.join(root, 'plain.zip'))
    expect(r.format).toBe('zip')
    expect(r.errors).toEqual([])
    expect(r.members).toBe(4)
    expect(r.got.map((g) => [g.path, g.sha256]).sort()).toEqual(Object.entries(files).map(([p, c]) => [p, sha(c)]).sort())
    expect(r.got.every((g) => g.containers.length === 1 && g.containers[0] === 'plain.zip')).toBe(true)
  })

  it('decrypts ZipCrypto entries and reports a wrong password per member', async () => {
    const dir = tree('zipcrypto', { 'a.exe': randomBytes(50_000), 'b.exe': 'MZ'.padEnd(20_000, 'b') })
    const zipFile = path.join(root, 'sample.zip')
    run('zip', ['-q', '-P', 'infected', zipFile, 'a.exe'], dir)
    run('zip', ['-q', '-P', 'other', zipFile, 'b.exe'], dir)
    const r = await unpack(zipFile)
    expect(r.got.filter((g) => !g.error).map((g) => [g.path, g.sha256])).toEqual([['a.exe', shaFile(path.join(dir, 'a.exe'))]])
    // ZipCrypto's one check byte lets 1 wrong password in 256 through, to fail on the data instead.
    expect(r.errors).toHaveLength(1)
    expect(r.errors[0]).toMatch(/^sample\.zip: 'b\.exe': wrong password/)
  })

  it('decrypts AES-256 entries made by 7z, and says when the password is wrong', async () => {
    const dir = tree('aes', { 'a.exe': randomBytes(70_000), 'notes.txt': 'aes notes\n'.repeat(1000) })
    const zipFile = path.join(root, 'aes.zip')
    run('7z', ['a', '-bd', '-tzip', '-mem=AES256', '-pinfected', zipFile, 'a.exe', 'notes.txt'], dir)
    const r = await unpack(zipFile)
    expect(r.errors).toEqual([])
    expect(r.got.map((g) => [g.path, g.sha256]).sort()).toEqual([
      ['a.exe', shaFile(path.join(dir, 'a.exe'))],
      ['notes.txt', shaFile(path.join(dir, 'notes.txt'))]
    ])
    const wrong = await unpack(zipFile, { password: 'not-it' })
    expect(wrong.got).toEqual([])
    expect(wrong.errors).toEqual(["aes.zip: 'a.exe': wrong password", "aes.zip: 'notes.txt': wrong password"])
  })

  it('refuses unsafe names, links and devices, and keeps the good members', async () => {
    const zipFile = path.join(root, 'hostile.zip')
    python(
      String.raw`import zipfile, sys
out = sys.argv[1]
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('good.txt', 'good')
    for name in ['../evil.txt', '/abs.txt', '\\abs2.txt', 'C:\\x.txt', 'C:x.txt', 'a/../../up.txt',
                 'ok/..\\..\\win-up.txt', 'bad\x01name.txt', 'nulXname.txt', 'dots/.. /x.txt', '.']:
        z.writestr(name, 'evil')
    z.writestr('sub\\dir\\win.txt', 'windows')
    link = zipfile.ZipInfo('link'); link.create_system = 3; link.external_attr = 0o120777 << 16
    z.writestr(link, '/etc/passwd')
    fifo = zipfile.ZipInfo('pipe'); fifo.create_system = 3; fifo.external_attr = 0o010644 << 16
    z.writestr(fifo, '')
    z.writestr('dir/', '')
data = open(out, 'rb').read().replace(b'nulXname', b'nul\x00name')
open(out, 'wb').write(data)`,
      zipFile
    )
    const r = await unpack(zipFile)
    expect(r.got.map((g) => [g.path, g.sha256]).sort()).toEqual([
      ['good.txt', sha('good')],
      ['sub/dir/win.txt', sha('windows')]
    ])
    const unsafe = (n: string) => `hostile.zip: '${n}': unsafe path in archive, skipped`
    expect(r.errors).toEqual([
      unsafe('../evil.txt'),
      unsafe('/abs.txt'),
      unsafe('\\abs2.txt'),
      unsafe('C:\\x.txt'),
      unsafe('C:x.txt'),
      unsafe('a/../../up.txt'),
      unsafe('ok/..\\..\\win-up.txt'),
      unsafe('bad\\x01name.txt'),
      unsafe('nul\\x00name.txt'),
      unsafe('dots/.. /x.txt'),
      unsafe('.'),
      "hostile.zip: 'link': symbolic link, skipped",
      "hostile.zip: 'pipe': fifo, skipped"
    ])
  })

  it('reports a corrupt member and still yields the others', async () => {
    const dir = tree('corruptzip', { 'a.txt': 'alpha line\n'.repeat(20_000), 'b.txt': 'bravo line\n'.repeat(20_000) })
    const zipFile = path.join(root, 'corrupt.zip')
    run('zip', ['-q', zipFile, 'a.txt', 'b.txt'], dir)
    python(
      `import zipfile, sys
z = zipfile.ZipFile(sys.argv[1]); i = z.getinfo('a.txt'); z.close()
data = bytearray(open(sys.argv[1], 'rb').read())
start = i.header_offset + 30 + len(i.filename) + len(i.extra) + i.compress_size // 2
for k in range(start, start + 16): data[k] ^= 0x5a
open(sys.argv[1], 'wb').write(bytes(data))`,
      zipFile
    )
    const r = await unpack(zipFile)
    expect(r.got.filter((g) => !g.error).map((g) => g.path)).toEqual(['b.txt'])
    expect(r.errors).toHaveLength(1)
    expect(r.errors[0]).toMatch(/^corrupt\.zip: 'a\.txt': corrupt data/)
  })

  it('reports a truncated zip without throwing', async () => {
    const dir = tree('truncatedzip', { 'a.txt': 'a\n'.repeat(1000) })
    const zipFile = path.join(root, 'cut.zip')
    run('zip', ['-q', zipFile, 'a.txt'], dir)
    fs.truncateSync(zipFile, fs.statSync(zipFile).size - 30)
    const r = await unpack(zipFile, { format: 'zip' })
    expect(r.got).toEqual([])
    expect(r.errors).toHaveLength(1)
    expect(r.errors[0]).toMatch(/^cut\.zip: corrupt or unsupported zip \(/)
  })
})

describe('tar', () => {
  const files = {
    'readme.txt': 'read me\n',
    'bin/sample.exe': randomBytes(200 * 1024),
    [`deep/${'long-directory-name/'.repeat(8)}file.bin`]: randomBytes(1000), // > 100 bytes: GNU long name
    'unicode/сэмпл-文件.exe': 'MZ unicode'
  }

  for (const [flag, format, ext] of [
    ['cf', 'tar', 'tar'],
    ['czf', 'tar.gz', 'tgz'],
    ['cjf', 'tar.bz2', 'tar.bz2']
  ] as const) {
    it(`yields regular files of a ${format} and skips links and fifos`, async () => {
      const dir = tree(`tar-${ext}`, files)
      fs.symlinkSync('/etc/passwd', path.join(dir, 'link'))
      fs.linkSync(path.join(dir, 'readme.txt'), path.join(dir, 'zz-hard.txt')) // archived after its target
      execFileSync('mkfifo', [path.join(dir, 'pipe')])
      const tarFile = path.join(root, `sample.${ext}`)
      run('tar', [flag, tarFile, '--format=gnu', '--sort=name', '.'], dir)
      const r = await unpack(tarFile)
      expect(r.format).toBe(format)
      expect(r.got.map((g) => [g.path, g.sha256]).sort()).toEqual(Object.entries(files).map(([p, c]) => [p, sha(c)]).sort())
      expect(r.errors.sort()).toEqual(
        [
          `sample.${ext}: './link': symbolic link, skipped`,
          `sample.${ext}: './pipe': fifo, skipped`,
          `sample.${ext}: './zz-hard.txt': hard link, skipped`
        ].sort()
      )
    })
  }

  it('handles pax headers (long names and unicode) as written by tar --format=pax', async () => {
    const name = `${'ünïcödé-'.repeat(20)}.bin`
    const dir = tree('pax', { [name]: 'pax content' })
    run('tar', ['cf', path.join(root, 'pax.tar'), '--format=pax', name], dir)
    const r = await unpack(path.join(root, 'pax.tar'))
    expect(r.errors).toEqual([])
    expect(r.got.map((g) => [g.path, g.sha256])).toEqual([[name, sha('pax content')]])
  })

  it('refuses unsafe names, links and devices crafted with tarfile', async () => {
    const tarFile = hostileTar()
    const r = await unpack(tarFile)
    expect(r.got.map((g) => [g.path, g.sha256])).toEqual([
      ['good.txt', sha('good')],
      ['after.txt', sha('after')]
    ])
    const unsafe = (n: string) => `hostile.tar: '${n}': unsafe path in archive, skipped`
    expect(r.errors).toEqual([
      unsafe('../evil'),
      unsafe('/etc/evil'),
      unsafe('a/../../up'),
      unsafe('C:\\evil'),
      unsafe('bad\\x07name'),
      "hostile.tar: 'link': symbolic link, skipped",
      "hostile.tar: 'hard': hard link, skipped",
      "hostile.tar: 'tty': character device, skipped",
      "hostile.tar: 'disk': block device, skipped",
      "hostile.tar: 'pipe': fifo, skipped"
    ])
  })

  for (const [format, make] of [
    ['tar', (dir: string, out: string) => run('tar', ['cf', out, 'a.bin', 'b.bin', 'c.txt'], dir)],
    ['tar.gz', (dir: string, out: string) => run('tar', ['czf', out, 'a.bin', 'b.bin', 'c.txt'], dir)],
    [
      'tar.bz2',
      // Small bzip2 blocks, so the first member decodes before the cut.
      (dir: string, out: string) => execFileSync('sh', ['-c', 'tar cf - a.bin b.bin c.txt | bzip2 -1 > "$1"', 'sh', out], { cwd: dir })
    ]
  ] as const) {
    it(`keeps what came before the damage in a truncated ${format}`, async () => {
      const dir = tree(`cut-${format}`, { 'a.bin': randomBytes(250 * 1024), 'b.bin': randomBytes(250 * 1024), 'c.txt': 'c' })
      const out = path.join(root, `cut.${format}`)
      make(dir, out)
      fs.truncateSync(out, Math.floor(fs.statSync(out).size * 0.7))
      const r = await unpack(out, { format })
      expect(r.got.filter((g) => !g.error).map((g) => [g.path, g.sha256])).toEqual([['a.bin', shaFile(path.join(dir, 'a.bin'))]])
      expect(r.got.some((g) => g.path === 'c.txt')).toBe(false)
      expect(r.errors).toHaveLength(1)
      expect(r.errors[0]).toMatch(new RegExp(`^cut\\.${format.replace('.', '\\.')}: ('b\\.bin': incomplete: )?truncated or corrupt archive \\(.+\\), the rest of the archive was lost$`))
    })
  }

  it('says so when the bzip2 program is missing', async () => {
    const dir = tree('nobzip', { 'a.txt': 'a' })
    const tbz = path.join(root, 'nobzip.tar.bz2')
    run('tar', ['cjf', tbz, 'a.txt'], dir)
    const saved = process.env.PATH
    process.env.PATH = fs.mkdtempSync(path.join(root, 'empty-path-'))
    try {
      await expect(detectArchive(tbz)).rejects.toThrow(/bzip2 program is not installed/)
      const r = await unpack(tbz, { format: 'tar.bz2' })
      expect(r.got).toEqual([])
      expect(r.errors).toEqual([
        'nobzip.tar.bz2: truncated or corrupt archive (the bzip2 program is not installed on this host (it is needed for .bz2 archives)), the rest of the archive was lost'
      ])
    } finally {
      fs.rmdirSync(process.env.PATH)
      process.env.PATH = saved
    }
  })
})

describe('nested archives', () => {
  it('unpacks a zip inside a tgz and names both containers', async () => {
    const pdf = `%PDF-1.4\n${'q'.repeat(3000)}\n%%EOF\n`
    const dir = tree('nested', { 'files/pdf0.pdf': pdf, 'top.txt': 'top' })
    run('zip', ['-q', '-r', 'pdf0.zip', 'files'], dir)
    run('tar', ['czf', path.join(root, 'pdf0.tgz'), 'pdf0.zip', 'top.txt'], dir)
    const r = await unpack(path.join(root, 'pdf0.tgz'))
    expect(r.errors).toEqual([])
    expect(r.got.map((g) => [g.containers, g.path, g.sha256])).toEqual([
      [['pdf0.tgz', 'pdf0.zip'], 'files/pdf0.pdf', sha(pdf)],
      [['pdf0.tgz'], 'top.txt', sha('top')]
    ])
  })

  it('stops at maxDepth, yields deeper archives as files, and reuses the password', async () => {
    const dir = tree('deep', { 'inner.txt': 'inner', 'top.txt': 'top' })
    run('zip', ['-q', '-P', 'infected', 'l3.zip', 'inner.txt'], dir)
    run('zip', ['-q', '-P', 'infected', 'l2.zip', 'l3.zip'], dir)
    run('zip', ['-q', '-P', 'infected', path.join(root, 'l1.zip'), 'l2.zip', 'top.txt'], dir)
    const r = await unpack(path.join(root, 'l1.zip'))
    expect(r.errors).toEqual([])
    expect(r.got.map((g) => [g.containers, g.path, g.sha256])).toEqual([
      [['l1.zip', 'l2.zip'], 'l3.zip', shaFile(path.join(dir, 'l3.zip'))],
      [['l1.zip'], 'top.txt', sha('top')]
    ])
    const deeper = await unpack(path.join(root, 'l1.zip'), { limits: { maxDepth: 3 } })
    expect(deeper.got.map((g) => [g.containers, g.path])).toEqual([
      [['l1.zip', 'l2.zip', 'l3.zip'], 'inner.txt'],
      [['l1.zip'], 'top.txt']
    ])
    const flat = await unpack(path.join(root, 'l1.zip'), { limits: { maxDepth: 1 } })
    expect(flat.got.map((g) => [g.containers, g.path])).toEqual([
      [['l1.zip'], 'l2.zip'],
      [['l1.zip'], 'top.txt']
    ])
  })

  it('keeps members that only look like archives as files', async () => {
    const text = 'not a tar\n'.repeat(500)
    const dir = tree('lookalikes', { 'notes.txt': text, 'fake.zip': Buffer.concat([Buffer.from('PK\x03\x04'), randomBytes(600)]) })
    execFileSync('sh', ['-c', 'gzip -c notes.txt > notes.txt.gz && bzip2 -c notes.txt > notes.txt.bz2'], { cwd: dir })
    python(
      `import zipfile, sys
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    z.writestr('[Content_Types].xml', '<Types/>')
    z.writestr('word/document.xml', '<w:document/>')`,
      path.join(dir, 'report.docx')
    )
    const names = ['notes.txt.gz', 'notes.txt.bz2', 'report.docx', 'fake.zip']
    run('zip', ['-q', path.join(root, 'lookalikes.zip'), ...names], dir)
    const r = await unpack(path.join(root, 'lookalikes.zip'))
    expect(r.errors).toEqual([])
    expect(r.got.map((g) => [g.path, g.sha256])).toEqual(names.map((n) => [n, shaFile(path.join(dir, n))]))
  })

  it('stops everything when a nested archive is a bomb', async () => {
    zerosTar('inner-bomb.tar.bz2', 'tar.bz2', 64)
    const dir = tree('outer-bomb', { 'first.txt': 'first', 'last.txt': 'last' })
    fs.copyFileSync(path.join(root, 'inner-bomb.tar.bz2'), path.join(dir, 'inner-bomb.tar.bz2'))
    run('zip', ['-q', path.join(root, 'outer-bomb.zip'), 'first.txt', 'inner-bomb.tar.bz2', 'last.txt'], dir)
    const r = await unpack(path.join(root, 'outer-bomb.zip'))
    expect(r.got.map((g) => [g.containers, g.path])).toEqual([
      [['outer-bomb.zip'], 'first.txt'],
      [['outer-bomb.zip', 'inner-bomb.tar.bz2'], 'before.txt'],
      [['outer-bomb.zip', 'inner-bomb.tar.bz2'], 'big.bin']
    ])
    expect(r.errors).toEqual([
      "outer-bomb.zip > inner-bomb.tar.bz2: 'big.bin': expands more than 1000 times its compressed size, skipped (decompression bomb?); unpacking stopped, remaining members were not extracted"
    ])
  })

  it('rejects, without leaking paths, when the scratch directory cannot be written', async () => {
    const dir = tree('noscratch', { 'a.txt': 'a' })
    run('zip', ['-q', 'inner.zip', 'a.txt'], dir)
    run('zip', ['-q', path.join(root, 'noscratch.zip'), 'inner.zip'], dir)
    const missing = path.join(root, 'no-such-dir')
    const attempt = unpackArchive(path.join(root, 'noscratch.zip'), {
      archiveName: 'noscratch.zip',
      tmpDir: missing,
      onMember: async (m) => void m.source.resume()
    })
    await expect(attempt).rejects.toThrow(/^cannot write to the scratch directory \(ENOENT\)$/)
    expect(fs.existsSync(missing)).toBe(false)
  })

  it('aborts when the consumer fails inside a nested archive, leaving no temp file', async () => {
    const dir = tree('abort', { 'a.txt': 'a', 'b.txt': 'b' })
    run('zip', ['-q', 'inner.zip', 'a.txt', 'b.txt'], dir)
    run('zip', ['-q', path.join(root, 'abort.zip'), 'inner.zip'], dir)
    let seen = 0
    await expect(
      unpack(path.join(root, 'abort.zip'), {
        onMember: async (m) => {
          m.source.resume()
          if (++seen === 2) throw new Error('storage is full')
        }
      })
    ).rejects.toThrow('storage is full')
  })
})

describe('bombs and limits', () => {
  it('refuses a zip declaring 2 GiB of zeros before extracting anything (default limits)', async () => {
    const r = await unpack(zerosZip('bomb.zip', 2048))
    expect(r.got).toEqual([])
    expect(r.errors).toEqual([
      "bomb.zip: 'big.bin': declares 2 GiB, beyond 1 GiB, refused before extraction (decompression bomb?); unpacking stopped, remaining members were not extracted"
    ])
  })

  it('does not trust a zip header that lies low about the size (default limits)', async () => {
    const r = await unpack(zerosZip('liar.zip', 64, 1000))
    expect(r.got.filter((g) => !g.error).map((g) => g.path)).toEqual(['readme.txt'])
    expect(r.got.every((g) => g.size <= 1000)).toBe(true)
    expect(r.errors).toEqual([
      "liar.zip: 'big.bin': content does not match its declared size of 1000 bytes (lying header or corrupt entry), skipped"
    ])
  })

  it('stops a 2 GiB tar.gz bomb at the member limit and errors the member stream', async () => {
    const r = await unpack(zerosTar('bomb.tar.gz', 'tar.gz', 2048), { limits: { maxMemberBytes: 8 * MiB } })
    expect(r.got.map((g) => g.path)).toEqual(['before.txt', 'big.bin'])
    const big = r.got[1]
    expect(big?.error).toBeInstanceOf(UnpackLimitError)
    expect(big?.size).toBeLessThanOrEqual(8 * MiB)
    expect(r.errors).toEqual([
      "bomb.tar.gz: 'big.bin': expands beyond 8 MiB, skipped (decompression bomb?); unpacking stopped, remaining members were not extracted"
    ])
  })

  it('stops a tar.bz2 bomb on its ratio with default limits', async () => {
    const r = await unpack(zerosTar('bomb.tar.bz2', 'tar.bz2', 2048))
    expect(r.got.map((g) => g.path)).toEqual(['before.txt', 'big.bin'])
    // The ratio is that of the stream so far, and ~100 KiB of input is read ahead: it trips
    // well before the 1 GiB member limit would.
    expect(r.got[1]?.size).toBeLessThan(256 * MiB)
    expect(r.errors).toEqual([
      "bomb.tar.bz2: 'big.bin': expands more than 1000 times its compressed size, skipped (decompression bomb?); unpacking stopped, remaining members were not extracted"
    ])
  })

  it('meters data carried by entries it skips (a symlink with a 64 MiB body)', async () => {
    const file = path.join(root, 'fat-link.tar.gz')
    python(
      `${PY_HELPERS}
link = tarfile.TarInfo('link'); link.type = tarfile.SYMTYPE; link.linkname = '/etc/passwd'; link.size = 64 << 20
parts = [gzip.compress(tar_file('before.txt', b'before') + link.tobuf(tarfile.GNU_FORMAT)), zeros_gzip(64),
         gzip.compress(tar_file('after.txt', b'after') + bytes(1024))]
open(sys.argv[1], 'wb').write(b''.join(parts))`,
      file
    )
    const r = await unpack(file, { limits: { maxMemberBytes: 8 * MiB } })
    expect(r.got.map((g) => g.path)).toEqual(['before.txt'])
    expect(r.errors).toEqual([
      "fat-link.tar.gz: 'link': symbolic link, skipped",
      "fat-link.tar.gz: 'link': expands beyond 8 MiB, skipped (decompression bomb?); unpacking stopped, remaining members were not extracted"
    ])
  })

  it('enforces the total and member-count limits across members', async () => {
    const dir = tree('many', Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`f${i}.bin`, randomBytes(MiB)])))
    const names = ['f1.bin', 'f2.bin', 'f3.bin', 'f4.bin', 'f5.bin']
    run('tar', ['cf', path.join(root, 'many.tar'), ...names], dir)
    run('zip', ['-q', path.join(root, 'many.zip'), ...names], dir)

    const total = await unpack(path.join(root, 'many.tar'), { limits: { maxTotalBytes: 2.5 * MiB } })
    expect(total.got.filter((g) => !g.error).map((g) => g.path)).toEqual(['f1.bin', 'f2.bin'])
    expect(total.errors).toEqual([
      "many.tar: 'f3.bin': takes the archive beyond 2560 KiB in total, skipped (decompression bomb?); unpacking stopped, remaining members were not extracted"
    ])
    const declared = await unpack(path.join(root, 'many.zip'), { limits: { maxTotalBytes: 2.5 * MiB } })
    expect(declared.got).toEqual([])
    expect(declared.errors[0]).toMatch(/^many\.zip: members declare 5 MiB in total, beyond 2560 KiB, refused before extraction/)

    // Entries skipped for their names or types count too.
    const hostile = await unpack(hostileTar(), { limits: { maxMembers: 2 } })
    expect(hostile.got.map((g) => g.path)).toEqual(['good.txt'])
    expect(hostile.errors).toEqual([
      "hostile.tar: '../evil': unsafe path in archive, skipped",
      'hostile.tar: more than 2 members; unpacking stopped, remaining members were not extracted'
    ])

    for (const file of ['many.tar', 'many.zip']) {
      const count = await unpack(path.join(root, file), { limits: { maxMembers: 3 } })
      expect(count.got.map((g) => g.path)).toEqual(['f1.bin', 'f2.bin', 'f3.bin'])
      expect(count.errors).toEqual([`${file}: more than 3 members; unpacking stopped, remaining members were not extracted`])
    }
  })

  it('applies the ratio limit to a tar.gz once a member passes 1 MiB', async () => {
    const r = await unpack(zerosTar('ratio.tar.gz', 'tar.gz', 16), { limits: { maxRatio: 100 } })
    expect(r.got[1]?.error).toBeInstanceOf(UnpackLimitError)
    expect(r.errors).toEqual([
      "ratio.tar.gz: 'big.bin': expands more than 100 times its compressed size, skipped (decompression bomb?); unpacking stopped, remaining members were not extracted"
    ])
  })
})

describe('consumers and backpressure', () => {
  it('copes with consumers that skip a member or return without reading it', async () => {
    const dir = tree('skip', { 'a.bin': randomBytes(3 * MiB), 'b.bin': randomBytes(3 * MiB), 'c.txt': 'c' })
    run('zip', ['-q', path.join(root, 'skip.zip'), 'a.bin', 'b.bin', 'c.txt'], dir)
    run('tar', ['czf', path.join(root, 'skip.tgz'), 'a.bin', 'b.bin', 'c.txt'], dir)
    for (const file of ['skip.zip', 'skip.tgz']) {
      const seen: string[] = []
      const r = await unpack(path.join(root, file), {
        onMember: async (m) => {
          seen.push(m.path)
          if (m.path === 'a.bin') m.source.destroy()
        }
      })
      expect(seen).toEqual(['a.bin', 'b.bin', 'c.txt'])
      expect(r.errors).toEqual([])
    }
  })

  for (const format of ['zip', 'tar.gz', 'tar.bz2'] as const) {
    it(`holds memory flat while a ${format} consumer stalls on a 256 MiB member`, async () => {
      const file = format === 'zip' ? zerosZip(`flat.zip`, 256) : zerosTar(`flat.${format}`, format, 256)
      const zeroSha = createHash('sha256')
      for (let i = 0; i < 256; i++) zeroSha.update(Buffer.alloc(MiB))
      let buffered = -1
      let growth = -1
      const r = await unpack(file, {
        limits: { maxRatio: 1e9 },
        onMember: async (m) => {
          if (m.path !== 'big.bin') return void m.source.resume()
          const hash = createHash('sha256')
          let size = 0
          let paused = false
          for await (const chunk of m.source as AsyncIterable<Buffer>) {
            hash.update(chunk)
            size += chunk.length
            if (!paused && size > 4 * MiB) {
              paused = true
              const before = process.memoryUsage().arrayBuffers
              await sleep(400) // a slow consumer: the producer must wait, not buffer
              growth = process.memoryUsage().arrayBuffers - before
              buffered = m.source.readableLength
            }
          }
          expect(size).toBe(256 * MiB)
          expect(hash.digest('hex')).toBe(zeroSha.digest('hex'))
        }
      })
      expect(r.errors).toEqual([])
      expect(buffered).toBeGreaterThanOrEqual(0)
      expect(buffered).toBeLessThanOrEqual(MiB)
      expect(growth).toBeLessThan(32 * MiB)
    })
  }
})
