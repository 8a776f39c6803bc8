// What `aviary serve` loads: the built bin, started as users start it, with a module hook that
// notes every ES module the process loads. At rest the service carries the API, the database and
// the scheduler; processing, the analysis run, the archive readers, sharp and the doctor come when
// first needed (scripts/build-cli.mjs splits the bundle there). The memory this saves is measured
// in docs/benchmarks.md (ingest), not here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import yazl from 'yazl'

const BIN = path.resolve('bin/aviary.js')
const work = mkdtempSync(path.join(tmpdir(), 'aviary-loading-'))
const log = path.join(work, 'loaded.txt')
let server: ChildProcess
let base: string

/** The URLs loaded so far, as the hook wrote them (one a line). */
const loaded = (): string[] => readFileSync(log, 'utf8').split('\n').filter(Boolean)
const chunk = (name: string) => (url: string) => new RegExp(`/out/cli/lazy-${name}-[A-Z0-9]+\\.mjs$`).test(url)
const pkg = (name: string) => (url: string) => url.includes(`/node_modules/${name}/`)

/** Loaded only by an analysis, its processing, an archive, a screenshot or another command. */
const NOT_AT_REST: [string, (url: string) => boolean][] = [
  ['processing (the pipeline chunk)', chunk('pipeline')],
  ['the analysis run', chunk('analysis-run')],
  ['the doctor', chunk('doctor')],
  ['the zip reader', chunk('unpack-zip')],
  ['the tar reader', chunk('unpack-tar')],
  ['the guest agent', chunk('agent')],
  ['the dispatcher', chunk('dispatcher')],
  ['sharp', pkg('sharp')],
  ['zip.js', pkg('@zip.js/zip.js')],
  ['pe-library', pkg('pe-library')],
  ['cfb', pkg('cfb')],
  ['bson', pkg('bson')],
  ['dns-packet', pkg('dns-packet')]
]

function zipOf(members: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile()
  for (const [name, text] of Object.entries(members)) zip.addBuffer(Buffer.from(text), name)
  zip.end()
  const parts: Buffer[] = []
  return new Promise((resolve, reject) => {
    zip.outputStream.on('data', (d: Buffer) => parts.push(d)).on('end', () => resolve(Buffer.concat(parts))).on('error', reject)
  })
}

beforeAll(async () => {
  writeFileSync(log, '')
  const hooks = path.join(work, 'hooks.mjs')
  writeFileSync(hooks, `import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, url + '\\n')
  return next(url, context)
}
`)
  const register = path.join(work, 'register.mjs')
  writeFileSync(register, `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)})\n`)
  server = spawn(process.execPath, ['--import', pathToFileURL(register).href, BIN, 'serve', '--data', path.join(work, 'data'), '-p', '0'],
    { stdio: ['ignore', 'ignore', 'pipe'] })
  base = await new Promise<string>((resolve, reject) => {
    let err = ''
    server.stderr!.on('data', (d: Buffer) => {
      err += d.toString()
      const m = /analysis API on (http:\/\/\S+)/.exec(err)
      if (m) resolve(m[1]!)
    })
    server.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)))
  })
  // What the engine starts after listening (the processor's first look, the routes' flush) has run.
  await new Promise((r) => setTimeout(r, 500))
})

afterAll(async () => {
  if (server.exitCode === null) {
    server.kill('SIGTERM')
    await new Promise((r) => server.once('exit', r))
  }
  rmSync(work, { recursive: true, force: true })
})

describe('aviary serve', () => {
  it('at rest, has loaded the API and the database but nothing only an analysis, an archive or a screenshot needs', async () => {
    expect((await fetch(`${base}/cuckoo/status`)).status).toBe(200)
    const urls = loaded()
    // The hook saw the service start: the bin, the service's chunk, the API's framework.
    expect(urls.some((u) => u.endsWith('/bin/aviary.js'))).toBe(true)
    expect(urls.some(chunk('service'))).toBe(true)
    expect(urls.some(pkg('fastify'))).toBe(true)
    const early = NOT_AT_REST.filter(([, match]) => urls.some(match)).map(([what]) => what)
    expect(early).toEqual([])
  })

  it('loads the zip reader with the first zip submitted, and unpacks it', async () => {
    const form = new FormData()
    form.append('files', new Blob([await zipOf({ 'a.exe': 'first member', 'b.exe': 'second member' })]), 'two.zip')
    const res = await fetch(`${base}/tasks/create/submit`, { method: 'POST', body: form })
    expect(res.status).toBe(200)
    const body = await res.json() as { task_ids: number[]; errors: string[] }
    expect(body.errors).toEqual([])
    expect(body.task_ids).toHaveLength(2)
    const urls = loaded()
    expect(urls.some(chunk('unpack-zip'))).toBe(true)
    expect(urls.some(pkg('@zip.js/zip.js'))).toBe(true)
    // Still no analysis code: the tasks wait for a machine (there is none).
    expect(urls.some(chunk('analysis-run'))).toBe(false)
  })
})
