// The result server over real TCP: every header kind, the caps and truncation marker, files.json,
// path attacks (traversal, absolute, backslashes, reports/, planted symlinks), oversized and slow
// headers, idle bodies, unknown source IPs and removeTask cutting a live stream. Guests are
// loopback source addresses 127.0.0.N (Linux routes 127/8 to lo).
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { existsSync, statSync } from 'node:fs'
import { mkdir, readFile, readdir, rm, symlink, writeFile, stat } from 'node:fs/promises'
import path from 'node:path'
import net from 'node:net'
import { ResultServer } from './result-server'
import { parseHeader, HeaderError } from './netlog-header'
import { sanitizeUploadPath } from './upload-path'
import { Recorder, closed, connectFrom, makeTaskDir, makeTemp, send, waitUntil } from './test-tools'

const G = '127.0.0.21' // the registered guest
const STRANGER = '127.0.0.29'

let root: string
let dir: string
let rec: Recorder
let rs: ResultServer
let port: number

async function start(limits = { uploadMaxSize: 1 << 20, taskMaxSize: 16 << 20 }, timeouts = { headerTimeoutMs: 400, idleTimeoutMs: 400 }): Promise<void> {
  rs = new ResultServer({ limits, log: rec.log, ...timeouts })
  port = await rs.listen('127.0.0.1', 0)
  rs.addTask(G, rec.task(1, dir))
}

beforeEach(async () => {
  root = await makeTemp()
  dir = await makeTaskDir(root, 'task1')
  await mkdir(path.join(root, 'outside'))
  rec = new Recorder()
})

afterEach(async () => {
  await rs?.stop()
  await rm(root, { recursive: true, force: true })
})

const fileNames = async (d: string): Promise<string[]> => (await readdir(d, { recursive: true })).map(String).sort()

describe('listen', () => {
  it('is idempotent per ip:port and reuses the ephemeral port', async () => {
    await start()
    expect(await rs.listen('127.0.0.1', 0)).toBe(port)
    expect(await rs.listen('127.0.0.1', port)).toBe(port)
    const other = await rs.listen('127.0.0.2', 0)
    expect(other).toBeGreaterThan(0)
    expect(await rs.listen('127.0.0.2', 0)).toBe(other)
    // a port someone else holds fails, and a later call may try again
    await expect(rs.listen('127.0.0.2', port === other ? port + 1 : port)).resolves.toBeGreaterThan(0)
    const rs2 = new ResultServer({ limits: { uploadMaxSize: 1, taskMaxSize: 1 }, log: rec.log })
    await expect(rs2.listen('127.0.0.1', port)).rejects.toThrow(/EADDRINUSE/)
    await rs2.stop()
  })

  it('refuses a second registration of one IP and maps ::ffff: addresses', async () => {
    await start()
    expect(() => rs.addTask(G, rec.task(2, dir))).toThrow(/already registered/)
    expect(() => rs.addTask(`::ffff:${G}`, rec.task(2, dir))).toThrow(/already registered/)
    expect(() => rs.addTask('not-an-ip', rec.task(2, dir))).toThrow(/not an IP/)
  })

  it('accepts IPv4 guests on a dual-stack listener (::ffff:-mapped source)', async () => {
    await start()
    const p6 = await rs.listen('::', 0)
    const s = await connectFrom(p6, G, '127.0.0.1')
    const done = closed(s)
    s.end('FILE\nshots/0001.jpg\njpeg')
    await done
    await waitUntil('upload', () => rec.upload('shots/0001.jpg') !== undefined)
    expect(await readFile(path.join(dir, 'shots/0001.jpg'), 'utf8')).toBe('jpeg')
  })
})

describe('protocol', () => {
  beforeEach(() => start())

  it('FILE v1 stores the body, no files.json line', async () => {
    const body = randomBytes(300_000)
    await send(port, G, 'FILE\nshots/0001.jpg\n', body)
    await waitUntil('upload', () => rec.upload('shots/0001.jpg') !== undefined)
    expect(rec.upload('shots/0001.jpg')).toEqual({ path: 'shots/0001.jpg', bytes: body.length, truncated: false })
    expect((await readFile(path.join(dir, 'shots/0001.jpg'))).equals(body)).toBe(true)
    await expect(stat(path.join(dir, 'files.json'))).rejects.toThrow(/ENOENT/)
    expect((await stat(path.join(dir, 'shots/0001.jpg'))).mode & 0o777).toBe(0o644 & ~process.umask())
  })

  it('FILE 2 writes files.json before the body, header and body in one packet or byte by byte', async () => {
    const a = randomBytes(5000)
    await send(port, G, Buffer.concat([Buffer.from('FILE 2\nfiles\\abc_x.exe\nC:\\Users\\x\\x.exe\n12 34\n'), a]))
    const header = 'FILE 2\nmemory/12-1.dmp\n\n\n'
    await send(port, G, ...header.split(''), 'dump')
    await waitUntil('uploads', () => rec.uploads.length === 2)
    expect((await readFile(path.join(dir, 'files/abc_x.exe'))).equals(a)).toBe(true)
    expect(await readFile(path.join(dir, 'memory/12-1.dmp'), 'utf8')).toBe('dump')
    const lines = (await readFile(path.join(dir, 'files.json'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as unknown)
    expect(lines).toEqual([
      { path: 'files/abc_x.exe', filepath: 'C:\\Users\\x\\x.exe', pids: [12, 34] },
      { path: 'memory/12-1.dmp', filepath: null, pids: [] }
    ])
  })

  it('BSON <pid> goes to logs/<pid>.bson, a reconnect appends, bad pids store nothing', async () => {
    await send(port, G, 'BSON 1234\n', 'first|')
    await waitUntil('first stream', () => rec.uploads.length === 1)
    await send(port, G, 'BSON 1234\nsecond')
    await waitUntil('second stream', () => rec.uploads.length === 2)
    expect(await readFile(path.join(dir, 'logs/1234.bson'), 'utf8')).toBe('first|second')
    for (const bad of ['BSON\n', 'BSON -1\n', 'BSON 12345678901\n', 'BSON ../1\n', 'BSON 1 2\n']) await send(port, G, bad, 'x')
    await waitUntil('warnings', () => rec.warnings.length === 5)
    expect(await fileNames(path.join(dir, 'logs'))).toEqual(['1234.bson'])
  })

  it('LOG delivers lines (CRLF, over-long cut at 4096, last partial line) and refuses a second LOG', async () => {
    const s = await connectFrom(port, G)
    const done = closed(s)
    s.write('LOG\n2026-01-01 00:00:00,000 [analyzer] INFO: hello\r\nsecond ')
    s.write(`line\n${'y'.repeat(10_000)}\n`)
    await waitUntil('lines', () => rec.lines.length === 3)
    await send(port, G, 'LOG\nintruder\n')
    await waitUntil('refusal', () => rec.warned(/second LOG/))
    s.end('tail')
    await done
    await waitUntil('tail', () => rec.lines.length === 4)
    expect(rec.lines).toEqual(['2026-01-01 00:00:00,000 [analyzer] INFO: hello', 'second line', 'y'.repeat(4096), 'tail'])
  })

  it('refuses unknown commands and over-long headers, storing nothing', async () => {
    await send(port, G, 'GET / HTTP/1.0\n\n')
    await send(port, G, 'FILE\n' + 'a'.repeat(5000))
    await send(port, G, 'L'.repeat(4097))
    await send(port, G, 'FILE 2\nfiles/p\nC:\\p\n1 x\nbody')
    await waitUntil('warnings', () => rec.warnings.length === 4)
    expect(rec.warnings.join('\n')).toMatch(/unknown command/)
    expect(rec.warnings.join('\n')).toMatch(/longer than 4096/)
    expect(rec.warnings.join('\n')).toMatch(/bad pids/)
    expect(await fileNames(dir)).toEqual(['buffer', 'extracted', 'files', 'logs', 'memory', 'reports', 'shots'])
  })

  it('closes connections from unregistered IPs at once', async () => {
    const s = await connectFrom(port, STRANGER)
    await closed(s)
    expect(rec.warned(new RegExp(`unregistered ${STRANGER.replace(/\./g, '\\.')}`))).toBe(true)
  })
})

describe('paths', () => {
  beforeEach(() => start())

  it('rejects traversal, absolute, reports/ and foreign folders; nothing lands anywhere', async () => {
    const before = await fileNames(root)
    const attacks = ['files/../../x', '/etc/x', 'files\\..\\x', '..\\..\\x', 'reports/report.json', 'logs/1.bson', 'logs/2.BSON',
      'foo/x', 'files/', 'files/..', 'files/.', 'x', '', 'files/a/b', 'files//x', '\\\\server\\share\\x', 'C:\\x', 'fi\0les/x',
      'files/' + 'n'.repeat(300)]
    for (const a of attacks) await send(port, G, `FILE 2\n${a}\nC:\\x\n1\n`, 'evil')
    await waitUntil('refusals', () => rec.warnings.length === attacks.length)
    expect(rec.uploads).toEqual([])
    expect(await fileNames(root)).toEqual(before)
  })

  it('accepts backslashes as separators, replaces NUL and ":" in the name, allows package_files and logs', async () => {
    await send(port, G, 'FILE 2\npackage_files\\doc.txt\n\n\n', 'p')
    await send(port, G, 'FILE\nfiles/a:b\0c\n', 'n')
    await send(port, G, 'FILE\nlogs/procmon.xml\n', 'x')
    await waitUntil('uploads', () => rec.uploads.length === 3)
    expect(rec.uploads.map((u) => u.path).sort()).toEqual(['files/aXbXc', 'logs/procmon.xml', 'package_files/doc.txt'])
    expect(await readFile(path.join(dir, 'package_files/doc.txt'), 'utf8')).toBe('p')
  })

  it('never overwrites, never follows a planted symlink (file or folder)', async () => {
    const outside = path.join(root, 'outside')
    await writeFile(path.join(outside, 'target'), 'original')
    await symlink(path.join(outside, 'target'), path.join(dir, 'files/x'))
    await symlink(outside, path.join(dir, 'package_files'))
    await rm(path.join(dir, 'extracted'), { recursive: true })
    await symlink(outside, path.join(dir, 'extracted'))
    await writeFile(path.join(dir, 'shots/0001.jpg'), 'old')
    await send(port, G, 'FILE\nfiles/x\n', 'evil')
    await send(port, G, 'FILE\npackage_files/new\n', 'evil')
    await send(port, G, 'FILE 2\nextracted/new\n\n\n', 'evil')
    await send(port, G, 'FILE\nshots/0001.jpg\n', 'evil')
    await waitUntil('refusals', () => rec.warnings.length === 4)
    expect(await readFile(path.join(outside, 'target'), 'utf8')).toBe('original')
    expect(await fileNames(outside)).toEqual(['target'])
    expect(await readFile(path.join(dir, 'shots/0001.jpg'), 'utf8')).toBe('old')
    expect(rec.warned(/never overwritten/)).toBe(true)
  })

  it('sanitizeUploadPath and parseHeader draw the lines exactly', () => {
    expect(sanitizeUploadPath('memory/1-1.dmp')).toEqual({ ok: true, path: { folder: 'memory', name: '1-1.dmp', rel: 'memory/1-1.dmp' } })
    expect(sanitizeUploadPath('reports/x').ok).toBe(false)
    expect(parseHeader(Buffer.from(`FILE\n${'a'.repeat(4096)}\n`))?.header).toMatchObject({ kind: 'file', version: 1 })
    expect(() => parseHeader(Buffer.from(`FILE\n${'a'.repeat(4097)}\n`))).toThrow(HeaderError)
    expect(parseHeader(Buffer.from('FILE 2\nfiles/x\n'))).toBeNull()
    expect(parseHeader(Buffer.from('BSON 0042\nrest'))).toEqual({ header: { kind: 'bson', pid: '42' }, consumed: 10, run: null })
  })
})

describe('run identity (Aviary\'s analyzer names its run on every connection)', () => {
  const RUN = 'a'.repeat(32)
  const OLD = 'b'.repeat(32)

  it('stores what names this run; refuses another run, no run, or a malformed run line, storing nothing', async () => {
    await start()
    await rs.removeTask(G)
    rs.addTask(G, rec.task(1, dir, RUN))
    await send(port, G, `AVIARY-RUN ${RUN}\nFILE 2\nfiles/mine\n/tmp/mine\n\n`, 'mine')
    await send(port, G, `AVIARY-RUN ${RUN}\nLOG\n`, '2026-01-01 00:00:00,000 [analyzer] INFO: this run\n')
    await send(port, G, `AVIARY-RUN ${OLD}\nFILE 2\nfiles/old\n/tmp/old\n\n`, 'from an earlier run')
    await send(port, G, 'FILE 2\nfiles/none\n/tmp/none\n\n', 'no run line')
    await send(port, G, 'AVIARY-RUN xyz\nFILE\nfiles/bad\n', 'malformed')
    await send(port, G, `AVIARY-RUN ${OLD}\nLOG\n`, '2026-01-01 00:00:00,000 [analyzer] INFO: old run\n')
    await waitUntil('refusals', () => rec.refused.length === 3 && rec.uploads.length === 1)
    expect(rec.refused).toEqual([
      expect.stringMatching(/^a FILE connection of another run \(bbbbbbbb…\), an analyzer left from an earlier task$/),
      expect.stringMatching(/^a FILE connection that names no run/),
      expect.stringMatching(/^a LOG connection of another run/)
    ])
    expect(rec.warned(/bad run line/)).toBe(true)
    expect((await readdir(path.join(dir, 'files'))).sort()).toEqual(['mine'])
    expect(rec.lines).toEqual(['2026-01-01 00:00:00,000 [analyzer] INFO: this run'])
    expect((await readFile(path.join(dir, 'files.json'), 'utf8')).trim().split('\n')).toHaveLength(1)
  })

  it('a task of Cuckoo\'s analyzer (no run) is served as Cuckoo served it, run line or not', async () => {
    await start()
    await send(port, G, 'FILE\nfiles/cuckoo\n', 'plain')
    await send(port, G, `AVIARY-RUN ${OLD}\nFILE\nfiles/tagged\n`, 'tagged')
    await waitUntil('uploads', () => rec.uploads.length === 2)
    expect(rec.refused).toEqual([])
  })
})

describe('caps and timeouts', () => {
  it('truncates a file at uploadMaxSize with the marker once, reading the rest', async () => {
    await start({ uploadMaxSize: 1000, taskMaxSize: 1 << 20 })
    const body = randomBytes(50_000)
    await send(port, G, 'FILE\nfiles/big\n', body.subarray(0, 700), body.subarray(700))
    await waitUntil('upload', () => rec.upload('files/big') !== undefined)
    const stored = await readFile(path.join(dir, 'files/big'))
    expect(stored.equals(Buffer.concat([body.subarray(0, 1000), Buffer.from('... (truncated)')]))).toBe(true)
    expect(rec.upload('files/big')).toEqual({ path: 'files/big', bytes: 1000, truncated: true })
  })

  it('stops a task at taskMaxSize across streams: closes them, logs once, refuses new ones', async () => {
    await start({ uploadMaxSize: 1 << 20, taskMaxSize: 100_000 })
    const a = await connectFrom(port, G)
    const b = await connectFrom(port, G)
    const aClosed = closed(a)
    const bClosed = closed(b)
    a.write('FILE\nfiles/a\n')
    b.write('BSON 7\n')
    a.write(Buffer.alloc(60_000, 1))
    await waitUntil('a stored', () => rec.uploads.length === 0 && rec.warnings.length === 0 && a.bytesWritten > 60_000)
    b.write(Buffer.alloc(60_000, 2))
    await Promise.all([aClosed, bClosed])
    await waitUntil('both closed', () => rec.uploads.length === 2)
    expect(rec.warnings.filter((w) => /reached its cap/.test(w))).toHaveLength(1)
    expect(rec.caps).toEqual([100_000]) // the run is told once, to end the analysis and say why
    const total = (await stat(path.join(dir, 'files/a'))).size + (await stat(path.join(dir, 'logs/7.bson'))).size
    expect(total).toBeLessThanOrEqual(100_000)
    expect(rec.uploads.some((u) => u.truncated)).toBe(true)
    await send(port, G, 'FILE\nfiles/late\n', 'x')
    await expect(stat(path.join(dir, 'files/late'))).rejects.toThrow(/ENOENT/)
  })

  it('never stores more than taskMaxSize, all channels together: log lines as stored, files.json, small files, BSON', async () => {
    const CAP = 50_000
    rs = new ResultServer({ limits: { uploadMaxSize: 1 << 20, taskMaxSize: CAP }, log: rec.log, headerTimeoutMs: 400, idleTimeoutMs: 400 })
    port = await rs.listen('127.0.0.1', 0)
    // analysis.log stores a guest's line behind a prefix of the host's: that is what it costs.
    const PREFIX = '2026-11-28 10:00:00,000 [guest] INFO: '
    rs.addTask(G, { ...rec.task(1, dir), logLineBytes: (line) => Buffer.byteLength(PREFIX + line) + 1 })
    const log = await connectFrom(port, G)
    const logClosed = closed(log)
    log.write('LOG\n')
    for (let i = 0; i < 400; i++) log.write(`line ${i} ${'x'.repeat(40)}\n`)
    const bson = await connectFrom(port, G)
    const bsonClosed = closed(bson)
    bson.write('BSON 9\n')
    bson.write(Buffer.alloc(5_000, 3))
    for (let i = 0; i < 200; i++) {
      await send(port, G, `FILE 2\nfiles/small-${i}.bin\n/tmp/a-rather-long-guest-path-for-file-number-${i}.bin\n1 2 3\n`, Buffer.alloc(150, 4)).catch(() => undefined)
    }
    log.end()
    bson.end()
    await Promise.all([logClosed, bsonClosed])
    await waitUntil('capped', () => rec.caps.length === 1)
    let stored = rec.lines.reduce((n, l) => n + Buffer.byteLength(PREFIX + l) + 1, 0)
    for (const f of await readdir(dir, { recursive: true })) {
      const st = await stat(path.join(dir, String(f)))
      if (st.isFile()) stored += st.size
    }
    expect(stored).toBeLessThanOrEqual(CAP)
    expect(stored).toBeGreaterThan(CAP - 1000)
    // No empty file without its files.json line, and no line without its file.
    const index = (await readFile(path.join(dir, 'files.json'), 'utf8')).trim().split('\n').map((l) => (JSON.parse(l) as { path: string }).path)
    expect(index.sort()).toEqual((await readdir(path.join(dir, 'files'))).map((f) => `files/${f}`).sort())
  })

  it('closes a header that trickles too slowly and a body that goes idle, keeping what arrived', async () => {
    await start()
    const slow = await connectFrom(port, G)
    const slowClosed = closed(slow)
    slow.write('FIL')
    const idle = await connectFrom(port, G)
    const idleClosed = closed(idle)
    idle.write('FILE\nfiles/idle\npartial')
    await Promise.all([slowClosed, idleClosed])
    expect(rec.warned(/no complete header within 400 ms/)).toBe(true)
    expect(rec.warned(/no data for 400 ms/)).toBe(true)
    await waitUntil('upload', () => rec.upload('files/idle') !== undefined)
    expect(await readFile(path.join(dir, 'files/idle'), 'utf8')).toBe('partial')
  })

  it('removeTask cuts a live stream, resolves after the file is closed, and the IP is then unknown', async () => {
    await start({ uploadMaxSize: 1 << 30, taskMaxSize: 1 << 30 }, { headerTimeoutMs: 5000, idleTimeoutMs: 60_000 })
    const s = await connectFrom(port, G)
    const sClosed = closed(s)
    s.write('FILE\nfiles/endless\n')
    let writing = true
    const chunk = Buffer.alloc(64 * 1024, 7)
    const pump = (async () => {
      while (writing && !s.destroyed) {
        if (!s.write(chunk)) await new Promise((r) => { s.once('drain', r); s.once('close', r) })
      }
    })()
    const file = path.join(dir, 'files/endless')
    await waitUntil('data on disk', () => existsSync(file) && statSync(file).size > 1 << 20)
    expect(rec.uploads).toEqual([])
    await rs.removeTask(G)
    expect(rec.upload('files/endless')).toBeDefined() // reported, i.e. closed, before removeTask resolved
    await sClosed
    writing = false
    await pump
    const size = (await stat(path.join(dir, 'files/endless'))).size
    expect(size).toBe(rec.upload('files/endless')?.bytes)
    await send(port, G, 'FILE\nfiles/after\n', 'x')
    await waitUntil('refusal', () => rec.warned(/unregistered 127\.0\.0\.21/))
    await expect(stat(path.join(dir, 'files/after'))).rejects.toThrow(/ENOENT/)
  })

  it('removeTask resolves although guests reset streams queued behind one pid (regression: it hung)', async () => {
    // Half-open streams wait on the pid's earlier stream until the idle timeout cuts them; others
    // end or reset at once. Before the fix (pump() in result-server.ts) a standalone script doing
    // this left removeTask pending forever about one round in ten; here it guards the path.
    for (let round = 0; round < 10; round++) {
      if (round > 0) await rs.stop()
      await start({ uploadMaxSize: 1 << 20, taskMaxSize: 1 << 30 }, { headerTimeoutMs: 300, idleTimeoutMs: 500 })
      const socks = Array.from({ length: 60 }, (_, i) => {
        const s = net.connect({ port, host: '127.0.0.1', localAddress: G })
        s.on('error', () => undefined)
        s.on('connect', () => {
          s.write(`BSON 1\n${'x'.repeat((i * 797 + round * 131) % 3000)}`)
          if ((i * 7 + round) % 10 < 4) s.end()
          else if ((i * 7 + round) % 10 < 7) s.resetAndDestroy()
        })
        return s
      })
      await new Promise((r) => setTimeout(r, (round * 173) % 800))
      const hung = new Promise((_, reject) => setTimeout(() => reject(new Error(`removeTask hung: ${JSON.stringify(rs.connections())}`)), 5000))
      await Promise.race([rs.removeTask(G), hung])
      expect(rs.connections()).toEqual([])
      for (const s of socks) s.destroy()
    }
  }, 120_000)

  it('stop closes listeners and live connections', async () => {
    await start()
    const s = await connectFrom(port, G)
    const sClosed = closed(s)
    s.write('LOG\nline\n')
    await waitUntil('line', () => rec.lines.length === 1)
    await rs.stop()
    await sClosed
    await expect(connectFrom(port, G)).rejects.toThrow(/ECONNREFUSED/)
  })
})
