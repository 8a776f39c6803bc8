// The analyzer's strace streaming (src/agent/analyzer/strace-run.ts) against the REAL result
// server: real samples under real strace, the trace read from its FIFO and sent as logs/strace.log
// while they run, then read by processing. Also: the result server's per-file cap cutting the log
// (processing works on what arrived and says so), a sample left running, and a guest without mkfifo.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../agent/analyzer/config.js'
import { NetlogLog } from '../../../agent/analyzer/netlog.js'
import { startStrace } from '../../../agent/analyzer/strace-run.js'
import { ResultServer } from '../../resultserver/result-server.js'
import { makeTaskDir, waitUntil } from '../../resultserver/test-tools.js'
import type { StoredCall } from './calls-schema.js'
import { analyzeBehaviorDetailed } from './index.js'

const GUEST = '127.0.0.1'
let work: string
let servers: ResultServer[] = []
const dirs: string[] = []

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'aviary-strace-stream-'))
})
afterEach(async () => {
  for (const s of servers) await s.stop()
  servers = []
})
afterAll(() => {
  rmSync(work, { recursive: true, force: true })
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A result server for one task from 127.0.0.1, its folder, and what it said it received. */
async function resultServer(uploadMaxSize: number): Promise<{ port: number; dir: string; uploads: { path: string; bytes: number; truncated: boolean }[] }> {
  const rs = new ResultServer({ limits: { uploadMaxSize, taskMaxSize: 1 << 30 }, log: { info: () => undefined, warn: () => undefined } })
  servers.push(rs)
  const port = await rs.listen(GUEST, 0)
  const parent = mkdtempSync(join(tmpdir(), 'aviary-strace-task-'))
  dirs.push(parent)
  const dir = await makeTaskDir(parent, '1')
  const uploads: { path: string; bytes: number; truncated: boolean }[] = []
  rs.addTask(GUEST, { taskId: 1, dir, onUpload: (u) => uploads.push(u) })
  return { port, dir, uploads }
}

/**
 * Runs `script` under the analyzer's strace, streaming to the result server on `port`. As the
 * analyzer does, the trace is finished once strace has exited (the tree ended), or at once with
 * `untilExit: false` (the analysis timed out with the sample still running).
 */
async function run(port: number, script: string, options = '', o: { untilExit: boolean } = { untilExit: true }) {
  const analyzerDir = mkdtempSync(join(work, 'analyzer-'))
  const sample = join(analyzerDir, 'sample.sh')
  writeFileSync(sample, `#!/bin/sh\n${script}\n`, { mode: 0o755 })
  const conf = parseConfig(`[analysis]\nid = 1\nip = ${GUEST}\nport = ${port}\noptions = ${options}\n`)
  const log = new NetlogLog(conf)
  const trace = startStrace('/usr/bin/strace', conf, analyzerDir, log)
  const child = spawn(trace.file, [...trace.args, '--', sample], { cwd: analyzerDir, stdio: 'ignore', detached: true })
  await new Promise<void>((ok) => child.once('spawn', () => ok()))
  trace.started(child)
  const t0 = Date.now()
  if (o.untilExit) await new Promise<void>((ok) => (child.exitCode !== null || child.signalCode !== null ? ok() : child.once('exit', () => ok())))
  const result = await trace.finish()
  return { result, analyzerDir, ms: Date.now() - t0, sample, child }
}

describe('strace streamed to the result server', () => {
  it('sends the whole trace as logs/strace.log while the sample runs, and reads it in the guest too', async () => {
    const rs = await resultServer(128 * 1024 * 1024)
    const { result, analyzerDir, sample } = await run(rs.port, `for i in $(seq 1 300); do cat /etc/hostname > ${work}/out-$i.txt; done; sh -c 'echo child' > /dev/null`)
    expect(existsSync(join(analyzerDir, 'strace.fifo'))).toBe(false)
    await waitUntil('the upload', () => rs.uploads.some((u) => u.path === 'logs/strace.log'), 10_000)
    const got = rs.uploads.find((u) => u.path === 'logs/strace.log')
    expect(got).toMatchObject({ truncated: false })
    const text = readFileSync(join(rs.dir, 'logs', 'strace.log'), 'latin1')
    expect(text.length).toBe(got?.bytes)
    expect(text.split('\n').filter((l) => l.includes('execve("/usr/bin/cat"')).length).toBe(300)
    // In the guest: the processes and the files they wrote.
    expect(result.startError).toBeNull()
    expect(result.processes.filter((p) => p.command_line === 'cat /etc/hostname')).toHaveLength(300)
    expect(result.files.filter((f) => f.path.startsWith(`${work}/out-`))).toHaveLength(300)
    // On the host: the calls.
    const r = await analyzeBehaviorDetailed(rs.dir)
    const procs = r.behavior.processes as { command_line: string; calls: StoredCall[] }[]
    const root = procs.find((p) => p.command_line === sample)
    expect(root?.calls.filter((c) => c.api === 'openat' && String(c.arguments.filepath).startsWith(`${work}/out-`))).toHaveLength(300)
    expect(r.incomplete).toEqual([])
  }, 60_000)

  it('works on what arrived when the result server\'s cap cut the log, and says so', async () => {
    const rs = await resultServer(64 * 1024)
    const { result } = await run(rs.port, `for i in $(seq 1 200); do cat /etc/hostname > /dev/null; done`)
    await waitUntil('the upload', () => rs.uploads.some((u) => u.path === 'logs/strace.log'), 10_000)
    expect(rs.uploads.find((u) => u.path === 'logs/strace.log')).toMatchObject({ truncated: true })
    expect(statSync(join(rs.dir, 'logs', 'strace.log')).size).toBe(64 * 1024 + '... (truncated)'.length)
    // The guest read all of it.
    expect(result.processes.filter((p) => p.command_line === 'cat /etc/hostname')).toHaveLength(200)
    const r = await analyzeBehaviorDetailed(rs.dir)
    const procs = r.behavior.processes as { command_line: string; calls: StoredCall[] }[]
    const cats = procs.filter((p) => p.command_line === 'cat /etc/hostname')
    expect(cats.length).toBeGreaterThan(0)
    expect(cats.length).toBeLessThan(200)
    expect(cats[0]?.calls.some((c) => c.api === 'openat' && c.arguments.filepath === '/etc/hostname')).toBe(true)
    expect(r.incomplete).toEqual(["logs/strace.log was cut at byte 65536 by the result server's per-file cap (upload_max_size): calls after it are missing"])
  }, 60_000)

  it('lets a sample that is still running go, and ends the trace', async () => {
    const rs = await resultServer(128 * 1024 * 1024)
    const { result, ms, child, analyzerDir } = await run(rs.port, 'sleep 30 & echo $! > sleeper.pid', '', { untilExit: false })
    const sleeper = Number(readFileSync(join(analyzerDir, 'sleeper.pid'), 'utf8'))
    try {
      expect(ms).toBeLessThan(15_000)
      expect(child.exitCode !== null || child.signalCode !== null).toBe(true)
      expect(result.processes.some((p) => p.pid === sleeper && p.command_line === 'sleep 30')).toBe(true)
      // strace stopped while the sleeper slept: the log ends inside that open call, which is how a
      // trace of a sample still running ends. A note, not an error, and no word of a cap.
      await waitUntil('the upload', () => rs.uploads.some((u) => u.path === 'logs/strace.log'), 10_000)
      const text = readFileSync(join(rs.dir, 'logs', 'strace.log'), 'latin1')
      expect(text.endsWith('\n')).toBe(false)
      expect(text.slice(text.lastIndexOf('\n') + 1)).toMatch(new RegExp(`^${sleeper} +[0-9.]+ clock_nanosleep\\(`))
      const r = await analyzeBehaviorDetailed(rs.dir)
      expect(r.incomplete).toEqual([])
      expect(r.notes).toContain(`logs/strace.log ends inside clock_nanosleep of task ${sleeper}, a call still open when strace stopped`)
    } finally {
      process.kill(sleeper, 'SIGKILL')
    }
  }, 60_000)

  it('writes a file and sends it afterwards where no FIFO can be made', async () => {
    const rs = await resultServer(128 * 1024 * 1024)
    const path = process.env.PATH
    process.env.PATH = '/nonexistent'
    let out: Awaited<ReturnType<typeof run>>
    try {
      out = await run(rs.port, '/bin/cat /etc/hostname > /dev/null')
    } finally {
      process.env.PATH = path
    }
    expect(readdirSync(out.analyzerDir)).toContain('strace.log')
    await waitUntil('the upload', () => rs.uploads.some((u) => u.path === 'logs/strace.log'), 10_000)
    expect(readFileSync(join(rs.dir, 'logs', 'strace.log'), 'latin1')).toContain('execve("/bin/cat"')
    expect(out.result.processes.some((p) => p.command_line === '/bin/cat /etc/hostname')).toBe(true)
  }, 60_000)
})
