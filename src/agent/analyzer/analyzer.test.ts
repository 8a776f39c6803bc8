// The analyzer end to end on this host, driven exactly like the host drives a guest: a real agent
// (runAgent), the analyzer bundle built with esbuild and sent as a zip, analysis.conf and the
// sample stored through /store, the analyzer started with /execnode, /status polled until
// complete. A small netlog receiver stands in for the result server and records the LOG lines
// and FILE 2 uploads.
import { build } from 'esbuild'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ZipFile } from 'yazl'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { runAgent, type RunningAgent } from '../agent.js'
import type { BehaviorRecord, ConnectionRecord, FileRecord, ProcessRecord } from '../../guest-protocol/behavior.js'

interface Upload {
  path: string
  guestPath: string
  pids: string
  body: Buffer
}

class NetlogReceiver {
  readonly logs: string[] = []
  readonly uploads: Upload[] = []
  readonly server: Server = createServer((sock) => {
    const chunks: Buffer[] = []
    sock.on('data', (c: Buffer) => chunks.push(c))
    sock.on('end', () => {
      const all = Buffer.concat(chunks)
      if (all.subarray(0, 4).toString() === 'LOG\n') {
        this.logs.push(...all.subarray(4).toString('utf8').split('\n').filter((l) => l !== ''))
      } else if (all.subarray(0, 7).toString() === 'FILE 2\n') {
        let at = 7
        const line = (): string => {
          const nl = all.indexOf(10, at)
          const text = all.subarray(at, nl).toString('utf8')
          at = nl + 1
          return text
        }
        const path = line()
        const guestPath = line()
        const pids = line()
        this.uploads.push({ path, guestPath, pids, body: all.subarray(at) })
      }
    })
  })
  async listen(): Promise<number> {
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok))
    return (this.server.address() as { port: number }).port
  }
}

let agent: RunningAgent
let receiver: NetlogReceiver
let netlogPort: number
let work: string
let analyzerZip: Buffer
const cleanup: string[] = []

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'aviary-analyzer-test-'))
  const outfile = join(work, 'build', 'analyzer.cjs')
  await build({ entryPoints: [join(__dirname, 'main.ts')], outfile, bundle: true, platform: 'node', format: 'cjs', target: 'node18', logLevel: 'error' })
  const zip = new ZipFile()
  zip.addFile(outfile, 'analyzer.cjs', { compress: false })
  zip.end()
  const parts: Buffer[] = []
  analyzerZip = await new Promise<Buffer>((ok) => zip.outputStream.on('data', (c: Buffer) => parts.push(c)).on('end', () => ok(Buffer.concat(parts))))
  agent = await runAgent({ host: '127.0.0.1', port: 0 })
  receiver = new NetlogReceiver()
  netlogPort = await receiver.listen()
})
afterAll(async () => {
  await agent?.close()
  await new Promise<void>((ok) => receiver?.server.close(() => ok()))
  rmSync(work, { recursive: true, force: true })
})
afterEach(() => {
  for (const p of cleanup.splice(0)) rmSync(p, { recursive: true, force: true })
})

async function call(path: string, fields: Record<string, string>, file?: [string, Buffer]): Promise<Record<string, unknown>> {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  if (file !== undefined) form.append(file[0], new Blob([file[1]]), file[0])
  const r = await fetch(`http://127.0.0.1:${agent.port}${path}`, { method: path === '/environ' ? 'GET' : 'POST', body: path === '/environ' ? undefined : form })
  const body = (await r.json()) as Record<string, unknown>
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(body)}`)
  return body
}

function clock(d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0')
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

/** Runs one analysis the way the host's GuestManager does; returns the behaviour records. */
async function analyse(sample: string | Buffer | null, conf: Record<string, string>, options: string[], ext = '.sh', start: 'execnode' | 'execute' = 'execnode'): Promise<{ records: BehaviorRecord[]; status: Record<string, unknown>; task: string }> {
  const task = String(1000 + Math.floor(Math.random() * 1e6))
  const environ = (await call('/environ', {})).environ as Record<string, string>
  const temp = environ.TEMP ?? '/tmp'
  const analyzerDir = String((await call('/mkdtemp', { dirpath: work })).dirpath)
  await call('/extract', { dirpath: analyzerDir }, ['zipfile', analyzerZip])
  const fileName = `aviary-h2-sample-${task}${ext}`
  const lines = {
    id: task, category: 'file', target: `/host/binaries/${task}`, file_name: fileName, file_type: 'POSIX shell script, ASCII text executable',
    package: '', options: [`agent_port=${agent.port}`, ...options].join(','), timeout: '30', enforce_timeout: 'False', clock: clock(new Date()),
    ip: '127.0.0.1', port: String(netlogPort), terminate_processes: 'False', pe_exports: '', ...conf
  }
  const text = ['[analysis]', ...Object.entries(lines).map(([k, v]) => `${k} = ${v}`)].join('\n')
  await call('/store', { filepath: `${analyzerDir}/analysis.conf` }, ['file', Buffer.from(text)])
  if (sample !== null) {
    await call('/store', { filepath: `${temp}/${fileName}` }, ['file', Buffer.from(sample)])
    cleanup.push(`${temp}/${fileName}`)
  }
  await call('/status', { status: 'init' })
  if (start === 'execnode') await call('/execnode', { filepath: `${analyzerDir}/analyzer.cjs`, async: 'yes', cwd: analyzerDir })
  // How a host starts it under a third-party (Cuckoo/CAPE) agent on a guest with node installed.
  else await call('/execute', { command: 'node analyzer.cjs', async: 'yes', cwd: analyzerDir })
  let status: Record<string, unknown> = {}
  await expect
    .poll(async () => {
      status = (await fetch(`http://127.0.0.1:${agent.port}/status`).then((r) => r.json())) as Record<string, unknown>
      return status.status
    }, { timeout: 40_000, interval: 200 })
    .toMatch(/^(complete|exception)$/)
  // The log is sent before the status, but the receiver may still be taking it in when the
  // status arrives (seen at 100% CPU): waited for, briefly.
  const find = () => receiver.uploads.find((u) => u.path === 'logs/behavior.jsonl' && u.body.toString().startsWith(`{"type":"analyzer","version":1,"task":"${task}"`))
  await expect.poll(find, { timeout: 10_000, interval: 100 }).toBeDefined()
  const upload = find()
  const records = (upload?.body.toString('utf8') ?? '').trim().split('\n').map((l) => JSON.parse(l) as BehaviorRecord)
  return { records, status, task }
}

describe.each([
  ['with strace, started by /execnode', [], 'execnode'],
  ['with /proc polling only, started by /execute node analyzer.cjs', ['strace=0'], 'execute']
] as const)('analyzer %s', (_name, options, start) => {
  it('records the sample tree, its dropped file and the log, then reports complete', async () => {
    const marker = `/tmp/aviary-h2-${randomBytes(4).toString('hex')}-x`
    cleanup.push(marker)
    const content = `dropped ${marker}\n`
    const { records, status } = await analyse(`#!/bin/sh\necho "dropped ${marker}" > ${marker}\nsleep 0.3\n`, {}, [...options], '.sh', start)
    expect(status).toMatchObject({ status: 'complete', description: 'True' })
    const analyzer = records[0]
    expect(analyzer).toMatchObject({ type: 'analyzer', package: 'sh', reason: 'tree-ended' })
    const procs = records.filter((r): r is ProcessRecord => r.type === 'process')
    const sh = procs.find((p) => /^(\/usr)?\/bin\/sh \/tmp\/aviary-h2-sample-\d+\.sh$/.test(p.command_line))
    const sleeper = procs.find((p) => p.command_line === 'sleep 0.3')
    expect(sh).toBeDefined()
    // Only the sample's tree: no strace, no analyzer, nothing else.
    expect(procs.map((p) => p.command_line).sort()).toEqual([sh?.command_line, 'sleep 0.3'].sort())
    expect(sleeper?.ppid).toBe(sh?.pid)
    expect(sleeper?.exited).not.toBeNull()
    const file = records.find((r): r is FileRecord => r.type === 'file' && r.path === marker)
    expect(file?.op).toBe('created')
    const sha = createHash('sha256').update(content).digest('hex')
    const dropped = receiver.uploads.find((u) => u.guestPath === marker)
    expect(dropped?.path).toBe(`files/${sha.slice(0, 16)}_${marker.slice('/tmp/'.length)}`)
    expect(dropped?.body.toString()).toBe(content)
    expect(file?.sha256).toBe(sha)
    expect(receiver.logs.some((l) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \[analyzer\] INFO: target \/tmp\/aviary-h2-sample-\d+\.sh, package sh$/.test(l))).toBe(true)
  })
})

describe('analyzer at the timeout', () => {
  it('stops at the timeout with enforce_timeout and kills the tree', async () => {
    // 5 s, not 2: with other test files beside it, a 2 s run once ended with no behaviour log uploaded.
    const { records, status } = await analyse('#!/bin/sh\nsleep 1000 &\nsleep 1001\n', { timeout: '5', enforce_timeout: 'True', terminate_processes: 'True' }, [])
    expect(status).toMatchObject({ status: 'complete' })
    expect(records[0]).toMatchObject({ type: 'analyzer', reason: 'timeout' })
    const procs = records.filter((r): r is ProcessRecord => r.type === 'process')
    const sleepers = procs.filter((p) => /^sleep 100[01]$/.test(p.command_line))
    expect(sleepers.map((p) => p.command_line).sort()).toEqual(['sleep 1000', 'sleep 1001'])
    for (const p of procs) expect(existsSync(`/proc/${p.pid}`) && readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').startsWith('sleep\x00100')).toBe(false)
  })
})

describe('analyzer task kinds', () => {
  it('runs the chosen member of an archive task', async () => {
    const zip = new ZipFile()
    zip.addBuffer(Buffer.from('#!/bin/sh\nsleep 0.2\n'), 'inner/run.sh')
    zip.addBuffer(Buffer.from('decoy'), 'readme.txt')
    zip.end()
    const parts: Buffer[] = []
    const bytes = await new Promise<Buffer>((ok) => zip.outputStream.on('data', (c: Buffer) => parts.push(c)).on('end', () => ok(Buffer.concat(parts))))
    const { records, status } = await analyse(bytes, { category: 'archive', file_type: 'Zip archive data' }, ['filename=inner/run.sh'], '.zip')
    const target = String((records[0] as { target?: string }).target ?? '')
    if (target.includes('/inner/')) cleanup.push(target.slice(0, target.indexOf('/inner/')))
    expect(status).toMatchObject({ status: 'complete', description: 'True' })
    expect(records[0]).toMatchObject({ type: 'analyzer', package: 'sh', target: expect.stringMatching(/\/archive-[^/]+\/inner\/run\.sh$/) })
    const procs = records.filter((r): r is ProcessRecord => r.type === 'process').map((p) => p.command_line)
    expect(procs).toEqual(expect.arrayContaining(['sleep 0.2', expect.stringMatching(/^(\/usr)?\/bin\/sh \/tmp\/archive-[^/]+\/inner\/run\.sh$/)]))
  })

  it('fetches a URL task and records the connection', async () => {
    let hits = 0
    const web = createHttpServer((_req, res) => {
      hits++
      res.end('<html>hello</html>')
    })
    await new Promise<void>((ok) => web.listen(0, '127.0.0.1', ok))
    const port = (web.address() as { port: number }).port
    try {
      const url = `http://127.0.0.1:${port}/page-${randomBytes(3).toString('hex')}`
      const { records, status } = await analyse(null, { category: 'url', target: url, file_name: '', file_type: '' }, [])
      expect(status).toMatchObject({ status: 'complete' })
      expect(records[0]).toMatchObject({ type: 'analyzer', package: 'browser', target: url, reason: 'tree-ended' })
      expect(hits).toBe(1)
      const conns = records.filter((r): r is ConnectionRecord => r.type === 'connection')
      expect(conns).toEqual(expect.arrayContaining([expect.objectContaining({ proto: 'tcp', dst: '127.0.0.1', dport: port })]))
    } finally {
      web.close()
    }
  })
})
