// The `aviary` command as a user runs it: the built bin, a real process, real signals.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs'
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
  rmSync(dataDir, { recursive: true, force: true })
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
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
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

describe('aviary machines import and aviary agent', () => {
  it('writes machines.json from a Cuckoo conf folder, and will not replace it without --force', async () => {
    const data = mkdtempSync(path.join(tmpdir(), 'aviary-import-'))
    onTestFinished(() => rmSync(data, { recursive: true, force: true }))
    const conf = path.resolve('test/fixtures/cuckoo-conf/kvm')
    const first = await run(process.execPath, [BIN, 'machines', 'import', conf, '--data', data])
    expect(first.stdout).toMatch(/wrote .*machines\.json/)
    const written = JSON.parse(readFileSync(path.join(data, 'machines.json'), 'utf8')) as { driver: string; machines: { name: string }[] }
    expect(written.driver).toBe('kvm')
    expect(written.machines.length).toBeGreaterThan(0)
    const again = await run(process.execPath, [BIN, 'machines', 'import', conf, '--data', data]).then(() => null, (e: { code: number; stderr: string }) => e)
    expect(again?.code).toBe(1)
    expect(again?.stderr).toMatch(/exists; run again with --force/)
    await run(process.execPath, [BIN, 'machines', 'import', conf, '--data', data, '--force'])
    const missing = await run(process.execPath, [BIN, 'machines', 'import', path.join(data, 'nope'), '--data', data, '--force']).then(() => null, (e: { code: number; stderr: string }) => e)
    expect(missing?.code).toBe(1)
    expect(missing?.stderr).toMatch(/cannot import/)
  })

  it('runs the guest agent, which answers as a Cuckoo 2 agent and stops on SIGTERM', async () => {
    const port = await freePort()
    const agent = spawn(process.execPath, [BIN, 'agent', '-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] })
    await new Promise<void>((resolve, reject) => {
      let err = ''
      agent.stderr!.on('data', (d: Buffer) => {
        err += d.toString()
        if (err.includes('listening on')) resolve()
      })
      agent.on('exit', (code) => reject(new Error(`agent exited with ${code}: ${err}`)))
    })
    const body = await (await fetch(`http://127.0.0.1:${port}/`)).json() as { version: string; features: string[] }
    expect(body.version).toBe('0.10')
    expect(body.features).toContain('execpy')
    const exited = new Promise<number | null>((r) => agent.once('exit', (code) => r(code)))
    agent.kill('SIGTERM')
    expect(await exited).toBe(0)
  })
})
