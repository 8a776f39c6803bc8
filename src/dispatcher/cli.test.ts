// `aviary dist` and `aviary dist-worker` as a user runs them: the bundled command (out/cli, built
// by the test setup) in a child process, answering on a real port and stopping on SIGTERM; and
// the printed deployment configurations, checked by the tools that read them where installed.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, openAsBlob, readFileSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { runDistCli } from './cli'

const run = promisify(execFile)
const BIN = path.resolve('bin/aviary.js')
const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-dist-cli-'))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** Starts the command and resolves with the first stderr line matching `ready`. */
function start(args: string[], ready: RegExp): Promise<{ child: ChildProcess; match: RegExpMatchArray; exit: Promise<number | null> }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return new Promise((resolve, reject) => {
    let err = ''
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString()
      const m = ready.exec(err)
      if (m) resolve({ child, match: m, exit })
    })
    void exit.then((code) => reject(new Error(`exited ${code} before ready: ${err}`)))
  })
}

async function printed(args: string[]): Promise<{ code: number; out: string }> {
  let out = ''
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out += String(chunk)
    return true
  })
  try {
    return { code: await runDistCli(args), out }
  } finally {
    spy.mockRestore()
  }
}

describe('aviary dist', () => {
  let child: ChildProcess | undefined
  afterEach(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL')
    child = undefined
  })

  it('serves both generations on the positional host and port, and stops on SIGTERM', async () => {
    const data = tempDir()
    const s = await start(['dist', '127.0.0.1', '0', '--data', data, '--report-formats', 'json,html'], /dispatcher API on (http:\/\/127\.0\.0\.1:\d+)/)
    child = s.child
    const url = s.match[1]!
    const status = await (await fetch(`${url}/api/status`)).json() as Record<string, unknown>
    expect(status.success).toBe(true)
    const older = await (await fetch(`${url}/status`)).json() as Record<string, unknown>
    expect(older).not.toHaveProperty('success')
    // Directories and the database default to the data folder.
    expect(existsSync(path.join(data, 'dist.db'))).toBe(true)
    expect(existsSync(path.join(data, 'samples'))).toBe(true)
    expect(existsSync(path.join(data, 'reports'))).toBe(true)
    child.kill('SIGTERM')
    expect(await s.exit).toBe(0)
  })

  it('takes -H/-p, --no-worker and explicit directories', async () => {
    const data = tempDir()
    const samples = path.join(data, 'in')
    const s = await start(['dist', '-H', '127.0.0.1', '-p', '0', '--no-worker', '--db', `sqlite:///${data}/other.db`, '--samples-directory', samples, '--data', data],
      /dispatcher API on (http:\/\/127\.0\.0\.1:\d+) \(no worker/)
    child = s.child
    const form = new FormData()
    form.append('file', new Blob(['MZ']), 'a.exe')
    const res = await fetch(`${s.match[1]}/api/task`, { method: 'POST', body: form })
    expect(await res.json()).toEqual({ success: true, task_id: 1 })
    expect(existsSync(path.join(data, 'other.db'))).toBe(true)
    expect(existsSync(samples)).toBe(true)
    child.kill('SIGTERM')
    expect(await s.exit).toBe(0)
  })

  it('streams a large sample to the samples directory with flat memory', async () => {
    const data = tempDir()
    const s = await start(['dist', '-H', '127.0.0.1', '-p', '0', '--no-worker', '--data', data], /dispatcher API on (http:\/\/127\.0\.0\.1:\d+)/)
    child = s.child
    const SIZE = 256 * 1024 * 1024
    const big = path.join(tempDir(), 'big.bin')
    writeFileSync(big, '')
    truncateSync(big, SIZE) // sparse: costs no disk until the dispatcher writes its copy
    const peak = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child!.pid}/status`, 'utf8'))![1]) * 1024
    const before = peak()
    const form = new FormData()
    form.append('file', await openAsBlob(big), 'big.bin')
    const res = await fetch(`${s.match[1]}/api/task`, { method: 'POST', body: form })
    expect(res.status).toBe(200)
    const stored = readdirSync(path.join(data, 'samples'))
    expect(stored).toHaveLength(1)
    expect(statSync(path.join(data, 'samples', stored[0]!)).size).toBe(SIZE)
    expect(peak() - before).toBeLessThan(64 * 1024 * 1024)
    child.kill('SIGTERM')
    expect(await s.exit).toBe(0)
  })

  it('dist-worker runs the worker alone and stops on SIGTERM', async () => {
    const data = tempDir()
    const s = await start(['dist-worker', '--data', data, '--reports-directory', path.join(data, 'r')], /aviary dist-worker: running/)
    child = s.child
    expect(existsSync(path.join(data, 'r'))).toBe(true)
    child.kill('SIGTERM')
    expect(await s.exit).toBe(0)
  })

  it('refuses bad options with a message and a non-zero status', async () => {
    for (const args of [['dist', '--threshold', 'many'], ['dist', '-p', '70000'], ['dist', '--report-formats', '../x'], ['dist-worker', '--transfer-timeout', '0'], ['dist', '--interval', '0.5']]) {
      const r = await run(process.execPath, [BIN, ...args]).catch((e: { code: number; stderr: string }) => e)
      expect((r as { code: number }).code, args.join(' ')).not.toBe(0)
      expect((r as { stderr: string }).stderr).toMatch(/threshold|port|report format|transfer-timeout must be a whole number from 1 to 86400|interval must be a whole number from 1 to 3600/)
    }
  })

  it('--nginx prints a reverse proxy that streams uploads of any size', async () => {
    const { code, out } = await printed(['dist', '-H', '127.0.0.1', '-p', '9100', '--nginx'])
    expect(code).toBe(0)
    expect(out).toMatch(/server 127\.0\.0\.1:9100;/)
    expect(out).toMatch(/client_max_body_size 0;/)
    expect(out).toMatch(/proxy_request_buffering off;/)
    expect(out).toMatch(/proxy_pass http:\/\/aviary_dist;/)
    // nginx itself (Debian's, installed by scripts/install-debian-deps.sh) accepts it inside an
    // http block.
    const dir = tempDir()
    writeFileSync(path.join(dir, 'site.conf'), out)
    writeFileSync(path.join(dir, 'nginx.conf'), `pid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n  access_log off;\n  include ${dir}/site.conf;\n}\n`)
    const t = await run('nginx', ['-t', '-c', path.join(dir, 'nginx.conf'), '-p', dir])
    expect(t.stderr).toMatch(/test is successful/)
  })

  it('--uwsgi prints a systemd unit (and says why) that systemd accepts', async () => {
    const data = tempDir()
    const { code, out } = await printed(['dist', '-p', '9101', '--data', data, '--transfer-timeout', '120', '--interval', '3', '--uwsgi'])
    expect(code).toBe(0)
    expect(out).toMatch(/^# Cuckoo's --uwsgi printed a uWSGI configuration/)
    expect(out).toMatch(/Node\.js program that\n# serves HTTP itself/)
    const exec = /^ExecStart=(.*)$/m.exec(out)![1]!
    expect(exec).toContain(` dist -H localhost -p 9101 --data ${data} `)
    expect(exec).toContain(`--samples-directory ${path.join(data, 'samples')}`)
    expect(exec).toContain(' --transfer-timeout 120')
    expect(exec).toContain(' --interval 3')
    if (existsSync('/usr/bin/systemd-analyze')) {
      const unit = path.join(tempDir(), 'aviary-dist.service')
      writeFileSync(unit, out)
      const r = await run('systemd-analyze', ['verify', unit]).catch((e: { code: number; stderr: string }) => e)
      expect((r as { stderr: string }).stderr).toBe('')
    }
  })
})
