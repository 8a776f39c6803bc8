#!/usr/bin/env node
// GET /aviary/tasks at 100,000 tasks with ~45 search terms each (figures, not a test): the median,
// 95th percentile and slowest of each kind of query the task list sends, one request at a time,
// through the built `aviary serve` in its own process. Target: ≤ 100 ms per query.
//
// The data: tasks inserted by SQL while the service is stopped (a file task every 9 of 10, with its
// own sample; a URL task the 10th), and for each task the terms processing writes
// (search/report-terms.ts), written here by the same rules: 6 domains with their parent domains (2
// of the task's own, 4 from a pool of 2,000 where a few are in nearly every run, as OCSP and update
// hosts are), 6 addresses (a resolver in every task), 4 URLs with and without their query, 5
// signature names with their starts at '_' (from 120, a few common), 2 dropped files' md5, sha1 and
// sha256. Tags, machines and scores as a real fleet has them.
// Usage: node bench/search.bench.mjs [--no-build] [--runs N] [--quick (10,000 tasks, 5 runs)] [--keep (the data folder)]
// Interrupted or failing, it stops the service and removes its folder (bench/cleanup.mjs).
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { args, cleanup, numArg, quick, stopChild, tempDir, track } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const RUNS = numArg('--runs', 40, 5)
const TASKS = quick ? 10_000 : 100_000
const STATUSES = ['reported', 'reported', 'reported', 'reported', 'reported', 'reported', 'pending', 'running', 'failed_analysis', 'reported']

if (!args.includes('--no-build')) execFileSync(process.execPath, [path.join(root, 'scripts/build-cli.mjs')], { stdio: 'inherit' })

// --keep: the data folder stays for a look with sqlite3 (and is then not removed on a signal either).
const work = args.includes('--keep') ? mkdtempSync(path.join(tmpdir(), 'aviary-search-kept-')) : tempDir('aviary-bench-search-')

const freePort = () => Number(execFileSync(process.execPath, ['-e',
  'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})']).toString())

async function startAviary(dataDir) {
  const port = freePort()
  const child = track(spawn(process.execPath, [path.join(root, 'bin/aviary.js'), 'serve', '--data', dataDir, '-p', String(port)],
    { stdio: ['ignore', 'ignore', 'inherit'] }), { graceMs: 20_000, label: 'stop aviary serve' })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/cuckoo/status`)).ok) break
    } catch { /* not yet */ }
    if (i >= 600 || child.exitCode !== null) throw new Error('aviary serve did not answer')
    await new Promise((r) => setTimeout(r, 100))
  }
  return { base, stop: () => stopChild(child, { graceMs: 20_000 }) }
}

// A fixed pseudo-random sequence: the same data every run.
let seed = 1234567
const rnd = (n) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n }
const hex = (s) => createHash('sha256').update(s).digest('hex')
const parents = (d) => { const l = d.split('.'); return l.map((_, k) => l.slice(k).join('.')) }
const starts = (s) => { const out = []; for (let at = s.indexOf('_'); at > 0; at = s.indexOf('_', at + 1)) out.push(s.slice(0, at)); out.push(s); return out }
const SIG_STEMS = ['network', 'persistence', 'injection', 'antivm', 'antidebug', 'ransomware', 'stealth', 'infostealer']
const SIGS = Array.from({ length: 120 }, (_, i) => `${SIG_STEMS[i % 8]}_${['http', 'autorun', 'process', 'disk', 'timing', 'files', 'hidden', 'browser'][(i >> 3) % 8]}_${i}`)
const COMMON = ['ocsp.digicert.com', 'ctldl.windowsupdate.com', 'settings-win.data.microsoft.com', 'www.google.com',
  ...Array.from({ length: 1996 }, (_, i) => `cdn${i}.site-${i % 97}.net`)]
/** Popular hosts first: the first two are in ~90% of runs, the next few in many. */
const commonDomain = () => { const r = rnd(1000); return r < 450 ? COMMON[r % 2] : r < 600 ? COMMON[2 + (r % 5)] : COMMON[7 + rnd(1993)] }

function seedData(dataDir) {
  const db = new Database(path.join(dataDir, 'aviary.db'))
  db.pragma('journal_mode = WAL')
  const insertSample = db.prepare(`INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
    VALUES (1000, 'PE32 executable', ?, 'ABCDEF01', ?, ?, ?, NULL, '2026-01-01 00:00:00')`)
  const insertTask = db.prepare(`INSERT INTO tasks (category, target, sample_id, package, machine, tags, clock, added_on, completed_on, status, score)
    VALUES (?, ?, ?, 'exe', ?, ?, ?, ?, ?, ?, ?)`)
  const insertGuest = db.prepare(`INSERT INTO guests (task_id, name, label, manager, status, started_on) VALUES (?, ?, ?, 'kvm', 'stopped', ?)`)
  const insertTerm = db.prepare('INSERT OR IGNORE INTO task_terms (task_id, kind, term) VALUES (?, ?, ?)')
  const known = {}
  let terms = 0
  db.transaction(() => {
    for (let i = 1; i <= TASKS; i++) {
      const status = STATUSES[i % STATUSES.length]
      const t = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString().replace('T', ' ').slice(0, 19)
      const done = status === 'reported' || status === 'failed_analysis'
      const tags = JSON.stringify(i % 5 === 0 ? ['win10', 'x64'] : i % 5 === 1 ? ['win7'] : [])
      const score = status === 'reported' ? rnd(101) / 10 : null
      let id
      if (i % 10 === 0) {
        id = insertTask.run('url', `http://site-${i}.example.com/landing?id=${i}`, null, null, tags, t, t, done ? t : null, status, score).lastInsertRowid
      } else {
        const h = hex(`sample ${i}`)
        const sampleId = insertSample.run(h.slice(0, 32), h.slice(0, 40), h, (h + h).slice(0, 128)).lastInsertRowid
        id = insertTask.run('file', `${dataDir}/storage/uploads/${h}/Invoice_${i}.exe`, sampleId, i % 50 === 0 ? 'win7-x64-3' : null, tags, t, t, done ? t : null, status, score).lastInsertRowid
        if (i === Math.floor(TASKS / 2) + 1) known.sample = h
      }
      if (status !== 'pending') insertGuest.run(id, `win10-${i % 12}`, `win10-${i % 12}`, t)
      const add = (kind, term) => { terms += insertTerm.run(id, kind, term).changes }
      const own = [`c2-${i}.evil${i % 500}.biz`, `dl${i}.cdn-${i % 3000}.top`]
      for (const d of [...own, commonDomain(), commonDomain(), commonDomain(), commonDomain()]) for (const p of parents(d)) add('domain', p)
      add('ip', '8.8.8.8')
      add('ip', `203.0.${i % 250}.${(i >> 8) % 250}`)
      for (let k = 0; k < 4; k++) add('ip', `${1 + rnd(222)}.${rnd(256)}.${rnd(256)}.${rnd(256)}`)
      for (let k = 0; k < 4; k++) {
        const u = k === 0 ? `${own[0]}/gate.php` : `${commonDomain()}/path/${rnd(100_000)}.js`
        add('url', `${u}?id=${i}`)
        add('url', u)
      }
      for (let k = 0; k < 5; k++) for (const s of starts(SIGS[rnd(1000) < 500 ? rnd(8) : rnd(120)])) add('sig', s)
      for (let k = 0; k < 2; k++) {
        const h = hex(`dropped ${i} ${k}`)
        add('hash', h.slice(0, 32)); add('hash', h.slice(0, 40)); add('hash', h)
        if (i === Math.floor(TASKS / 3) && k === 0) known.dropped = h
      }
    }
  })()
  db.close()
  return { ...known, terms }
}

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]

async function timed(url) {
  const t = process.hrtime.bigint()
  const res = await fetch(url)
  const body = await res.json()
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`)
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, total: body.total }
}

try {
  const first = await startAviary(work) // creates the database and its schema
  await first.stop()
  const t0 = Date.now()
  const known = seedData(work)
  console.error(`seeded ${TASKS} tasks and ${known.terms} terms in ${((Date.now() - t0) / 1000).toFixed(0)} s`)
  const svc = await startAviary(work)
  try {
    const cold = await timed(`${svc.base}/aviary/tasks?q=${encodeURIComponent('domain:ocsp.digicert.com')}&sort=score&limit=100`)
    const mid = Math.floor(TASKS / 2)
    const queries = [
      ['first page, no filter', 'limit=100'],
      ['deep page, no filter', `offset=${TASKS - 10_000}&limit=100`],
      ['one status', 'status=reported&limit=100'],
      ['two statuses, deep page', `status=pending,failed_analysis&offset=${TASKS / 10}&limit=100`],
      ['by score', 'sort=score&limit=100'],
      ['by score, reported, deep', `sort=score&status=reported&offset=${TASKS / 4}&limit=100`],
      ['by score, lowest first', 'sort=score&order=asc&limit=100'],
      ['by time added', 'sort=added&limit=100'],
      ['category url', 'category=url&limit=100'],
      ['category file, by score', 'category=file&sort=score&limit=100'],
      ['task id', `q=${mid + 37}`],
      ['sample md5', `q=${known.sample.slice(0, 32)}`],
      ['sample sha256 prefix', `q=hash:${known.sample.slice(0, 8)}`],
      ['name, rare', `q=invoice_${mid - 58}`],
      ['name, 90% of tasks', 'q=.exe'],
      ['name, 1 character', 'q=9'],
      ['domain, one task', `q=domain:c2-${mid}.evil${mid % 500}.biz`],
      ['domain parent, 0.2%', `q=domain:evil${mid % 500}.biz`],
      ['domain, ~70% of tasks', 'q=domain:ocsp.digicert.com'],
      ['domain, ~70%, by score', 'q=domain:ocsp.digicert.com&sort=score'],
      ['domain parent com, ~95%', 'q=domain:com&status=reported&sort=score'],
      ['ip, every task, by score', 'q=ip:8.8.8.8&sort=score'],
      ['ip, a few tasks', `q=ip:203.0.${mid % 250}.${(mid >> 8) % 250}`],
      ['url', `q=url:http://c2-${mid}.evil${mid % 500}.biz/gate.php`],
      ['sig, common', 'q=sig:antivm_http_3'],
      ['sig start, ~45% of tasks', 'q=sig:network&sort=score'],
      ['dropped sha256', `q=hash:${known.dropped}`],
      ['dropped md5 prefix', `q=hash:${known.dropped.slice(0, 10)}`],
      ['tag', 'q=tag:win7'],
      ['machine (ran on)', 'q=machine:win10-3'],
      ['plain: domain of ~70%', 'q=ocsp.digicert.com'],
      ['plain: rare domain', `q=c2-${mid}.evil${mid % 500}.biz`],
      ['plain: signature', 'q=persistence_autorun_9'],
      ['two terms', 'q=domain:ocsp.digicert.com sig:network&status=reported'],
      ['plain + status + category + score', 'q=8.8.8.8&status=reported&category=file&sort=score'],
      ['page of 1000, domain ~70%', 'q=domain:ocsp.digicert.com&limit=1000']
    ]
    console.log(`## GET /aviary/tasks with ${TASKS.toLocaleString('en')} tasks, ${known.terms.toLocaleString('en')} search terms (${RUNS} sequential requests each)\n`)
    console.log(`first search after start (SQLite's cache cold): ${cold.ms.toFixed(1)} ms\n`)
    console.log('| query | matches | median (ms) | p95 (ms) | max (ms) |\n|---|---|---|---|---|')
    let worst = 0
    for (const [label, q, url] of [['baseline: /tasks/list/100', '', `${svc.base}/tasks/list/100`],
      ...queries.map(([label, q]) => [label, q, `${svc.base}/aviary/tasks?${q.replace(/ /g, '%20')}`])]) {
      for (let i = 0; i < 3; i++) await timed(url) // warm-up
      const times = []
      let total = 0
      for (let i = 0; i < RUNS; i++) ({ ms: times[i], total } = await timed(url))
      if (q) worst = Math.max(worst, percentile(times, 0.95))
      console.log(`| ${label}${q ? ` (\`${q.length > 48 ? `${q.slice(0, 48)}…` : q}\`)` : ''} | ${total ?? '-'} | ${percentile(times, 0.5).toFixed(1)} | ${percentile(times, 0.95).toFixed(1)} | ${Math.max(...times).toFixed(1)} |`)
    }
    console.log(`\nslowest p95 of a search: ${worst.toFixed(1)} ms (target ≤ 100 ms)`)
  } finally {
    await svc.stop()
  }
} finally {
  if (args.includes('--keep')) console.error(`data kept in ${work}`)
  await cleanup()
}
