// The `aviary` command as a user runs it: the built bin, a real process, real signals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mkdtempSync, mkdirSync, writeFileSync, existsSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const BIN = path.resolve('bin/aviary.js')
const dataDir = mkdtempSync(path.join(tmpdir(), 'aviary-cli-'))
let server: ChildProcess
let base: string

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

beforeAll(async () => {
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  server = spawn(process.execPath, [BIN, 'serve', '--data', dataDir, '-p', String(port), '--max-upload-size', '10M'], { stdio: ['ignore', 'pipe', 'pipe'] })
  await new Promise<void>((resolve, reject) => {
    let err = ''
    server.stderr!.on('data', (d: Buffer) => {
      err += d.toString()
      if (err.includes('analysis API on')) resolve()
    })
    server.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)))
  })
})
afterAll(() => {
  if (server.exitCode === null) server.kill('SIGKILL')
})

describe('aviary', () => {
  it('prints its version and refuses bad options with a message', async () => {
    const { stdout } = await run(process.execPath, [BIN, '--version'])
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
    const bad = await run(process.execPath, [BIN, 'serve', '-p', 'eighty']).catch((e: { code: number; stderr: string }) => e)
    expect((bad as { code: number }).code).not.toBe(0)
    expect((bad as { stderr: string }).stderr).toMatch(/port must be a whole number/)
  })

  it('refuses a second service on the same data directory', async () => {
    const second = await run(process.execPath, [BIN, 'serve', '--data', dataDir, '-p', '0']).catch((e: { code: number; stderr: string }) => e)
    expect((second as { code: number }).code).toBe(1)
    expect((second as { stderr: string }).stderr).toMatch(/another Aviary \(pid \d+\)/)
  })

  it('submits files, a folder and URLs, and prints the task ids', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'aviary-cli-samples-'))
    writeFileSync(path.join(dir, 'one.exe'), 'one')
    mkdirSync(path.join(dir, 'folder', 'deep'), { recursive: true })
    writeFileSync(path.join(dir, 'folder', 'two.doc'), 'two')
    writeFileSync(path.join(dir, 'folder', 'deep', 'three.js'), 'three')
    const { stdout } = await run(process.execPath, [BIN, 'submit', '--remote', base, '--priority', '2', '--tags', 'x64',
      path.join(dir, 'one.exe'), path.join(dir, 'folder'), 'https://example.com/x'])
    const ids = [...stdout.matchAll(/added as task with ID #(\d+)/g)].map((m) => Number(m[1]))
    expect(ids).toHaveLength(4)
    expect(stdout).toContain('URL "https://example.com/x"')
    const tasks = await Promise.all(ids.map(async (id) => ((await (await fetch(`${base}/tasks/view/${id}`)).json()) as { task: { target: string; priority: number; tags: string[] } }).task))
    expect(tasks.map((t) => path.basename(t.target))).toEqual(['one.exe', 'three.js', 'two.doc', 'x'])
    for (const t of tasks) expect(t).toMatchObject({ priority: 2, tags: ['x64'] })
  })

  it('submits scheme-less URLs with --url, prints JSON, and fails clearly', async () => {
    const { stdout } = await run(process.execPath, [BIN, 'submit', '--remote', base, '--url', '--json', 'example.org'])
    const out = JSON.parse(stdout) as { target: string; task_id: number }[]
    expect(out[0]!.task_id).toBeGreaterThan(0)
    const missing = await run(process.execPath, [BIN, 'submit', '--remote', base, '/no/such/file']).catch((e: { code: number; stderr: string }) => e)
    expect((missing as { code: number }).code).toBe(1)
    expect((missing as { stderr: string }).stderr).toMatch(/no such file or folder/)
    const refused = await run(process.execPath, [BIN, 'submit', '--remote', base, '--priority', '2', '--machine', 'nope', BIN]).catch((e: { stderr: string }) => e)
    expect((refused as { stderr: string }).stderr).toMatch(/machine: no configured machine/)
    const down = await run(process.execPath, [BIN, 'submit', '--remote', 'http://127.0.0.1:1', BIN]).catch((e: { stderr: string }) => e)
    expect((down as { stderr: string }).stderr).toMatch(/cannot reach/)
  })

  it('stops on SIGTERM and releases the data directory', async () => {
    const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)))
    server.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(existsSync(path.join(dataDir, 'aviary.lock'))).toBe(false)
  })
})
