// Linux calls from REAL strace output: a shell sample and a Python program run here under strace
// with the analyzer's own options (straceArgs), and their log read into calls, processes, summary
// and apistats. Then hostile logs: lines a guest could forge, cut or stretch.
import { execFileSync } from 'node:child_process'
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { straceArgs } from '../../../agent/analyzer/strace-run.js'
import type { StoredCall } from './calls-schema.js'
import { analyzeBehaviorDetailed, type BehaviorResult } from './index.js'
import { MAX_LINE } from './strace-calls.js'
import { compileC } from '../../../../test/fixtures/compiled'

const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
const dirs: string[] = []
let work: string
let server: Server
let port: number

interface Proc { pid: number; ppid: number; process_name: string; command_line: string; calls: StoredCall[]; calls_seen: number; calls_kept: number }

function analysisDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'aviary-strace-calls-'))
  dirs.push(dir)
  mkdirSync(join(dir, 'logs'))
  return dir
}

/** Runs `cmd` under strace as the analyzer does, with the trace written to `out`. */
function trace(out: string, cmd: string[], cwd: string): void {
  execFileSync('strace', [...straceArgs({ seccomp: true, io: false }), '-o', out, '--', ...cmd], { cwd, stdio: 'ignore' })
}

const byApi = (p: Proc | undefined, api: string): StoredCall[] => (p?.calls ?? []).filter((c) => c.api === api)

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'aviary-strace-work-'))
  dirs.push(work)
  server = createServer((s) => s.end())
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  port = (server.address() as { port: number }).port
})
afterAll(async () => {
  await new Promise<void>((ok) => server.close(() => ok()))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe('a shell sample and a Python program under strace', () => {
  let r: BehaviorResult
  let procs: Proc[]
  let sh: Proc | undefined
  let py: Proc | undefined

  beforeAll(async () => {
    const py1 = join(work, 'net.py')
    writeFileSync(py1, [
      'import ctypes, mmap, os, socket, threading',
      'def work(): open("/etc/hostname").read()',
      'ts = [threading.Thread(target=work) for _ in range(3)]',
      '[t.start() for t in ts]; [t.join() for t in ts]',
      `s = socket.create_connection(("127.0.0.1", ${port})); s.close()`,
      // A DNS question for evil.example (A), sent to port 53 (nothing needs to answer).
      'q = bytes.fromhex("abcd01000001000000000000") + b"\\x04evil\\x07example\\x00\\x00\\x01\\x00\\x01"',
      'u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(q, ("127.0.0.1", 53))',
      'm = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)',
      'libc = ctypes.CDLL(None); libc.ptrace(0, 0, 0, 0); libc.prctl(15, b"kworker", 0, 0, 0)',
      'os.memfd_create("payload")'
    ].join('\n'))
    const sample = join(work, 'sample.sh')
    writeFileSync(sample, [
      '#!/bin/sh',
      `cd ${work}`,
      'echo hi > written.txt',
      'cat /etc/passwd > /dev/null',
      'mkdir made && rmdir made',
      'ls . > /dev/null',
      'mv written.txt moved.txt && rm moved.txt',
      '( echo from-subshell > sub.txt )',
      `${PYTHON} ${py1}`
    ].join('\n'), { mode: 0o755 })
    const dir = analysisDir()
    trace(join(dir, 'logs', 'strace.log'), [sample], work)
    r = await analyzeBehaviorDetailed(dir)
    procs = r.behavior.processes as Proc[]
    sh = procs.find((p) => p.command_line === sample)
    py = procs.find((p) => p.command_line.endsWith('net.py'))
  }, 60_000)

  it('finds the processes, a subshell that never exec\'ed included, with their parents', () => {
    expect(sh, JSON.stringify(procs.map((p) => p.command_line))).toBeDefined()
    expect(sh).toMatchObject({ process_name: 'sample.sh', ppid: 0 })
    expect(procs.find((p) => p.command_line === 'cat /etc/passwd')?.ppid).toBe(sh?.pid)
    // The subshell is a fork of the sample with its image and command line, and its own calls.
    const sub = procs.find((p) => p.ppid === sh?.pid && p.command_line === sh?.command_line)
    expect(sub).toBeDefined()
    expect(byApi(sub, 'openat').some((c) => c.arguments.filepath === join(work, 'sub.txt'))).toBe(true)
    expect(py?.process_name).toBe('python3')
  })

  it('gives Cuckoo-shaped calls with named arguments, absolute paths and errno', () => {
    const exec = byApi(sh, 'execve')[0]
    expect(exec).toMatchObject({ category: 'process', status: 1, return_value: 0, tid: sh?.pid, flags: {}, stacktrace: [] })
    expect(exec?.arguments).toMatchObject({ argv: [expect.stringContaining('sample.sh')], command_line: expect.stringContaining('sample.sh') })
    expect(Array.isArray(exec?.arguments.environment)).toBe(true)
    expect(typeof exec?.time).toBe('number')
    expect(Math.abs((exec?.time ?? 0) - Date.now() / 1000)).toBeLessThan(120)
    const write = byApi(sh, 'openat').find((c) => c.arguments.filepath === join(work, 'written.txt'))
    expect(write?.arguments).toMatchObject({ dirfd: 'AT_FDCWD', filepath_r: 'written.txt', oflag: 'O_WRONLY|O_CREAT|O_TRUNC', mode: '0666' })
    expect(write?.return_value).toEqual(expect.any(Number))
    const rename = procs.flatMap((p) => byApi(p, 'renameat2').concat(byApi(p, 'rename'), byApi(p, 'renameat')))[0]
    expect(rename?.arguments).toMatchObject({ oldfilepath: join(work, 'written.txt'), newfilepath: join(work, 'moved.txt') })
    const failed = procs.flatMap((p) => p.calls).find((c) => c.status === 0 && c.errno === 'ENOENT')
    expect(failed).toMatchObject({ return_value: -1 })
  })

  it('maps threads to their process and keeps their tid', () => {
    const hostname = byApi(py, 'openat').filter((c) => c.arguments.filepath === '/etc/hostname')
    expect(hostname).toHaveLength(3)
    for (const c of hostname) expect(c.tid).not.toBe(py?.pid)
    expect(procs.some((p) => hostname.some((c) => c.tid === p.pid))).toBe(false)
    expect(byApi(py, 'clone3').concat(byApi(py, 'clone')).some((c) => String(c.arguments.clone_flags).includes('CLONE_THREAD'))).toBe(true)
  })

  it('decodes network, memory and anti-analysis calls', () => {
    expect(byApi(py, 'connect').find((c) => c.arguments.port === port)).toMatchObject({ category: 'network', status: 1, arguments: { ip_address: '127.0.0.1', port } })
    expect(byApi(py, 'sendto').find((c) => c.arguments.port === 53)?.arguments.buffer).toContain('evil')
    expect(byApi(py, 'ptrace')[0]).toMatchObject({ category: 'process', arguments: { request: 'PTRACE_TRACEME' } })
    expect(byApi(py, 'prctl').find((c) => c.arguments.option === 'PR_SET_NAME')?.arguments.arg2).toBe('kworker')
    expect(byApi(py, 'memfd_create')[0]).toMatchObject({ category: 'memory', arguments: { name: 'payload' } })
    const exec = byApi(py, 'mmap').filter((c) => String(c.arguments.prot).includes('PROT_EXEC'))
    expect(exec.some((c) => String(c.arguments.flags).includes('MAP_ANONYMOUS'))).toBe(true)
    // Only executable mappings are kept.
    expect(byApi(py, 'mmap').every((c) => String(c.arguments.prot).includes('PROT_EXEC'))).toBe(true)
  })

  it('fills the summary keys only calls show, per process too', () => {
    const s = r.behavior.summary as Record<string, unknown[]>
    expect(s.file_opened).toEqual(expect.arrayContaining(['/etc/passwd', join(work, 'written.txt')]))
    expect(s.file_read).toContain('/etc/passwd')
    expect(s.file_read).not.toContain(join(work, 'written.txt'))
    expect(s.directory_created).toEqual([join(work, 'made')])
    expect(s.directory_removed).toEqual([join(work, 'made')])
    expect(s.directory_enumerated).toContain(work)
    expect(s.file_moved).toEqual([[join(work, 'written.txt'), join(work, 'moved.txt')]])
    expect(s.resolves_host).toEqual(['evil.example'])
    expect(s.dll_loaded).toEqual(expect.arrayContaining([expect.stringMatching(/\/libc\.so\.6$/)]))
    expect(s.file_failed?.length).toBeGreaterThan(0)
    expect(s.file_exists?.length).toBeGreaterThan(0)
    const generic = r.behavior.generic as { pid: number; summary: Record<string, unknown[]> }[]
    expect(generic.find((g) => g.pid === py?.pid)?.summary.resolves_host).toEqual(['evil.example'])
    expect(generic.find((g) => g.pid === sh?.pid)?.summary.resolves_host).toBeUndefined()
  })

  it('counts every call in apistats and the store, and says so in the process entry', () => {
    const stats = (r.behavior.apistats as Record<string, Record<string, number>>)[String(py?.pid)]
    expect(stats?.openat).toBe(byApi(py, 'openat').length)
    expect(py?.calls_kept).toBe(py?.calls.length)
    expect(py?.calls_seen).toBe(py?.calls_kept)
    const listed = r.calls?.processes.find((p) => p.pid === py?.pid)
    expect(listed).toMatchObject({ process_name: 'python3', calls: py?.calls.length, dropped: 0 })
    expect(listed?.categories.network).toBeGreaterThan(0)
    expect(listed?.apis.openat).toBe(byApi(py, 'openat').length)
  })
})

describe('paths as the kernel saw them (strace -yy annotations)', () => {
  const C = `#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int dir = open(argv[1], O_RDONLY | O_DIRECTORY);
  close(openat(dir, "link", O_RDONLY));
  if (chdir(argv[1]) != 0) return 2;
  close(open("./link", O_RDONLY));
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t l = sizeof a;
  bind(s, (struct sockaddr *)&a, sizeof a); listen(s, 1); getsockname(s, (struct sockaddr *)&a, &l);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  connect(c, (struct sockaddr *)&a, sizeof a);
  close(accept(s, NULL, NULL));
  int e = open("/usr/bin/true", O_RDONLY);
  char *av[] = { "true", 0 }, *ev[] = { 0 };
  fexecve(e, av, ev);
  return 1;
}
`
  let procs: Proc[]
  let summary: Record<string, unknown[]>
  let secret: string
  let dir: string

  beforeAll(async () => {
    const exe = compileC({ compiler: 'cc', source: C, out: join(work, 'kernel-paths') })
    secret = join(work, 'secret.txt')
    writeFileSync(secret, 'not for you\n')
    dir = join(work, 'links')
    mkdirSync(dir, { recursive: true })
    execFileSync('ln', ['-sf', '../secret.txt', join(dir, 'link')])
    const out = analysisDir()
    trace(join(out, 'logs', 'strace.log'), [exe, dir], work)
    const r = await analyzeBehaviorDetailed(out)
    procs = r.behavior.processes as Proc[]
    summary = r.behavior.summary as Record<string, unknown[]>
  }, 60_000)

  it('an open through a symlink, by a dirfd or a relative path, names the file reached; the path given stays in filepath_r', () => {
    const opens = procs.flatMap((p) => byApi(p, 'openat')).filter((c) => String(c.arguments.filepath_r ?? '').endsWith('link'))
    expect(opens.map((c) => [c.arguments.filepath, c.arguments.filepath_r])).toEqual([[secret, 'link'], [secret, './link']])
    expect(summary.file_read).toContain(secret)
    expect(summary.file_read).not.toContain(join(dir, 'link'))
  })

  it('an accepted connection names its peer from the returned socket', () => {
    const accept = procs.flatMap((p) => byApi(p, 'accept').concat(byApi(p, 'accept4')))[0]
    // accept(s, NULL, NULL): no address argument, only the annotation `= 5<TCP:[127.0.0.1:x->127.0.0.1:y]>`.
    expect(accept?.arguments).toMatchObject({ ip_address: '127.0.0.1', port: expect.any(Number) })
  })

  it('fexecve runs the descriptor\'s file: execveat names it, and the process is that program', () => {
    const p = procs.find((x) => byApi(x, 'execveat').length > 0)
    expect(byApi(p, 'execveat')[0]?.arguments).toMatchObject({ filepath: '/usr/bin/true', flags: 'AT_EMPTY_PATH' })
    expect(p).toMatchObject({ process_path: '/usr/bin/true', process_name: 'true' })
  })
})

describe('a hostile strace log', () => {
  const good = (pid: number, t: number, call: string): string => `${pid} 1700000000.${String(t).padStart(6, '0')} ${call}\n`

  it('skips what is not strace\'s, joins what is, and never throws', async () => {
    const dir = analysisDir()
    const log = join(dir, 'logs', 'strace.log')
    const lines = [
      good(100, 1, 'execve("/bin/sh", ["sh", "x"], 0x7ffd /* 3 vars */) = 0'),
      'garbage without a pid\n',
      '\0\0\0\xff\xfe binary\n',
      good(100, 2, 'openat(AT_FDCWD</tmp>, "unterminated, O_RDONLY) = 3'),
      good(100, 3, `openat(AT_FDCWD</tmp>, "${'a'.repeat(20_000)}", O_RDONLY) = -1 ENOENT (No such file or directory)`),
      good(100, 4, `${'('.repeat(5000)}`),
      good(100, 5, 'openat(AT_FDCWD</tmp>, "x", O_RDONLY <unfinished ...>'),
      good(101, 6, '<... read resumed>"data", 4) = 4'),
      good(100, 7, '<... openat resumed>) = 3</tmp/x>'),
      good(99999999999, 8, 'kill(1, SIGKILL) = 0'),
      good(100, 9, 'syscall_0x1c4(0x1, 0x2) = -1 ENOSYS (Function not implemented)'),
      good(100, 10, 'connect(3<TCP:[10.0.0.2:4444->203.0.113.7:80]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("203.0.113.7")}, 16) = 0'),
      good(100, 11, 'sendto(3<UDP:[1.2.3.4:5->5.6.7.8:53]>, "\\377\\377garbage-not-dns", 17, 0, NULL, 0) = 17'),
      good(100, 12, `execve("/bin/x", [${Array.from({ length: 5000 }, () => '"aaaa"').join(', ')}], NULL) = 0`),
      '1700000000.5 100 swapped fields\n',
      good(100, 13, '+++ exited with 0 +++')
    ]
    writeFileSync(log, lines.join(''))
    // A line longer than the bound, and unfinished calls of a thousand fake tasks.
    appendFileSync(log, good(100, 14, `write(1, "${'b'.repeat(MAX_LINE + 10)}", 5) = 5`))
    for (let i = 0; i < 1000; i++) appendFileSync(log, good(200 + i, 15, 'read(0, <unfinished ...>'))
    appendFileSync(log, good(100, 16, 'openat(AT_FDCWD, "/tmp/cut-her'))
    appendFileSync(log, '... (truncated)')
    const r = await analyzeBehaviorDetailed(dir)
    const procs = r.behavior.processes as Proc[]
    const sh = procs.find((p) => p.pid === 100)
    expect(sh?.command_line).toBe(Array.from({ length: 256 }, () => 'aaaa').join(' '))
    expect(byApi(sh, 'openat').map((c) => c.arguments.filepath)).toEqual([('/tmp/' + 'a'.repeat(20_000)).slice(0, 4096) + '...', '/tmp/x'])
    expect(byApi(sh, 'openat')[1]).toMatchObject({ time: 1700000000.000005, return_value: 3, status: 1 })
    expect(byApi(sh, 'syscall_0x1c4')[0]).toMatchObject({ category: 'system', arguments: { arg0: '0x1', arg1: '0x2' }, errno: 'ENOSYS' })
    expect(byApi(sh, 'connect')[0]?.arguments).toMatchObject({ ip_address: '203.0.113.7', port: 80 })
    expect((r.behavior.summary as Record<string, unknown>).resolves_host).toBeUndefined()
    // The fake tasks never exec'ed nor came from a reported process: no process, no calls.
    expect(procs.map((p) => p.pid)).toEqual([100])
    expect(r.notes).toEqual(expect.arrayContaining([
      expect.stringMatching(/^logs\/strace\.log: \d+ line\(s\) that are not strace's were skipped$/),
      'logs/strace.log: 1 resumed call(s) without their start were skipped',
      `logs/strace.log: 1 line(s) longer than ${MAX_LINE} bytes were skipped`
    ]))
    expect(r.incomplete).toEqual([expect.stringMatching(/^logs\/strace\.log was cut at byte \d+ by the result server's per-file cap \(upload_max_size\): calls after it are missing$/)])
  })

  it('a log ending inside a call still open is whole (a note); one stopping mid-line otherwise says calls may be missing', async () => {
    const open = analysisDir()
    writeFileSync(join(open, 'logs', 'strace.log'), good(100, 1, 'execve("/bin/sleep", ["sleep", "600"], 0x7ffd /* 3 vars */) = 0') +
      '100 1700000000.000002 clock_nanosleep(CLOCK_REALTIME, 0, {tv_sec=600, tv_nsec=0}, ')
    const r = await analyzeBehaviorDetailed(open)
    expect(r.incomplete).toEqual([])
    expect(r.notes).toContain('logs/strace.log ends inside clock_nanosleep of task 100, a call still open when strace stopped')
    expect((r.behavior.processes as Proc[])[0]?.calls.map((c) => c.api)).toEqual(['execve'])
    const cut = analysisDir()
    writeFileSync(join(cut, 'logs', 'strace.log'), good(100, 1, 'execve("/bin/sleep", ["sleep", "600"], 0x7ffd /* 3 vars */) = 0') + '100 17000')
    const c = await analyzeBehaviorDetailed(cut)
    expect(c.incomplete).toEqual(['logs/strace.log stops inside a line at byte 95 (the upload ended there): calls after it may be missing'])
  })

  it('keeps at most maxCalls per process, counts the rest, and puts a new store in place of the old', async () => {
    const dir = analysisDir()
    const lines: string[] = [good(100, 0, 'execve("/bin/sh", ["sh"], NULL) = 0')]
    for (let i = 1; i <= 5000; i++) lines.push(good(100, i, `openat(AT_FDCWD</tmp>, "f${i}", O_RDONLY) = -1 ENOENT (No such file or directory)`))
    writeFileSync(join(dir, 'logs', 'strace.log'), lines.join(''))
    const first = await analyzeBehaviorDetailed(dir, { maxCalls: 100 })
    const [p] = first.behavior.processes as Proc[]
    expect(p).toMatchObject({ calls_seen: 5001, calls_kept: 100 })
    expect(p?.calls).toHaveLength(100)
    expect(p?.calls[99]?.arguments.filepath).toBe('/tmp/f99')
    expect((first.behavior.apistats as Record<string, Record<string, number>>)['100']?.openat).toBe(5000)
    expect((first.behavior.summary as Record<string, string[]>).file_failed).toHaveLength(5000)
    expect(first.notes).toContain('pid 100: 4901 call(s) beyond the 100 kept')
    const again = await analyzeBehaviorDetailed(dir, { maxCalls: 10 })
    expect((again.behavior.processes as Proc[])[0]?.calls).toHaveLength(10)
    expect(JSON.parse(readFileSync(join(dir, 'calls', 'index.json'), 'utf8'))).toMatchObject({ max_calls: 10, processes: [{ pid: 100, calls: 10, dropped: 4991 }] })
    expect(execFileSync('ls', ['-a', dir], { encoding: 'utf8' }).split('\n').filter((n) => n.includes('calls'))).toEqual(['calls'])
  })
})
