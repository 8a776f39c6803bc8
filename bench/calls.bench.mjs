#!/usr/bin/env node
// Calls at a million: `node bench/calls.bench.mjs [calls]` (default 1,000,000; needs the built CLI,
// `npm run build:cli`). Writes an strace log of that many system calls (open/stat/connect/sendto/
// mmap/clone/execve lines as Aviary's analyzer uploads them, logs/strace.log, one process), then:
//  1. processing: the behaviour module and the report writer (analyzeBehaviorDetailed +
//     writeJsonReport, bundled with esbuild) in a fresh Node process under /usr/bin/time (with the
//     service's --max-semi-space-size=2, as processing runs inside the service), once
//     with the default cap (100,000 calls kept per process) and once keeping all of them
//     (calls_max): time, peak RSS, report.json size;
//  2. serving: the built `aviary serve` on that analysis folder, then GET /aviary/tasks/1/calls,
//     first and later pages of the process, a category filter and a text search (first and
//     cached): time per request, and the service's RSS (VmRSS, VmHWM) before and after, then
//     after each of ten more (new, so uncached) filtered searches.
// Prints one JSON line. Ctrl-C (or SIGTERM, or an error) stops the children and removes the work
// folder (bench/cleanup.mjs). --quick: 20,000 calls.
import { build } from 'esbuild'
import { spawn } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs'
import { createServer } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { cleanup, positional, quick, tempDir, track } from './cleanup.mjs'

const CALLS = Number(positional()[0] ?? (quick ? 20_000 : 1_000_000))
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const work = tempDir('aviary-calls-bench-')

/** Line i of a busy process: mostly file calls, some network, exec mappings, forks. */
function line(pid, i) {
  const t = (1_700_000_000 + i / 10_000).toFixed(6)
  switch (i % 10) {
    case 0: return `${pid} ${t} openat(AT_FDCWD</tmp/work>, "/usr/lib/x86_64-linux-gnu/lib${i % 500}.so", O_RDONLY|O_CLOEXEC) = 3</usr/lib/x86_64-linux-gnu/lib${i % 500}.so>`
    case 1: return `${pid} ${t} newfstatat(AT_FDCWD</tmp/work>, "/etc/conf.d/f${i % 3000}", 0x7ffd5e1c2a10, 0) = -1 ENOENT (No such file or directory)`
    case 2: return `${pid} ${t} connect(3<TCP:[10.0.0.2:${40000 + (i % 20000)}->203.0.113.${i % 250}:443]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("203.0.113.${i % 250}")}, 16) = -1 EINPROGRESS (Operation now in progress)`
    case 3: return `${pid} ${t} mmap(NULL, 1400832, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_DENYWRITE, 3</usr/lib/x86_64-linux-gnu/lib${i % 500}.so>, 0x26000) = 0x7fb58f307000`
    case 4: return `${pid} ${t} sendto(4<UDP:[10.0.0.2:5353->10.0.0.1:53]>, "\\235\\\\\\1\\0\\0\\1\\0\\0\\0\\0\\0\\0\\3c${String(i % 100).padStart(2, '0')}\\7example\\3com\\0\\0\\1\\0\\1", 29, MSG_NOSIGNAL, NULL, 0) = 29`
    case 5: return `${pid} ${t} openat(AT_FDCWD</tmp/work>, "out/${i}.dat", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 5</tmp/work/out/${i}.dat>`
    case 6: return `${pid} ${t} unlinkat(AT_FDCWD</tmp/work>, "out/${i - 1}.dat", 0) = 0`
    case 7: return `${pid} ${t} getdents64(3</tmp/work/out>, 0x55d0a2c0 /* 12 entries */, 32768) = 384`
    case 8: return `${pid} ${t} access("/etc/ld.so.preload", R_OK) = -1 ENOENT (No such file or directory)`
    default: return `${pid} ${t} kill(${pid + 1}, SIGTERM) = -1 ESRCH (No such process)`
  }
}

function writeLog(file, calls) {
  const fd = openSync(file, 'w')
  const pid = 4242
  writeSync(fd, `${pid} 1699999999.000000 execve("/tmp/work/sample", ["/tmp/work/sample", "--busy"], 0x7ffd /* 20 vars */) = 0\n`)
  let chunk = []
  for (let i = 1; i < calls; i++) {
    chunk.push(line(pid, i))
    if (chunk.length === 10_000) {
      writeSync(fd, `${chunk.join('\n')}\n`)
      chunk = []
    }
  }
  if (chunk.length > 0) writeSync(fd, `${chunk.join('\n')}\n`)
  closeSync(fd)
  return statSync(file).size
}

async function bundle(name, source) {
  const entry = path.join(work, `${name}.ts`)
  const out = path.join(work, `${name}.cjs`)
  const { writeFileSync } = await import('node:fs')
  writeFileSync(entry, source)
  await build({ entryPoints: [entry], outfile: out, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'error' })
  return out
}

function timed(cmd, args) {
  return new Promise((resolve, reject) => {
    // Its own process group: /usr/bin/time's node goes with it.
    const c = track(spawn('/usr/bin/time', ['-f', '%M', cmd, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true }), { group: true })
    let out = ''
    let err = ''
    c.stdout.on('data', (d) => (out += d))
    c.stderr.on('data', (d) => (err += d))
    c.on('close', (code) => {
      if (code !== 0) return reject(new Error(err))
      const lines = err.trim().split('\n')
      resolve({ ...JSON.parse(out.trim()), peakRssMiB: Math.round(Number(lines[lines.length - 1]) / 1024) })
    })
  })
}

const freePort = () => new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address()
    s.close(() => resolve(port))
  })
})

function rss(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(text)?.[1] ?? 0)
  return { rssMiB: Math.round(kb('VmRSS') / 1024), hwmMiB: Math.round(kb('VmHWM') / 1024) }
}

async function get(base, p) {
  const t0 = performance.now()
  const res = await fetch(base + p)
  const body = await res.json()
  if (res.status !== 200) throw new Error(`${p}: ${res.status} ${JSON.stringify(body)}`)
  return { ms: Math.round((performance.now() - t0) * 10) / 10, body }
}

async function main() {
  const data = path.join(work, 'data')
  const analysis = path.join(data, 'storage', 'analyses', '1')
  mkdirSync(path.join(analysis, 'logs'), { recursive: true })
  mkdirSync(path.join(analysis, 'reports'), { recursive: true })
  const logBytes = writeLog(path.join(analysis, 'logs', 'strace.log'), CALLS)

  const runner = await bundle('process', `
import path from 'node:path'
import { statSync } from 'node:fs'
import { analyzeBehaviorDetailed } from ${JSON.stringify(path.join(root, 'src/core/processing/behavior/index.ts'))}
import { writeJsonReport } from ${JSON.stringify(path.join(root, 'src/core/reporting/json-writer.ts'))}
async function main(): Promise<void> {
  const dir = process.argv[2] as string
  const t0 = performance.now()
  const r = await analyzeBehaviorDetailed(dir, process.argv[3] === undefined ? {} : { maxCalls: Number(process.argv[3]) })
  const t1 = performance.now()
  const out = path.join(dir, 'reports', 'report.json')
  await writeJsonReport(out, { behavior: r.behavior })
  const t2 = performance.now()
  const stats = r.behavior.apistats as Record<string, Record<string, number>>
  console.log(JSON.stringify({
    behaviorMs: Math.round(t1 - t0), reportMs: Math.round(t2 - t1), kept: r.calls?.processes.reduce((a, p) => a + p.calls, 0) ?? 0,
    counted: Object.values(stats).flatMap((s) => Object.values(s)).reduce((a, b) => a + b, 0), reportMB: Math.round(statSync(out).size / 1e6)
  }))
}
void main()
`)
  // With the service's own flag (bin/aviary.js): processing runs inside the service.
  const capped = await timed(process.execPath, ['--max-semi-space-size=2', runner, analysis])
  const all = await timed(process.execPath, ['--max-semi-space-size=2', runner, analysis, String(CALLS)])

  const port = await freePort()
  const svc = track(spawn(process.execPath, ['--max-semi-space-size=2', path.join(root, 'bin/aviary.js'), 'serve', '--data', data, '-p', String(port)], { stdio: ['ignore', 'ignore', 'ignore'], detached: true }), { group: true, label: 'stop aviary serve' })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (await fetch(`${base}/cuckoo/status`).then((r) => r.ok, () => false)) break
    if (i > 200) throw new Error('the service did not start')
    await new Promise((r) => setTimeout(r, 100))
  }
  const db = new Database(path.join(data, 'aviary.db'))
  db.prepare(`INSERT INTO tasks (id, category, target, clock, added_on, status) VALUES (1, 'file', '/x', '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'reported')`).run()
  db.close()
  const before = rss(svc.pid)
  const listing = await get(base, '/aviary/tasks/1/calls')
  const pid = listing.body.processes[0].pid
  const requests = {
    listing: listing.ms,
    firstPage: (await get(base, `/aviary/tasks/1/calls/${pid}?limit=200`)).ms,
    lastPage: (await get(base, `/aviary/tasks/1/calls/${pid}?offset=${CALLS - 1000}&limit=1000`)).ms,
    categoryFirst: (await get(base, `/aviary/tasks/1/calls/${pid}?category=network&limit=200`)).ms,
    categoryCached: (await get(base, `/aviary/tasks/1/calls/${pid}?category=network&offset=5000&limit=200`)).ms,
    searchFirst: (await get(base, `/aviary/tasks/1/calls/${pid}?q=c14&limit=200`)).ms,
    searchCached: (await get(base, `/aviary/tasks/1/calls/${pid}?q=c14&offset=200&limit=200`)).ms,
    searchRareFirst: (await get(base, `/aviary/tasks/1/calls/${pid}?q=out/999995.dat`)).ms
  }
  const found = (await get(base, `/aviary/tasks/1/calls/${pid}?q=c14&limit=1`)).body.total
  const after = rss(svc.pid)
  // Memory under more filters: ten more searches, each a new one (cold), and the RSS after each.
  const moreSearches = []
  for (let k = 0; k < 10; k++) {
    const r = await get(base, `/aviary/tasks/1/calls/${pid}?q=c${20 + k}&category=network&limit=1000`)
    moreSearches.push({ ms: r.ms, ...rss(svc.pid) })
  }
  console.log(JSON.stringify({
    calls: CALLS, straceLogMB: Math.round(logBytes / 1e6),
    processing: { defaultCap: capped, keepAll: all },
    serving: { requestsMs: requests, searchMatches: found, serviceBefore: before, serviceAfter: after, moreSearches }
  }))
}

try {
  await main()
} finally {
  await cleanup()
}
