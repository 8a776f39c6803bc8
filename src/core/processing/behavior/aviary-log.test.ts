// Aviary's analyzer log from a REAL run: the analyzer (src/agent/analyzer/main.ts bundled with
// esbuild, as the host ships it) analyses a shell sample on this host that writes, modifies and
// deletes files, starts children and opens a TCP connection to a listener of the test. The
// behavior.jsonl it uploads (received over a real socket in Cuckoo's FILE 2 framing) is put into
// an analysis folder's logs/, and analyzeBehavior must give the processes the sample itself
// reported (its own $$ pids), the tree, the file changes and the connection.
import { build } from 'esbuild'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ProcessEntry, ProcessTreeNode } from '../types.js'
import { analyzeBehaviorDetailed, kernelImage, type BehaviorResult } from './index.js'
import { processName } from './aviary-log.js'
import { MonitorLogWriter, TEST_APIS, filetime } from './monitor-log.fixture.js'

const cleanup: string[] = []
const servers: Server[] = []
let result: BehaviorResult
let analysis: string
let marker: string
let tcpPort: number
let tcpHits = 0

/** Stands in for the result server: keeps the body of the logs/behavior.jsonl FILE 2 upload. */
function receiver(onBehavior: (body: Buffer) => void): Server {
  return createServer((sock) => {
    const chunks: Buffer[] = []
    sock.on('data', (c: Buffer) => chunks.push(c))
    sock.on('error', () => undefined)
    sock.on('end', () => {
      const all = Buffer.concat(chunks)
      if (all.subarray(0, 7).toString() !== 'FILE 2\n') return
      let at = 7
      const fields: string[] = []
      for (let i = 0; i < 3; i++) {
        const nl = all.indexOf(10, at)
        fields.push(all.subarray(at, nl).toString('utf8'))
        at = nl + 1
      }
      if (fields[0] === 'logs/behavior.jsonl') onBehavior(all.subarray(at))
    })
  })
}

function hostClock(): string {
  const d = new Date()
  const p = (n: number): string => String(n).padStart(2, '0')
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

async function listen(server: Server): Promise<number> {
  servers.push(server)
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  return (server.address() as { port: number }).port
}

beforeAll(async () => {
  const work = mkdtempSync(join(tmpdir(), 'aviary-behavior-run-'))
  cleanup.push(work)
  marker = `/tmp/aviary-i7c-${randomBytes(4).toString('hex')}`
  mkdirSync(marker)
  cleanup.push(marker)
  writeFileSync(join(marker, 'victim.txt'), 'to be deleted\n')
  writeFileSync(join(marker, 'mod.txt'), 'to be changed\n')
  const outfile = join(work, 'analyzer', 'analyzer.cjs')
  await build({ entryPoints: [join(__dirname, '../../../agent/analyzer/main.ts')], outfile, bundle: true, platform: 'node', format: 'cjs', target: 'node18', logLevel: 'error' })

  let jsonl: Buffer | null = null
  const netlogPort = await listen(receiver((b) => (jsonl = b)))
  tcpPort = await listen(createServer((s) => {
    tcpHits++
    s.on('error', () => undefined)
    s.resume()
  }))
  // Nothing listens here: the analyzer's final POST /status fails quietly, as on a host without an agent.
  const agentPort = await listen(createServer((s) => s.destroy()))

  const task = String(Math.floor(Math.random() * 1e6))
  const fileName = `aviary-i7c-sample-${task}.sh`
  const samplePath = join('/tmp', fileName)
  cleanup.push(samplePath)
  writeFileSync(samplePath, [
    '#!/bin/sh',
    `echo $$ > ${marker}/sh.pid`,
    `echo dropped > ${marker}/new.bin`,
    `echo more >> ${marker}/mod.txt`,
    `rm ${marker}/victim.txt`,
    `bash -c 'echo $$ > ${marker}/bash.pid; exec 3<>/dev/tcp/127.0.0.1/${tcpPort}; echo hi >&3; sleep 0.6; exit 0'`,
    'sleep 0.3',
    ''
  ].join('\n'))
  const conf = {
    id: task, category: 'file', target: `/host/binaries/${task}`, file_name: fileName, file_type: 'POSIX shell script, ASCII text executable',
    // set_clock=0 and the host's own time: the analyzer sets the clock of the machine it runs on.
    package: '', options: `agent_port=${agentPort},set_clock=0`, timeout: '30', enforce_timeout: 'False', clock: hostClock(),
    ip: '127.0.0.1', port: String(netlogPort), terminate_processes: 'False', pe_exports: ''
  }
  writeFileSync(join(work, 'analyzer', 'analysis.conf'), ['[analysis]', ...Object.entries(conf).map(([k, v]) => `${k} = ${v}`)].join('\n'))
  const child = spawn(process.execPath, [outfile], { cwd: join(work, 'analyzer'), env: { ...process.env, AVIARY_ANALYZER_DIR: join(work, 'analyzer') }, stdio: ['ignore', 'pipe', 'pipe'] })
  let said = ''
  const keep = (b: Buffer): void => { said = (said + b.toString()).slice(-4000) }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const code = await new Promise<number | null>((ok) => child.on('exit', ok))
  // What the analyzer said, should it fail: the line that says why.
  expect(code, said).toBe(0)
  for (let i = 0; i < 50 && jsonl === null; i++) await new Promise((ok) => setTimeout(ok, 100))
  if (jsonl === null) throw new Error('the analyzer uploaded no logs/behavior.jsonl')

  const dir = join(work, 'analysis')
  analysis = dir
  mkdirSync(join(dir, 'logs'), { recursive: true })
  writeFileSync(join(dir, 'logs', 'behavior.jsonl'), jsonl as unknown as Buffer)
  result = await analyzeBehaviorDetailed(dir)
}, 60_000)

afterAll(async () => {
  for (const s of servers) await new Promise<void>((ok) => s.close(() => ok()))
  for (const p of cleanup) rmSync(p, { recursive: true, force: true })
})

describe('analyzeBehavior on a real Aviary analyzer log', () => {
  it('gives the sample tree with the pids the sample itself saw', () => {
    const shPid = Number(readFileSync(join(marker, 'sh.pid'), 'utf8'))
    const bashPid = Number(readFileSync(join(marker, 'bash.pid'), 'utf8'))
    const processes = result.behavior.processes as ProcessEntry[]
    const sh = processes.find((p) => p.pid === shPid)
    const bash = processes.find((p) => p.pid === bashPid)
    expect(sh?.command_line).toMatch(/^(\/usr)?\/bin\/sh \/tmp\/aviary-i7c-sample-\d+\.sh$/)
    expect(sh?.process_name).toBe('sh')
    expect(bash).toMatchObject({ ppid: shPid, process_name: 'bash', calls: [], track: true })
    expect(bash?.command_line.startsWith('bash -c echo $$ >')).toBe(true)
    expect(bash?.exited).not.toBeNull()
    expect((bash?.first_seen ?? 0) * 1000).toBeGreaterThan(Date.now() - 120_000)
    expect(result.analyzer).toMatchObject({ package: 'sh', pid: shPid, reason: 'tree-ended' })

    const tree = result.behavior.processtree as ProcessTreeNode[]
    expect(tree.map((n) => n.pid)).toEqual([shPid])
    const kids = tree[0]?.children ?? []
    expect(kids.map((k) => k.pid)).toContain(bashPid)
    expect(kids.map((k) => k.command_line)).toContain('sleep 0.3')
    expect(processes.map((p) => p.first_seen)).toEqual([...processes.map((p) => p.first_seen)].sort((a, b) => a - b))
  })

  it('gives the file changes and the connection in summary and generic', () => {
    expect(tcpHits).toBe(1)
    const summary = result.behavior.summary as Record<string, string[]>
    expect(summary.file_created).toContain(`${marker}/new.bin`)
    expect(summary.file_written).toEqual(expect.arrayContaining([`${marker}/new.bin`, `${marker}/mod.txt`]))
    expect(summary.file_created).not.toContain(`${marker}/mod.txt`)
    expect(summary.file_deleted).toContain(`${marker}/victim.txt`)
    expect(summary.connects_ip).toContain('127.0.0.1')
    // An address is no host name: connects_host gets names only from the run's DNS answers (connects-host.ts).
    expect(summary.connects_host).toBeUndefined()
    expect(summary.command_line).toContain('sleep 0.3')
    const bashPid = Number(readFileSync(join(marker, 'bash.pid'), 'utf8'))
    const generic = result.behavior.generic as { pid: number; process_name: string; summary: Record<string, string[]> }[]
    const bash = generic.find((g) => g.pid === bashPid)
    expect(bash?.process_name).toBe('bash')
    expect(bash?.summary.connects_ip).toEqual(['127.0.0.1'])
    expect(result.behavior.apistats).toEqual({})
  })
})

describe('analyzeBehavior with both logs, and hostile lines', () => {
  it('merges a Cuckoo monitor log with the Aviary log, and skips lines that are not records', async () => {
    const w = new MonitorLogWriter(TEST_APIS)
    const [low, high] = filetime(Date.now() / 1000 - 3600)
    w.call('__process__', 1, 0, 1, 0, [low, high, 999_999, 4, 'C:\\w\\old.exe', 'old.exe', 0, 1, []])
    w.call('NtCreateMutant', 1, 5, 1, 0, [0x44, 0x1f0001, 0, 'both-sources'])
    writeFileSync(join(analysis, 'logs', '999999.bson'), w.bytes())
    const jsonl = readFileSync(join(analysis, 'logs', 'behavior.jsonl'), 'utf8')
    writeFileSync(join(analysis, 'logs', 'behavior.jsonl'), jsonl + '[1,2]\nnot json\n{"type":"process","pid":"x"}\n{"type":"file","op":"deleted"}\n')
    const both = await analyzeBehaviorDetailed(analysis)
    const pids = (both.behavior.processes as ProcessEntry[]).map((p) => p.pid)
    expect(pids[0]).toBe(999_999)
    expect(pids.slice(1).sort()).toEqual((result.behavior.processes as ProcessEntry[]).map((p) => p.pid).sort())
    const tree = both.behavior.processtree as ProcessTreeNode[]
    expect(tree.map((n) => n.pid)).toEqual([999_999, ...(result.behavior.processtree as ProcessTreeNode[]).map((n) => n.pid)])
    const summary = both.behavior.summary as Record<string, string[]>
    expect(summary.mutex).toEqual(['both-sources'])
    expect(summary.file_deleted).toEqual((result.behavior.summary as Record<string, string[]>).file_deleted)
    expect(both.behavior.apistats).toEqual({ '999999': { NtCreateMutant: 1 } })
    expect(both.notes).toEqual([expect.stringMatching(/behavior\.jsonl: 2 line\(s\) that are not JSON objects were skipped$/)])
  })
})

describe('names and images of processes', () => {
  it('a Windows process is named from its image, as Cuckoo and CAPE do; a Linux one from its command line', () => {
    expect(processName('cmd /c echo hi', 'C:\\windows\\system32\\cmd.exe')).toBe('cmd.exe')
    expect(processName('reg add HKCU\\x /f', 'C:\\windows\\system32\\reg.exe')).toBe('reg.exe')
    expect(processName('"C:\\a b\\quick start.exe"', 'C:\\a b\\quick start.exe')).toBe('quick start.exe')
    expect(processName('cmd /c echo hi', '')).toBe('cmd')
    expect(processName('sh -c ls', '/usr/bin/dash')).toBe('sh')
  })

  it('the kernel\'s " (deleted)" goes when the trace shows that file exec\'d or removed; a fork polled before its exec takes the exec\'d file', () => {
    const none = new Set<string>()
    expect(kernelImage('/tmp/selfdel (deleted)', { forkedAs: '', execed: '/tmp/selfdel' }, none)).toBe('/tmp/selfdel')
    expect(kernelImage('/tmp/x (deleted)', undefined, new Set(['/tmp/x']))).toBe('/tmp/x')
    // A file really named so, which nothing shows was removed, keeps its name.
    expect(kernelImage('/tmp/x (deleted)', { forkedAs: '', execed: '/tmp/x (deleted)' }, none)).toBe('/tmp/x (deleted)')
    // tar forked gzip; /proc was read before the exec: the image is gzip's.
    expect(kernelImage('/usr/bin/tar', { forkedAs: '/usr/bin/tar', execed: '/usr/bin/gzip' }, none)).toBe('/usr/bin/gzip')
    // The kernel's view after the exec (a symlink resolved) stays.
    expect(kernelImage('/usr/bin/dash', { forkedAs: '/usr/bin/sh', execed: '/usr/bin/sh' }, none)).toBe('/usr/bin/dash')
  })
})
