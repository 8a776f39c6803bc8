#!/usr/bin/env node
// Aviary benchmark (not a test: figures depend on the machine). Measures, side by side in one run:
//   ingest  multipart upload of 256 MiB and 1 GiB samples through the API (curl) against
//           `md5sum; sha1sum; sha256sum; sha512sum` on the same file, and the server's peak RSS
//   view    GET /tasks/view/{random id} with 100,000 tasks, against a bare node:http hello world
//   list    GET /tasks/list/100/{random offset} at the same scale, against the same hello world
// The service is the built `aviary serve` in its own process; load comes from wrk.
// Usage: npm run bench [-- --only ingest|http]
//        npm run bench -- --quick [--only NAME[,NAME…]] [--timeout S] [--strict]   the quick pass: every
//            bench of bench/ once at its smallest size, each under a timeout (--timeout: S seconds for
//            every one), checked for leftovers (bench/quick-pass.mjs; --strict, as CI runs it: what
//            appeared meanwhile counts as the bench's);
//            with --only ingest or --only http, just that part of this bench, small (32 MiB; 10,000
//            tasks and 2 s per wrk run)
import { execFileSync, spawn } from 'node:child_process'
import { rmSync, readFileSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { cpus } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { args, cleanup, quick, stopChild, tempDir, track } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null
if (quick && only !== 'ingest' && only !== 'http') {
  const { runQuickPass } = await import('./quick-pass.mjs')
  const timeoutS = args.includes('--timeout') ? Number(args[args.indexOf('--timeout') + 1]) : null
  process.exit(await runQuickPass({ only, timeoutS, strict: args.includes('--strict') }))
}
const TASKS = quick ? 10_000 : 100_000
const DURATION = quick ? '2s' : '15s'

function need(cmd) {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' })
  } catch {
    console.error(`bench: ${cmd} is missing; run scripts/install-debian-deps.sh as root`)
    process.exit(1)
  }
}
for (const cmd of ['curl', 'wrk', 'md5sum', 'sha512sum']) need(cmd)

const freePort = () => Number(execFileSync(process.execPath, ['-e',
  'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})']).toString())

async function waitFor(url) {
  for (let i = 0; i < 200; i++) {
    try {
      const res = await fetch(url)
      if (res.ok) return
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${url} did not answer`)
}

async function startAviary(dataDir) {
  const port = freePort()
  // The flags of bin/aviary.js's shebang and of npm start: the service as users run it.
  const child = track(spawn(process.execPath, ['--max-semi-space-size=2', path.join(root, 'bin/aviary.js'), 'serve', '--data', dataDir, '-p', String(port),
    '--max-upload-size', '2G'], { stdio: ['ignore', 'ignore', 'inherit'] }), { graceMs: 20_000, label: 'stop aviary serve' })
  const base = `http://127.0.0.1:${port}`
  await waitFor(`${base}/cuckoo/status`)
  return { base, child, stop: () => stopChild(child) }
}

// The baseline: what node:http alone answers on this machine, with no framework, routing or data.
async function startHello() {
  const port = freePort()
  const code = `
    import { createServer } from 'node:http'
    const body = JSON.stringify({ hello: 'world' })
    createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body)).listen(${port}, '127.0.0.1')`
  const child = track(spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] }), { label: 'stop the hello world' })
  const base = `http://127.0.0.1:${port}`
  await waitFor(`${base}/`)
  return { base, child, stop: () => stopChild(child) }
}

const peakRssMb = (pid) => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : NaN
}
const seconds = (start) => Number(process.hrtime.bigint() - start) / 1e9

function timeIt(fn) {
  const start = process.hrtime.bigint()
  fn()
  return seconds(start)
}

function makeSample(file, bytes) {
  const fd = openSync(file, 'w')
  const chunk = randomBytes(8 * 1024 * 1024)
  for (let done = 0; done < bytes; done += chunk.length) writeSync(fd, chunk, 0, Math.min(chunk.length, bytes - done))
  closeSync(fd)
  execFileSync('cat', [file], { stdio: ['ignore', 'ignore', 'ignore'] }) // warm the page cache for both sides
}

async function benchIngest(work) {
  const rows = []
  const svc = await startAviary(path.join(work, 'ingest-data'))
  try {
    for (const mib of quick ? [32] : [256, 1024]) {
      const file = path.join(work, `sample-${mib}.bin`)
      makeSample(file, mib * 1024 * 1024)
      const coreutils = timeIt(() => {
        for (const tool of ['md5sum', 'sha1sum', 'sha256sum', 'sha512sum']) execFileSync(tool, [file], { stdio: 'ignore' })
      })
      const api = timeIt(() => {
        const out = execFileSync('curl', ['-sS', '-f', '-F', `file=@${file};filename=sample-${mib}.bin`, `${svc.base}/tasks/create/file`]).toString()
        if (!/"task_id":\d+/.test(out)) throw new Error(`upload failed: ${out}`)
      })
      rows.push({ size: `${mib} MiB`, api, coreutils, ratio: api / coreutils, rss: peakRssMb(svc.child.pid) })
      rmSync(file)
    }
  } finally {
    await svc.stop()
  }
  return rows
}

function wrk(url, script) {
  const luaFile = script ? path.join(work, `wrk-${Math.random().toString(36).slice(2)}.lua`) : null
  if (luaFile) writeFileSync(luaFile, script)
  const wrkArgs = ['-t2', '-c32', `-d${DURATION}`, '--latency', ...(luaFile ? ['-s', luaFile] : []), url]
  const out = execFileSync('wrk', wrkArgs).toString()
  if (luaFile) rmSync(luaFile)
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  const p99 = /99%\s+([\d.]+\w+)/.exec(out)?.[1] ?? '?'
  if (non2xx > 0) throw new Error(`wrk saw ${non2xx} error responses on ${url}`)
  return { rps, p99 }
}

function seedTasks(dataDir) {
  const db = new Database(path.join(dataDir, 'aviary.db'))
  const insertSample = db.prepare(`INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
    VALUES (?, 'PE32 executable (GUI) Intel 80386, for MS Windows', ?, 'ABCDEF01', ?, ?, ?, '3072:abc:def', '2026-01-01 00:00:00')`)
  const insertTask = db.prepare(`INSERT INTO tasks (category, target, sample_id, package, timeout, priority, options, tags, owner,
      memory, enforce_timeout, clock, added_on, started_on, completed_on, status)
    VALUES ('file', ?, ?, 'exe', 120, ?, 'free=yes', '["x64"]', 'bench', 0, 0, ?, ?, ?, ?, ?)`)
  db.transaction(() => {
    for (let i = 1; i <= TASKS; i++) {
      const h = (n) => randomBytes(n).toString('hex')
      const sha256 = h(32)
      const sampleId = insertSample.run(1000 + i, h(16), h(20), sha256, h(64)).lastInsertRowid
      const done = i % 10 !== 0
      const t = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString().replace('T', ' ').slice(0, 19)
      insertTask.run(`${dataDir}/storage/uploads/${sha256}/sample${i}.exe`, sampleId, 1 + (i % 3), t, t,
        done ? t : null, done ? t : null, done ? 'reported' : 'pending')
    }
  })()
  db.close()
}

async function benchHttp(work) {
  const dataDir = path.join(work, 'http-data')
  const first = await startAviary(dataDir) // creates the database and its schema
  await first.stop()
  seedTasks(dataDir)
  const svc = await startAviary(dataDir)
  const hello = await startHello()
  try {
    const rand = (max, tmpl) => `math.randomseed(os.time())\nrequest = function() return wrk.format("GET", ${tmpl.replace('N', `math.random(${max})`)}) end\n`
    const viewScript = rand(TASKS, '"/tasks/view/" .. N')
    const listScript = rand(TASKS - 100, '"/tasks/list/100/" .. N')
    // Every route runs once before it is measured (JIT, SQLite's page cache and the OS's warm up),
    // so the figures are steady-state throughput.
    wrk(`${hello.base}/`)
    const helloRun = wrk(`${hello.base}/`)
    wrk(`${svc.base}/`, viewScript)
    const view = wrk(`${svc.base}/`, viewScript)
    wrk(`${svc.base}/`, listScript)
    const list = wrk(`${svc.base}/`, listScript)
    const list0 = wrk(`${svc.base}/tasks/list/100/0`)
    const helloAgain = wrk(`${hello.base}/`)
    const helloRps = (helloRun.rps + helloAgain.rps) / 2
    return {
      hello: helloRps,
      rows: [
        { route: 'GET /tasks/view/{random id}', ...view, ratio: view.rps / helloRps, target: 0.25 },
        { route: 'GET /tasks/list/100/{random offset}', ...list, ratio: list.rps / helloRps, target: 0.12 },
        { route: 'GET /tasks/list/100/0', ...list0, ratio: list0.rps / helloRps, target: 0.12 }
      ],
      rss: peakRssMb(svc.child.pid)
    }
  } finally {
    await svc.stop()
    await hello.stop()
  }
}

const work = tempDir('aviary-bench-')
try {
  console.log(`Aviary benchmark, ${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}`)
  if (only !== 'http') {
    const rows = await benchIngest(work)
    console.log('\n## Ingest: upload through the API vs md5sum; sha1sum; sha256sum; sha512sum (target ratio ≤ 1.0, peak RSS ≤ 150 MB)\n')
    console.log('| sample | API upload (s) | coreutils (s) | ratio | server peak RSS (MB) |\n|---|---|---|---|---|')
    for (const r of rows) console.log(`| ${r.size} | ${r.api.toFixed(2)} | ${r.coreutils.toFixed(2)} | ${r.ratio.toFixed(2)} | ${r.rss.toFixed(0)} |`)
  }
  if (only !== 'ingest') {
    const res = await benchHttp(work)
    console.log(`\n## Requests per second with ${TASKS.toLocaleString('en')} tasks (wrk -t2 -c32 -d${DURATION}), against a bare node:http hello world (${res.hello.toFixed(0)} req/s)\n`)
    console.log('| route | req/s | p99 latency | ratio to hello world | target |\n|---|---|---|---|---|')
    for (const r of res.rows) console.log(`| ${r.route} | ${r.rps.toFixed(0)} | ${r.p99} | ${r.ratio.toFixed(2)} | ≥ ${r.target} |`)
    console.log(`\nserver peak RSS during the HTTP runs: ${res.rss.toFixed(0)} MB`)
  }
} finally {
  await cleanup()
}
