// The analyzer's parsers against real inputs: strace output of a real traced shell, /proc/net
// addresses of a real socket, analysis.conf as Cuckoo's host writes it, and package choice.
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { entryDestination } from '../zip-extract.js'
import { splitCommand } from '../exec.js'
import { parseConfig } from './config.js'
import { choosePackage } from './packages.js'
import { parseProcAddress } from './proc-monitor.js'
import { parseStrace } from './strace-log.js'
import { diffSnapshots, snapshot } from './file-monitor.js'

const dir = mkdtempSync(join(tmpdir(), 'aviary-parsers-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('strace output', () => {
  it('reads unicode and bidi characters of a real trace as the sample wrote them', () => {
    const out = join(dir, 'trace-unicode.txt')
    const name = join(dir, 'invoice\u202Egpj \u043e\u0442\u0447\u0451\u0442.sh')
    execFileSync('strace', ['-f', '-ttt', '-yy', '-s', '1024', '-e', 'trace=process,file', '-o', out, '--', '/bin/sh', '-c', `echo x > '${name}'; cat '${name}' > /dev/null`])
    const text = readFileSync(out, 'utf8')
    expect(text).toContain('\\342\\200\\256') // strace escapes the bytes of U+202E
    const r = parseStrace(text)
    expect(r.processes[0]?.command_line).toContain(name)
    expect(r.processes.some((p) => p.command_line === `cat ${name}`)).toBe(true)
    expect(r.files.some((f) => f.path === name)).toBe(true)
  })

  it('names why a sample never ran (a failed execve of the root), and reports no process for it', () => {
    const out = join(dir, 'trace-noexec.txt')
    const bogus = join(dir, 'not-a-program.bin')
    writeFileSync(bogus, Buffer.from([0x00, 0x01, 0x02, 0xff, 0xfe]))
    chmodSync(bogus, 0o755)
    // strace exits 1 when its execve fails; what it wrote is what the analyzer reads.
    try {
      execFileSync('strace', ['-f', '-ttt', '-yy', '-s', '1024', '-e', 'trace=process,file,network', '-o', out, '--', bogus], { stdio: 'ignore' })
    } catch {
      // expected
    }
    const r = parseStrace(readFileSync(out, 'utf8'))
    expect(r.startError).toBe('Exec format error (ENOEXEC)')
    expect(r.processes).toEqual([])
    const ran = join(dir, 'trace-ran.txt')
    execFileSync('strace', ['-f', '-ttt', '-o', ran, '--', '/bin/true'])
    expect(parseStrace(readFileSync(ran, 'utf8')).startError).toBeNull()
  })

  it('yields the process tree, written and removed files, and connections of a real run', () => {
    const out = join(dir, 'trace.txt')
    const f = join(dir, 'written.txt')
    const script = `echo hi > ${f}; sleep 0.05 & wait; cp ${f} ${f}.copy; rm ${f}; exec 3<>/dev/null; python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))"`
    execFileSync('strace', ['-f', '-ttt', '-yy', '-s', '1024', '-e', 'trace=process,file,network', '-o', out, '--', '/bin/sh', '-c', script])
    const r = parseStrace(readFileSync(out, 'utf8'))
    const sh = r.processes[0]
    expect(sh?.command_line).toBe(`/bin/sh -c ${script}`)
    const sleep = r.processes.find((p) => p.command_line === 'sleep 0.05')
    expect(sleep?.ppid).toBe(sh?.pid)
    expect(sleep?.exit_code).toBe(0)
    expect(sleep?.exited).toBeGreaterThanOrEqual(sleep?.first_seen ?? Infinity)
    const rm = r.processes.find((p) => p.command_line === `rm ${f}`)
    expect(rm?.ppid).toBe(sh?.pid)
    // The first event of each path, and who touched it last.
    expect(r.files).toEqual(expect.arrayContaining([
      expect.objectContaining({ op: 'write', path: f, pid: sh?.pid }),
      expect.objectContaining({ op: 'write', path: `${f}.copy` })
    ]))
    expect(r.files.filter((e) => e.path === f)).toHaveLength(1)
    expect(r.lastPid.get(f)).toBe(rm?.pid)
    expect(r.connections).toEqual(expect.arrayContaining([expect.objectContaining({ proto: 'udp', dst: '127.0.0.1', dport: 9 })]))
    expect(existsSync(`${f}.copy`)).toBe(true)
  })
})

describe('/proc/net addresses', () => {
  it('decodes IPv4 and IPv6 entries of a real listening socket', async () => {
    const server = createServer()
    await new Promise<void>((ok) => server.listen(0, '::1', ok))
    const port = (server.address() as { port: number }).port
    try {
      const lines = readFileSync('/proc/self/net/tcp6', 'utf8').split('\n').slice(1)
      const decoded = lines.map((l) => parseProcAddress(l.trim().split(/\s+/)[1] ?? '')).filter((a) => a.port === port)
      expect(decoded).toEqual([{ addr: '::1', port }])
    } finally {
      server.close()
    }
    expect(parseProcAddress('0100007F:0050')).toEqual({ addr: '127.0.0.1', port: 80 })
    expect(parseProcAddress('0000000000000000FFFF00000100007F:01BB')).toEqual({ addr: '127.0.0.1', port: 443 })
  })
})

describe('analysis.conf', () => {
  it('reads what the Cuckoo host writes', () => {
    const c = parseConfig('[analysis]\nid = 7\ncategory = file\nfile_name = a b.exe\noptions = arguments=-x 1,free=yes,bad\ntimeout = 45\nenforce_timeout = True\nterminate_processes = False\nip = 192.168.56.1\nport = 2042\nclock = 20240102T03:04:05')
    expect(c).toMatchObject({ id: '7', fileName: 'a b.exe', timeout: 45, enforceTimeout: true, terminateProcesses: false, ip: '192.168.56.1', port: 2042 })
    expect([...c.options]).toEqual([['arguments', '-x 1'], ['free', 'yes']])
  })

  it('chooses packages from file type and extension', () => {
    expect(choosePackage('linux', 'x', 'ELF 64-bit LSB executable')).toBe('elf')
    expect(choosePackage('linux', 'x.sh', 'ASCII text')).toBe('sh')
    expect(choosePackage('linux', 'x', 'Python script, ASCII text executable')).toBe('python')
    expect(choosePackage('linux', 'x.bin', 'data')).toBe('generic')
    expect(choosePackage('windows', 'x', 'PE32 executable (DLL) (GUI) Intel 80386')).toBe('dll')
    expect(choosePackage('windows', 'x', 'PE32+ executable (GUI) x86-64')).toBe('exe')
    expect(choosePackage('windows', 'x.ps1', 'ASCII text')).toBe('ps1')
    expect(choosePackage('windows', 'x.docx', 'Microsoft Word 2007+')).toBe('doc')
  })
})

describe('agent helpers', () => {
  it('splits command lines with quotes', () => {
    expect(splitCommand(`C:\\Python27\\pythonw.exe "C:\\tmp dir\\analyzer.py" '' x`)).toEqual(['C:\\Python27\\pythonw.exe', 'C:\\tmp dir\\analyzer.py', '', 'x'])
  })

  it('keeps zip entries inside the target folder', () => {
    expect(entryDestination('/a/b', 'lib/x.py')).toBe('/a/b/lib/x.py')
    for (const bad of ['../x', 'lib/../../x', '/etc/passwd', 'C:/x', 'c:\\x', '..\\x', 'a\0b']) expect(entryDestination('/a/b', bad)).toBeNull()
  })

  it('diffs folder snapshots into created, modified and deleted', () => {
    const before = new Map([['/k', { size: 1, mtimeMs: 1, ino: 1 }], ['/m', { size: 1, mtimeMs: 1, ino: 2 }], ['/d', { size: 1, mtimeMs: 1, ino: 3 }]])
    const after = new Map([['/k', { size: 1, mtimeMs: 1, ino: 1 }], ['/m', { size: 2, mtimeMs: 1, ino: 2 }], ['/c', { size: 1, mtimeMs: 1, ino: 4 }]])
    expect(diffSnapshots(before, after)).toEqual([{ op: 'modified', path: '/m' }, { op: 'created', path: '/c' }, { op: 'deleted', path: '/d' }])
    expect(snapshot([dir], { maxDepth: 2, maxEntries: 10, exclude: [join(dir, 'trace.txt')] }).has(join(dir, 'trace.txt'))).toBe(false)
  })
})
