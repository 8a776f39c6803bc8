#!/usr/bin/env node
// Behavior processing of a large Cuckoo monitor log: `node bench/behavior.bench.mjs [MiB]`
// [maxCalls] (default 120 MiB, under Cuckoo's 128 MiB analysis_size_limit). Generates logs/<pid>.bson in the
// monitor's format (src/core/processing/behavior/monitor-log.fixture.ts: info messages, a
// __process__, then file/registry/mutex/network calls with 256-byte buffers), then runs
// analyzeBehaviorDetailed (src/core/processing/behavior/index.ts, bundled with esbuild) in a
// fresh Node process under /usr/bin/time. Prints one JSON line: MB/s, calls/s, calls kept
// (default cap DEFAULT_MAX_CALLS = 100,000 per process, processing/behavior/calls-store.ts), peak RSS.
// --quick: a 4 MiB log.
import { build } from 'esbuild'
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, positional, quick, tempDir, track } from './cleanup.mjs'

const MIB = Number(positional()[0] ?? (quick ? 4 : 120))
/** Calls kept per process (analyzeBehaviorDetailed's maxCalls); default: the module's default. */
const MAX_CALLS = positional()[1] === undefined ? undefined : Number(positional()[1])
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const work = tempDir('aviary-behavior-bench-')

/** spawnSync's answer, without blocking: a signal can stop the bench (and the child) meanwhile. */
function run(cmd, argv) {
  return new Promise((resolve) => {
    const c = track(spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true }), { group: true })
    let stdout = ''
    let stderr = ''
    c.stdout.setEncoding('utf8').on('data', (d) => { stdout += d })
    c.stderr.setEncoding('utf8').on('data', (d) => { stderr += d })
    c.on('close', (status) => resolve({ status, stdout, stderr }))
  })
}

async function bundle(name, source) {
  const entry = path.join(work, `${name}.ts`)
  writeFileSync(entry, source)
  const out = path.join(work, `${name}.cjs`)
  await build({ entryPoints: [entry], outfile: out, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'error' })
  return out
}

async function main() {
  const dir = path.join(work, 'analysis')
  mkdirSync(path.join(dir, 'logs'), { recursive: true })
  const gen = await bundle('gen', `
import { closeSync, openSync, writeSync } from 'node:fs'
import { MonitorLogWriter, TEST_APIS, filetime } from ${JSON.stringify(path.join(root, 'src/core/processing/behavior/monitor-log.fixture.ts'))}
const limit = Number(process.argv[3]) * 1024 * 1024
const fd = openSync(process.argv[2], 'w')
const w = new MonitorLogWriter(TEST_APIS)
const [low, high] = filetime(Date.now() / 1000)
w.call('__process__', 1, 0, 1, 0, [low, high, 4242, 4, 'C:\\\\x\\\\sample.exe', 'sample.exe', 0, 1, []])
let size = 0
let calls = 0
const buf = Buffer.alloc(256, 0x41)
const flush = (): void => { for (const p of w.parts.splice(0)) { writeSync(fd, p); size += p.length } }
while (size < limit) {
  for (let i = 0; i < 1000; i++, calls++) {
    const k = calls % 4
    if (k === 0) w.call('NtCreateFile', 1, calls, 1, 0, [0x100 + (calls % 50), 0x40100000, 128, 5, 96, 1, 'C:\\\\Users\\\\me\\\\f' + (calls % 5000) + '.tmp', 'f.tmp', 2])
    else if (k === 1) w.call('NtWriteFile', 1, calls, 1, 0, [0x100 + (calls % 50), 'C:\\\\f.tmp', buf, calls])
    else if (k === 2) w.call('RegSetValueExW', 1, calls, 1, 0, [0x88, 1, 'v', 'HKEY_CURRENT_USER\\\\Software\\\\k' + (calls % 300), 'k'])
    else w.call('NtCreateMutant', 1, calls, 1, 0, [0x44, 0x1f0001, 0, 'm' + (calls % 100)])
  }
  flush()
}
closeSync(fd)
console.log(JSON.stringify({ size, calls }))
`)
  const bson = path.join(dir, 'logs', '4242.bson')
  const g = await run(process.execPath, [gen, bson, String(MIB)])
  if (g.status !== 0) throw new Error(g.stderr)
  const { size, calls } = JSON.parse(g.stdout)
  const runner = await bundle('run', `
import { analyzeBehaviorDetailed } from ${JSON.stringify(path.join(root, 'src/core/processing/behavior/index.ts'))}
async function main(): Promise<void> {
  const t0 = performance.now()
  const r = await analyzeBehaviorDetailed(process.argv[2], process.argv[3] === undefined ? {} : { maxCalls: Number(process.argv[3]) })
  const ms = performance.now() - t0
  const procs = r.behavior.processes as { calls: unknown[] }[]
  const stats = r.behavior.apistats as Record<string, Record<string, number>>
  const counted = Object.values(stats).flatMap((s) => Object.values(s)).reduce((a, b) => a + b, 0)
  console.log(JSON.stringify({ ms, kept: procs.reduce((a, p) => a + p.calls.length, 0), counted, notes: r.notes }))
}
void main()
`)
  const r = await run('/usr/bin/time', ['-f', '%M', process.execPath, runner, dir, ...(MAX_CALLS === undefined ? [] : [String(MAX_CALLS)])])
  if (r.status !== 0) throw new Error(r.stderr)
  const inner = JSON.parse(r.stdout.trim())
  const lines = r.stderr.trim().split('\n')
  console.log(JSON.stringify({
    bsonMiB: Math.round(size / 1048576), calls, ms: Math.round(inner.ms), MBps: Math.round(size / 1e6 / (inner.ms / 1000)),
    callsPerSec: Math.round(calls / (inner.ms / 1000)), kept: inner.kept, counted: inner.counted, peakRssMiB: Math.round(Number(lines[lines.length - 1]) / 1024), notes: inner.notes
  }))
}

try {
  await main()
} finally {
  await cleanup()
}
