#!/usr/bin/env node
// Retention at scale (figures, not a test): N finished tasks with real analysis folders (F files
// each) in a data directory, one rule ("finished more than 30 days ago, score below 5"), and the
// built `aviary retention` in local mode, as a user runs it: the preview (twice: the second with
// the folders in the page cache), then the run that deletes what the preview lists. Wall time of
// each command (Node's start and the bundle's load included), and what it listed, deleted and freed.
// Usage: node bench/retention.bench.mjs [--no-build] [--quick] [--tasks N] [--files F]
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { args, cleanup, numArg, tempDir, track } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const TASKS = numArg('--tasks', 10_000, 1000)
const FILES = numArg('--files', 20, 5)
const BIN = path.join(root, 'bin/aviary.js')

if (!args.includes('--no-build')) execFileSync(process.execPath, [path.join(root, 'scripts/build-cli.mjs')], { stdio: 'inherit' })

// Killed, interrupted or failing, it leaves nothing behind (bench/cleanup.mjs).
const work = tempDir('aviary-bench-retention-')

/** Runs `aviary retention …` and returns its wall time and its JSON answer. */
function aviary(...argv) {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint()
    const child = track(spawn(process.execPath, [BIN, 'retention', ...argv, '--data', work, '--json'], { stdio: ['ignore', 'pipe', 'inherit'] }), { label: 'stop aviary retention' })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`aviary retention ${argv.join(' ')} exited ${code}`))
      resolve({ ms: Number(process.hrtime.bigint() - t) / 1e6, answer: JSON.parse(out) })
    })
  })
}

/** The schema comes from the service's own migrations: `aviary serve` once, stopped once it listens. */
function startAndStop() {
  return new Promise((resolve, reject) => {
    const s = track(spawn(process.execPath, [BIN, 'serve', '--data', work, '-p', '0'], { stdio: ['ignore', 'ignore', 'pipe'] }), { graceMs: 20_000, label: 'stop aviary serve' })
    let err = ''
    s.stderr.on('data', (d) => {
      err += d
      if (err.includes('analysis API on')) s.kill('SIGTERM')
    })
    s.on('exit', (code) => (err.includes('analysis API on') ? resolve() : reject(new Error(`serve exited ${code}: ${err}`))))
  })
}

function fill() {
  const db = new Database(path.join(work, 'aviary.db'))
  const insert = db.prepare(`INSERT INTO tasks (category, target, clock, added_on, completed_on, status, score)
    VALUES ('url', ?, ?, ?, ?, ?, ?)`)
  const statuses = ['reported', 'reported', 'reported', 'reported', 'reported', 'reported', 'reported', 'failed_analysis', 'pending', 'running']
  const stamp = (days) => {
    const d = new Date(Date.now() - days * 86_400_000)
    const p = (n) => String(n).padStart(2, '0')
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
  }
  const body = Buffer.alloc(4096, 0x61)
  db.transaction(() => {
    for (let i = 1; i <= TASKS; i++) {
      const status = statuses[i % statuses.length]
      // Half a day off whole days: no task sits on the rule's 30-day edge, which it would cross
      // between the preview and the run.
      const t = stamp((i % 90) + 0.5)
      const id = insert.run(`http://site-${i}.example/`, t, t, status === 'pending' ? null : t, status, status === 'reported' ? i % 10 : null).lastInsertRowid
      const dir = path.join(work, 'storage', 'analyses', String(id))
      mkdirSync(path.join(dir, 'files'), { recursive: true })
      for (let f = 0; f < FILES; f++) writeFileSync(path.join(dir, 'files', `f${f}`), body)
    }
  })()
  db.close()
  writeFileSync(path.join(work, 'retention.json'), JSON.stringify({
    schedule: { enabled: false, interval_minutes: 60, enabled_at: null },
    next_id: 2,
    rules: [{ id: 1, name: 'old, low score', enabled: true, age_of: 'completed', keep_samples: true, older_than_days: 30, score_below: 5 }]
  }))
}

try {
  await startAndStop()
  fill()
  execFileSync('sync')
  const cold = await aviary('preview')
  const warm = await aviary('preview')
  const run = await aviary('run')
  const mib = (b) => (b / 1024 / 1024).toFixed(1)
  console.log(`## aviary retention at ${TASKS.toLocaleString('en')} tasks, ${FILES} files of 4 KiB per analysis folder\n`)
  console.log('| step | wall time (ms) | tasks | freed / listed (MiB) |\n|---|---|---|---|')
  console.log(`| preview (first) | ${cold.ms.toFixed(0)} | ${cold.answer.total.tasks} | ${mib(cold.answer.total.bytes)} |`)
  console.log(`| preview (again) | ${warm.ms.toFixed(0)} | ${warm.answer.total.tasks} | ${mib(warm.answer.total.bytes)} |`)
  console.log(`| run | ${run.ms.toFixed(0)} | ${run.answer.deleted.length} deleted, ${run.answer.skipped.length} skipped | ${mib(run.answer.freed_bytes)} |`)
  if (run.answer.deleted.length !== cold.answer.total.tasks) throw new Error('the run did not delete what the preview listed')
} finally {
  await cleanup()
}
