// The agent as a Node single executable, as scripts/build-agent.mjs --linux-only builds it (and
// the analyzer bundle): the test run's global setup (test/global-setup.ts) has built both into
// out/, as a user's build does. The binary must start, answer the protocol, run a script with its
// embedded runtime (/execnode) given as its first argument, unpack a zip with the bundled zip
// reader, and exit on /kill.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ZipFile } from 'yazl'
import { afterAll, beforeAll, expect, it } from 'vitest'

const OUT = join(__dirname, '../../out')
const BIN = join(OUT, 'agent', 'aviary-agent-linux-x64')
let dir: string
let agent: ChildProcess | undefined
let base: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'aviary-sea-test-'))
  const bin = BIN
  const child = spawn(bin, ['-H', '127.0.0.1', '-p', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  agent = child
  const port = await new Promise<number>((ok, fail) => {
    let out = ''
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out)
      if (m?.[1] !== undefined) ok(Number(m[1]))
    })
    child.once('exit', (code) => fail(new Error(`agent exited with ${code}: ${out}`)))
  })
  base = `http://127.0.0.1:${port}`
}, 120_000)

afterAll(() => {
  if (agent?.exitCode === null) agent.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

async function post(path: string, fields: Record<string, string>, file?: [string, Buffer]): Promise<Record<string, unknown>> {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  if (file !== undefined) form.append(file[0], new Blob([file[1]]), file[0])
  const r = await fetch(base + path, { method: 'POST', body: form })
  expect(r.status).toBe(200)
  return (await r.json()) as Record<string, unknown>
}

it('builds the analyzer bundle and the executable, which answers like agent 0.10', async () => {
  expect(statSync(join(OUT, 'cli', 'analyzer', 'analyzer.cjs')).size).toBeGreaterThan(1000)
  const body = (await (await fetch(`${base}/`)).json()) as Record<string, unknown>
  expect(body).toMatchObject({ message: 'Aviary Agent', version: '0.10' })
  expect(body.features).toContain('execnode')
})

it('runs a script with its embedded Node runtime and unpacks zips', async () => {
  const script = join(dir, 'probe.cjs')
  writeFileSync(script, "console.log(JSON.stringify({ argv: process.argv, fs: typeof require('node:fs').statSync, file: __filename, env: process.env }))\n")
  const r = await post('/execnode', { filepath: script, args: 'x y' })
  // Told to run the script by its arguments (like node), not by anything in the environment,
  // which the analyzer passes on to the sample: it is the agent's own, as it was started.
  expect(JSON.parse(String(r.stdout))).toEqual({ argv: [BIN, script, 'x', 'y'], fs: 'function', file: script, env: process.env })
  const zip = new ZipFile()
  zip.addBuffer(Buffer.from('inside'), 'sub/inner.txt')
  zip.end()
  const parts: Buffer[] = []
  const bytes = await new Promise<Buffer>((ok) => zip.outputStream.on('data', (c: Buffer) => parts.push(c)).on('end', () => ok(Buffer.concat(parts))))
  await post('/extract', { dirpath: join(dir, 'out') }, ['zipfile', bytes])
  expect(readFileSync(join(dir, 'out', 'sub', 'inner.txt'), 'utf8')).toBe('inside')
})

it('exits on /kill', async () => {
  const exited = new Promise<number | null>((ok) => agent?.once('exit', (code) => ok(code)))
  expect((await post('/kill', {})).message).toBe('Quit the Aviary Agent')
  expect(await exited).toBe(0)
  expect(existsSync(BIN)).toBe(true)
})
