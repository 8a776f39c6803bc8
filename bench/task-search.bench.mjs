#!/usr/bin/env node
// GET /aviary/tasks with 100,000 tasks (figures, not a test): the median and 95th percentile
// latency of the UI task list's typical queries, one request at a time, through the built
// `aviary serve` in its own process. Tasks are inserted by SQL while the service is stopped, so the
// first query also pays for loading the search index (shown apart).
// Usage: node bench/task-search.bench.mjs [--no-build] [--runs N]
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
const RUNS = args.includes('--runs') ? Number(args[args.indexOf('--runs') + 1]) : 50
const TASKS = 100_000
const STATUSES = ['pending', 'running', 'completed', 'reported', 'reported', 'reported', 'reported', 'failed_analysis']

if (!args.includes('--no-build')) execFileSync(process.execPath, [path.join(root, 'scripts/build-cli.mjs')], { stdio: 'inherit' })

const freePort = () => Number(execFileSync(process.execPath, ['-e',
  'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})']).toString())

async function startAviary(dataDir) {
  const port = freePort()
  const child = spawn(process.execPath, [path.join(root, 'bin/aviary.js'), 'serve', '--data', dataDir, '-p', String(port)],
    { stdio: ['ignore', 'ignore', 'inherit'] })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/cuckoo/status`)).ok) break
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100))
  }
  const stop = () => new Promise((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once('exit', resolve)
    child.kill('SIGTERM')
  })
  return { base, stop }
}

function seed(dataDir) {
  const db = new Database(path.join(dataDir, 'aviary.db'))
  const insertSample = db.prepare(`INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
    VALUES (1000, 'PE32 executable', ?, 'ABCDEF01', ?, ?, ?, NULL, '2026-01-01 00:00:00')`)
  const insertTask = db.prepare(`INSERT INTO tasks (category, target, sample_id, package, clock, added_on, completed_on, status, score)
    VALUES (?, ?, ?, 'exe', ?, ?, ?, ?, ?)`)
  let md5 = ''
  let sha256 = ''
  db.transaction(() => {
    for (let i = 1; i <= TASKS; i++) {
      const h = (n) => randomBytes(n).toString('hex')
      const status = STATUSES[i % STATUSES.length]
      const t = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString().replace('T', ' ').slice(0, 19)
      const done = status === 'reported' || status === 'failed_analysis' || status === 'completed'
      if (i % 10 === 0) {
        insertTask.run('url', `http://site-${i}.example.com/landing?id=${i}`, null, t, t, done ? t : null, status, null)
        continue
      }
      const s = { md5: h(16), sha256: h(32) }
      const sampleId = insertSample.run(s.md5, h(20), s.sha256, h(64)).lastInsertRowid
      if (i === 50_001) ({ md5, sha256 } = s)
      insertTask.run('file', `${dataDir}/storage/uploads/${s.sha256}/Invoice_${i}.exe`, sampleId, t, t, done ? t : null, status,
        status === 'reported' ? i % 10 : null)
    }
  })()
  db.close()
  return { md5, sha256 }
}

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]

async function timed(url) {
  const t = process.hrtime.bigint()
  const res = await fetch(url)
  const body = await res.json()
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`)
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, total: body.total }
}

const work = mkdtempSync(path.join(tmpdir(), 'aviary-bench-search-'))
try {
  const first = await startAviary(work) // creates the database and its schema
  await first.stop()
  const { md5, sha256 } = seed(work)
  const svc = await startAviary(work)
  try {
    const load = await timed(`${svc.base}/aviary/tasks?limit=100`)
    const queries = [
      ['first page, no filter', 'limit=100'],
      ['deep page, no filter', 'offset=90000&limit=100'],
      ['one status', 'status=reported&limit=100'],
      ['two statuses, deep page', 'status=pending,failed_analysis&offset=20000&limit=100'],
      ['task id', 'q=73737'],
      ['full md5', `q=${md5}`],
      ['sha256 prefix (8 hex)', `q=${sha256.slice(0, 8)}`],
      ['name, rare', 'q=invoice_4242'],
      ['name, matches 90%', 'q=.exe'],
      ['name, 1 char', 'q=9'],
      ['URL + status', 'q=site-12&status=reported'],
      ['page of 1000', 'limit=1000']
    ]
    console.log(`## GET /aviary/tasks with ${TASKS.toLocaleString('en')} tasks (${RUNS} sequential requests each)\n`)
    console.log(`first request (loads the search index): ${load.ms.toFixed(1)} ms\n`)
    console.log('| query | matches | median (ms) | p95 (ms) |\n|---|---|---|---|')
    // Cuckoo's /tasks/list/100 (served from memory) as the yardstick of HTTP and JSON costs.
    for (const [label, q, url] of [['baseline: /tasks/list/100', '', `${svc.base}/tasks/list/100`],
      ...queries.map(([label, q]) => [label, q, `${svc.base}/aviary/tasks?${q}`])]) {
      for (let i = 0; i < 5; i++) await timed(url) // warm-up
      const times = []
      let total = 0
      for (let i = 0; i < RUNS; i++) ({ ms: times[i], total } = await timed(url))
      console.log(`| ${label}${q ? ` (\`${q.length > 40 ? `${q.slice(0, 40)}…` : q}\`)` : ''} | ${total ?? '-'} | ${percentile(times, 0.5).toFixed(2)} | ${percentile(times, 0.95).toFixed(2)} |`)
    }
  } finally {
    await svc.stop()
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
