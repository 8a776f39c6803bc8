// The guest agent over real sockets: every endpoint of Cuckoo 2.0.7's agent.py protocol, bad
// inputs, zip slip, an HTTP/1.0 client on a raw socket, pinning from a second loopback address,
// /execnode running a script with the agent's own runtime, and /reset ending what earlier analyses
// left (with cgroups, and without).
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ZipFile } from 'yazl'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAgent, type RunningAgent } from './agent.js'

let agent: RunningAgent
let base: string
let dir: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'aviary-agent-test-'))
  agent = await runAgent({ host: '127.0.0.1', port: 0 })
  base = `http://127.0.0.1:${agent.port}`
})
afterAll(async () => {
  await agent?.close()
  rmSync(dir, { recursive: true, force: true })
})

type Body = Record<string, unknown>
async function get(path: string): Promise<{ status: number; body: Body }> {
  const r = await fetch(base + path)
  return { status: r.status, body: (await r.json()) as Body }
}
async function post(path: string, fields: Record<string, string>, files: Record<string, Buffer> = {}, at = base): Promise<{ status: number; body: Body }> {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  for (const [k, v] of Object.entries(files)) form.append(k, new Blob([v]), k)
  const r = await fetch(at + path, { method: 'POST', body: form })
  return { status: r.status, body: (await r.json()) as Body }
}
function zipOf(entries: Record<string, string>): Promise<Buffer> {
  const zip = new ZipFile()
  for (const [name, text] of Object.entries(entries)) zip.addBuffer(Buffer.from(text), name, { compress: false })
  zip.end()
  const chunks: Buffer[] = []
  return new Promise((ok, fail) => {
    zip.outputStream.on('data', (c: Buffer) => chunks.push(c)).on('end', () => ok(Buffer.concat(chunks))).on('error', fail)
  })
}

describe('agent protocol', () => {
  it('answers GET / like agent 0.10 with every feature', async () => {
    const { status, body } = await get('/')
    expect(status).toBe(200)
    expect(body.message).toBe('Aviary Agent')
    expect(body.version).toBe('0.10')
    expect(body.features).toEqual(expect.arrayContaining(['execpy', 'execnode', 'pinning', 'logs', 'largefile', 'unicodepath']))
  })

  it('reports system, environ and logs', async () => {
    expect((await get('/system')).body.system).toBe('Linux')
    const env = (await get('/environ')).body.environ as Record<string, string>
    expect(env.PATH).toBe(process.env.PATH)
    const logs = (await get('/logs')).body
    expect(String(logs.stdout)).toContain('GET /system')
  })

  it('keeps the analysis status and wants a status field', async () => {
    expect((await get('/status')).body).toMatchObject({ status: null, description: null })
    const bad = await post('/status', {})
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({ message: 'No status has been provided', error_code: 400 })
    expect((await post('/status', { status: 'complete', description: 'True' })).status).toBe(200)
    expect((await get('/status')).body).toMatchObject({ status: 'complete', description: 'True' })
  })

  it('accepts urlencoded bodies and drops blank values', async () => {
    const r = await fetch(`${base}/status`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'status=running&description='
    })
    expect(r.status).toBe(200)
    expect((await get('/status')).body).toMatchObject({ status: 'running', description: null })
  })

  it('returns 404 JSON for unknown routes, wrong methods and query strings', async () => {
    expect(await get('/nope')).toEqual({ status: 404, body: { message: 'Route not found', error_code: 404 } })
    expect((await get('/store')).status).toBe(404)
    expect((await get('/status?x=1')).status).toBe(404)
  })

  it('creates folders and temporary files', async () => {
    expect((await post('/mkdir', {})).status).toBe(400)
    const target = join(dir, 'a', 'b')
    expect((await post('/mkdir', { dirpath: target })).status).toBe(200)
    expect(existsSync(target)).toBe(true)
    expect((await post('/mkdir', { dirpath: target })).status).toBe(500)
    const t = await post('/mktemp', { dirpath: dir, prefix: 'pre', suffix: '.txt' })
    expect(String(t.body.filepath)).toMatch(/\/pre[^/]+\.txt$/)
    expect(existsSync(String(t.body.filepath))).toBe(true)
    const d = await post('/mkdtemp', { dirpath: dir })
    expect(String(d.body.dirpath)).toMatch(/\/tmp[^/]+$/)
    expect(existsSync(String(d.body.dirpath))).toBe(true)
  })

  it('stores and retrieves files, with unicode paths', async () => {
    const path = join(dir, 'ünïcødé sample.bin')
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251))
    expect((await post('/store', { filepath: path })).status).toBe(400)
    expect((await post('/store', {}, { file: bytes })).status).toBe(400)
    expect((await post('/store', { filepath: path }, { file: bytes })).status).toBe(200)
    expect(readFileSync(path).equals(bytes)).toBe(true)
    const form = new FormData()
    form.append('filepath', path)
    const r = await fetch(`${base}/retrieve`, { method: 'POST', body: form })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-length')).toBe(String(bytes.length))
    expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true)
    const missing = new FormData()
    missing.append('filepath', join(dir, 'absent'))
    expect((await fetch(`${base}/retrieve`, { method: 'POST', body: missing })).status).toBe(404)
  })

  it('extracts zips and refuses zip slip without writing anything', async () => {
    const target = join(dir, 'analyzer')
    const good = await zipOf({ 'analyzer.cjs': 'x', 'lib/core/a.txt': 'A' })
    expect((await post('/extract', { dirpath: target })).status).toBe(400)
    expect((await post('/extract', { dirpath: target }, { zipfile: good })).status).toBe(200)
    expect(readFileSync(join(target, 'lib/core/a.txt'), 'utf8')).toBe('A')
    // yazl refuses "..", so write "xx/" and patch both headers to "../" (the CRC covers data only).
    const evil = await zipOf({ 'ok.txt': 'fine', 'xx/escaped.txt': 'owned' })
    const patched = Buffer.from(evil.toString('latin1').replaceAll('xx/escaped.txt', '../escaped.txt'), 'latin1')
    const slip = join(dir, 'slip')
    const r = await post('/extract', { dirpath: slip }, { zipfile: patched })
    expect(r.status).toBe(400)
    expect(String(r.body.message)).toContain('outside')
    expect(existsSync(join(dir, 'escaped.txt'))).toBe(false)
    expect(existsSync(join(slip, 'ok.txt'))).toBe(false)
    expect((await post('/extract', { dirpath: slip }, { zipfile: Buffer.from('not a zip') })).status).toBe(400)
  })

  it('removes files and folders', async () => {
    const f = join(dir, 'gone.txt')
    writeFileSync(f, 'x')
    expect((await post('/remove', {})).status).toBe(400)
    expect((await post('/remove', { path: f })).status).toBe(200)
    expect(existsSync(f)).toBe(false)
    expect((await post('/remove', { path: f })).status).toBe(404)
    expect((await post('/remove', { path: join(dir, 'a') })).status).toBe(200)
    expect(existsSync(join(dir, 'a'))).toBe(false)
  })

  it('executes commands synchronously, through a shell, and asynchronously', async () => {
    expect((await post('/execute', {})).status).toBe(400)
    const sync = await post('/execute', { command: 'echo "hello  world"' })
    expect(sync.body).toMatchObject({ stdout: 'hello  world\n', stderr: '' })
    const shell = await post('/execute', { command: 'echo $((6*7)) >&2', shell: '1' })
    expect(shell.body.stderr).toBe('42\n')
    // The command waits for a file the test writes after the answer, so "answered before the
    // command ended" holds however slow the machine (a 0.2 s sleep lost that race under load).
    const marker = join(dir, 'async-done')
    const go = join(dir, 'async-go')
    const async = await post('/execute', { command: `sh -c "while [ ! -e ${go} ]; do sleep 0.05; done; touch ${marker}"`, async: 'yes' })
    expect(async.body).toMatchObject({ stdout: null, stderr: null })
    expect(existsSync(marker)).toBe(false)
    writeFileSync(go, '')
    await expect.poll(() => existsSync(marker), { timeout: 5000 }).toBe(true)
    expect((await post('/execute', { command: join(dir, 'no-such-program') })).status).toBe(500)
  })

  it('runs Python files with /execpy', async () => {
    const py = join(dir, 'hello.py')
    writeFileSync(py, 'import os\nprint("py", os.getcwd())\n')
    expect((await post('/execpy', {})).status).toBe(400)
    const r = await post('/execpy', { filepath: py, cwd: dir })
    expect(r.body.stdout).toBe(`py ${dir}\n`)
  })

  it('runs JavaScript files with the agent runtime via /execnode', async () => {
    const js = join(dir, 'hello.cjs')
    writeFileSync(js, 'console.log(JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd(), exec: process.execPath, dir: __dirname }))\n')
    expect((await post('/execnode', {})).status).toBe(400)
    // Only absolute paths (Cuckoo's agent resolved a relative one against its own folder).
    expect((await post('/execnode', { filepath: 'hello.cjs', cwd: dir })).body.message).toMatch(/^filepath: "hello\.cjs" is not an absolute path on this guest \(Linux\)$/)
    const r = await post('/execnode', { filepath: js, cwd: dir, args: 'one "two three"' })
    expect(r.status).toBe(200)
    expect(JSON.parse(String(r.body.stdout))).toEqual({ argv: ['one', 'two three'], cwd: dir, exec: process.execPath, dir })
  })

  it('serves an HTTP/1.0 client on a raw socket and closes the connection', async () => {
    const text = await new Promise<string>((ok, fail) => {
      const s = connect(agent.port, '127.0.0.1', () => s.write('GET / HTTP/1.0\r\n\r\n'))
      let buf = ''
      s.on('data', (d) => (buf += d.toString())).on('end', () => ok(buf)).on('error', fail)
    })
    expect(text).toMatch(/^HTTP\/1\.[01] 200/)
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({ version: '0.10' })
  })

  it('takes an HTTP/1.0 urlencoded POST on a raw socket', async () => {
    const body = 'status=exception&description=raw+1.0'
    const text = await new Promise<string>((ok, fail) => {
      const s = connect(agent.port, '127.0.0.1', () =>
        s.write(`POST /status HTTP/1.0\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
      )
      let buf = ''
      s.on('data', (d) => (buf += d.toString())).on('end', () => ok(buf)).on('error', fail)
    })
    expect(text).toMatch(/^HTTP\/1\.[01] 200/)
    expect((await get('/status')).body).toMatchObject({ status: 'exception', description: 'raw 1.0' })
  })
})

describe('pinning and kill', () => {
  /** One request from a chosen loopback source address (the kernel would pick 127.0.0.1). */
  function from(source: string, port: number, method: string, path: string): Promise<{ status: number; body: Body }> {
    return new Promise((ok, fail) => {
      const req = request({ host: '127.0.0.1', port, method, path, localAddress: source }, (res) => {
        let text = ''
        res.on('data', (d: Buffer) => (text += d.toString())).on('end', () => ok({ status: res.statusCode ?? 0, body: JSON.parse(text) as Body }))
      })
      req.on('error', fail)
      req.end()
    })
  }

  it('pins to the first caller, drops others, still lets the analyzer post its status', async () => {
    const a = await runAgent({ host: '0.0.0.0', port: 0 })
    try {
      const pin = await from('127.0.0.2', a.port, 'GET', '/pinning')
      expect(pin.body).toMatchObject({ client_ip: '127.0.0.2' })
      expect((await from('127.0.0.2', a.port, 'GET', '/pinning')).status).toBe(500)
      await expect(fetch(`http://127.0.0.1:${a.port}/`)).rejects.toThrow()
      await expect(from('127.0.0.3', a.port, 'GET', '/status')).rejects.toThrow()
      expect((await post('/status', { status: 'complete' }, {}, `http://127.0.0.1:${a.port}`)).status).toBe(200)
      expect((await from('127.0.0.2', a.port, 'GET', '/status')).body).toMatchObject({ status: 'complete' })
      expect((await from('127.0.0.2', a.port, 'POST', '/kill')).status).toBe(200)
      await expect.poll(() => from('127.0.0.2', a.port, 'GET', '/').then(() => 'up', () => 'down'), { timeout: 5000 }).toBe('down')
    } finally {
      await a.close()
    }
  })
})

describe('the guest is hostile: paths, earlier analyses, analyzers that die', () => {
  it('refuses relative and malformed paths on every route that takes one, naming the field', async () => {
    const zip = await zipOf({ 'a.txt': 'a' })
    const cases: [string, Record<string, string>, Record<string, Buffer>, string][] = [
      ['/mkdir', { dirpath: 'x\\y' }, {}, 'dirpath'],
      ['/store', { filepath: 'C:\\x\\analysis.conf' }, { file: Buffer.from('conf') }, 'filepath'],
      ['/extract', { dirpath: 'relative/dir' }, { zipfile: zip }, 'dirpath'],
      ['/remove', { path: '../etc' }, {}, 'path'],
      ['/retrieve', { filepath: 'agent.log' }, {}, 'filepath'],
      ['/mktemp', { dirpath: 'tmp' }, {}, 'dirpath'],
      ['/execpy', { filepath: 'a.py' }, {}, 'filepath'],
      ['/execnode', { filepath: join(dir, 'x.cjs'), cwd: 'here' }, {}, 'cwd'],
      ['/mkdir', { dirpath: `${dir}/a\u0001b` }, {}, 'dirpath']
    ]
    for (const [route, fields, files, field] of cases) {
      const r = await post(route, fields, files)
      expect(r.status, route).toBe(400)
      expect(String(r.body.message), route).toMatch(new RegExp(`^${field}: .*(not an absolute path on this guest \\(Linux\\)|control characters)`))
    }
    // Nothing was written where the agent runs.
    expect(existsSync('C:\\x\\analysis.conf')).toBe(false)
    expect(existsSync('relative')).toBe(false)
  })

  /** The process exists and is not a zombie. */
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0)
      return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
    } catch {
      return false
    }
  }
  const environ = (pid: number): Record<string, string> =>
    Object.fromEntries(readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter((e) => e !== '').map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]))
  const ppid = (pid: number): number => Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
  /** A process of nobody's analysis, in a session of its own (detached) like a daemon. */
  const bystander = (): ChildProcess => {
    const c = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' })
    c.unref()
    return c
  }

  /**
   * An "analyzer" (started with /execnode like Aviary's) that writes its environment, then starts
   * a daemon the way malware does: a child that forks again and exits, the grandchild calling
   * setsid, so the daemon has left the analyzer's process group, session and tree.
   */
  async function startDaemonAnalysis(at: string, name: string, o: { doubleFork: boolean }): Promise<{ daemon: number; analyzerEnv: Record<string, string> }> {
    const pidFile = join(dir, `${name}.pid`)
    const envFile = join(dir, `${name}.env.json`)
    const js = join(dir, `${name}.cjs`)
    const daemon = `setsid sh -c 'echo $$ > ${pidFile}; exec sleep 300'`
    writeFileSync(js, `const { spawn } = require('node:child_process')
require('node:fs').writeFileSync(${JSON.stringify(envFile)}, JSON.stringify(process.env))
const c = spawn('sh', ['-c', ${JSON.stringify(o.doubleFork ? `(${daemon} &); exit 0` : `exec ${daemon}`)}], { stdio: 'ignore' })
c.unref()
setInterval(() => {}, 1000)
`)
    expect((await post('/execnode', { filepath: js, async: 'yes', cwd: dir }, {}, at)).status).toBe(200)
    await expect.poll(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', { timeout: 5000 }).toBe(true)
    const pid = Number(readFileSync(pidFile, 'utf8'))
    await expect.poll(() => alive(pid) && /sleep/.test(readFileSync(`/proc/${pid}/cmdline`, 'latin1')), { timeout: 5000 }).toBe(true)
    return { daemon: pid, analyzerEnv: JSON.parse(readFileSync(envFile, 'utf8')) as Record<string, string> }
  }

  it('POST /reset ends a setsid daemon an analysis left, held by a cgroup, and nothing else; nothing marks the environment', async () => {
    const a = await runAgent({ host: '127.0.0.1', port: 0 })
    const other = await runAgent({ host: '127.0.0.1', port: 0 })
    const outsider = bystander()
    let theirs: number | undefined
    try {
      const at = `http://127.0.0.1:${a.port}`
      const { daemon, analyzerEnv } = await startDaemonAnalysis(at, 'leftover', { doubleFork: true })
      expect(ppid(daemon), 'the daemon left the analyzer\'s tree').not.toBe(process.pid)
      // The environment the agent was started with (this process's), nothing added: not to the
      // analyzer, not to the daemon it left.
      expect(analyzerEnv).toEqual(process.env)
      // (The daemon's shell set PWD to the folder it runs in, as a shell does.)
      expect(environ(daemon)).toEqual({ ...process.env, PWD: dir })
      // It is held by a cgroup of its own, below the agent's, named after nothing of Aviary's.
      const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'))!.slice(3)
      const held = readFileSync(`/proc/${daemon}/cgroup`, 'utf8').split('\n').find((l) => l.startsWith('0::'))!.slice(3)
      expect(held, 'a writable cgroup2 is needed here (this machine has one)').toMatch(new RegExp(`^${own === '/' ? '' : own}/job-[0-9a-f]{8}$`))
      expect(held).not.toMatch(/aviary/i)
      // Another agent's analysis in the same cgroup as ours, and a process of nobody's.
      theirs = (await startDaemonAnalysis(`http://127.0.0.1:${other.port}`, 'theirs', { doubleFork: true })).daemon

      const r = await post('/reset', {}, {}, at)
      expect(r.body).toMatchObject({ message: 'Earlier analyses ended' })
      expect(Number(r.body.ended)).toBeGreaterThanOrEqual(2)
      await expect.poll(() => alive(daemon), { timeout: 5000 }).toBe(false)
      const cgroupRoot = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.includes(' - cgroup2 '))!.split(' ')[4]!
      expect(existsSync(join(cgroupRoot, held)), 'the analysis cgroup is removed').toBe(false)
      expect(alive(theirs), 'another agent\'s analysis').toBe(true)
      expect(alive(outsider.pid!), 'a process of no analysis').toBe(true)
      // Ended by /reset, the analyzer's death is not reported as a failure of the next analysis.
      expect((await fetch(`${at}/status`).then((x) => x.json())) as Body).toMatchObject({ status: null })
    } finally {
      await a.close()
      await post('/reset', {}, {}, `http://127.0.0.1:${other.port}`).catch(() => undefined)
      await other.close()
      outsider.kill('SIGKILL')
    }
    await expect.poll(() => alive(theirs ?? 0), { timeout: 5000 }).toBe(false)
  })

  it('without cgroups, POST /reset ends the analyses\' process groups and descendants', async () => {
    const a = await runAgent({ host: '127.0.0.1', port: 0, cgroupParent: null })
    const outsider = bystander()
    let escaped: number | undefined
    try {
      const at = `http://127.0.0.1:${a.port}`
      // setsid, but its parent (the analyzer) still runs: a descendant, ended.
      const { daemon, analyzerEnv } = await startDaemonAnalysis(at, 'child-daemon', { doubleFork: false })
      expect(analyzerEnv).toEqual(process.env)
      // Its parent exited at once, before the agent looked: docs/engine.md says such a daemon may
      // escape without cgroups (whether it does depends on when the agent looked).
      escaped = (await startDaemonAnalysis(at, 'orphan-daemon', { doubleFork: true })).daemon
      const r = await post('/reset', {}, {}, at)
      expect(Number(r.body.ended)).toBeGreaterThanOrEqual(3)
      await expect.poll(() => alive(daemon), { timeout: 5000 }).toBe(false)
      expect(alive(outsider.pid!)).toBe(true)
    } finally {
      await a.close()
      outsider.kill('SIGKILL')
      if (escaped !== undefined) try { process.kill(escaped, 'SIGKILL') } catch { /* gone */ }
    }
  })

  it('without cgroups, POST /reset ends what an analyzer that died left running in a session of its own', async () => {
    // Aviary's analyzer starts the sample (under strace) detached; when the host dies, the
    // analyzer loses its result server and exits, and the sample runs on under init, outside the
    // analyzer's tree and group. The agent noted it while the analyzer ran.
    const a = await runAgent({ host: '127.0.0.1', port: 0, cgroupParent: null })
    const outsider = bystander()
    let left = 0
    try {
      const at = `http://127.0.0.1:${a.port}`
      const pidFile = join(dir, 'left.pid')
      const js = join(dir, 'cut-off.cjs')
      writeFileSync(js, `const c = require('node:child_process').spawn('sleep', ['300'], { detached: true, stdio: 'ignore' })
c.unref()
require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(c.pid))
setTimeout(() => process.exit(1), 1500)
`)
      expect((await post('/execnode', { filepath: js, async: 'yes', cwd: dir }, {}, at)).status).toBe(200)
      await expect.poll(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '', { timeout: 5000 }).toBe(true)
      left = Number(readFileSync(pidFile, 'utf8'))
      // The analyzer has died (status exception), and what it started lives on under another parent.
      await expect.poll(async () => ((await fetch(`${at}/status`).then((x) => x.json())) as Body).status, { timeout: 5000 }).toBe('exception')
      expect(alive(left)).toBe(true)
      expect(ppid(left)).not.toBe(process.pid)
      const r = await post('/reset', {}, {}, at)
      expect(Number(r.body.ended)).toBeGreaterThanOrEqual(1)
      await expect.poll(() => alive(left), { timeout: 5000 }).toBe(false)
      expect(alive(outsider.pid!)).toBe(true)
    } finally {
      await a.close()
      outsider.kill('SIGKILL')
      if (left > 0) try { process.kill(left, 'SIGKILL') } catch { /* gone */ }
    }
  })

  it('an analyzer that dies before it reports sets status exception, tagged with its run', async () => {
    const a = await runAgent({ host: '127.0.0.1', port: 0 })
    try {
      const at = `http://127.0.0.1:${a.port}`
      const run = 'c'.repeat(32)
      const js = join(dir, 'dies.cjs')
      writeFileSync(js, 'process.exit(3)\n')
      expect((await post('/execnode', { filepath: js, async: 'yes', cwd: dir, run: 'not-a-run' }, {}, at)).body.message).toMatch(/^run: not a run id/)
      expect((await post('/execnode', { filepath: js, async: 'yes', cwd: dir, run }, {}, at)).status).toBe(200)
      await expect.poll(async () => ((await fetch(`${at}/status`).then((x) => x.json())) as Body).status, { timeout: 5000 }).toBe('exception')
      expect(((await fetch(`${at}/status`).then((x) => x.json())) as Body).description)
        .toMatch(new RegExp(`^\\[run ${run}\\] the analyzer \\(pid \\d+\\) exited with code 3 before it reported$`))
      // One that reports first and then exits is not overwritten.
      const ok = join(dir, 'reports.cjs')
      writeFileSync(ok, `fetch('${at}/status', { method: 'POST', body: new URLSearchParams({ status: 'complete', description: 'done' }) }).then(() => process.exit(0))\n`)
      expect((await post('/execnode', { filepath: ok, async: 'yes', cwd: dir }, {}, at)).status).toBe(200)
      await expect.poll(async () => ((await fetch(`${at}/status`).then((x) => x.json())) as Body).status, { timeout: 5000 }).toBe('complete')
      await new Promise((r) => setTimeout(r, 300))
      expect((await fetch(`${at}/status`).then((x) => x.json())) as Body).toMatchObject({ status: 'complete', description: 'done' })
    } finally {
      await a.close()
    }
  })
})
