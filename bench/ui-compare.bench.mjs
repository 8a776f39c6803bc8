#!/usr/bin/env node
// The Compare page with a 100,000-process report on one side, in Debian's Chromium: time from
// navigation start to the comparison painted, the long tasks (> 50 ms, the main thread blocked)
// while the two reports are read, then while the wheel scrolls the 20,000-row command-line table and
// while "Only differences" is switched on. The same load with the page's Web Worker taken away
// (the digest then runs on the page's thread) shows what the worker is for. The reports are
// written straight into a data directory served by the built `aviary serve`: what is measured is
// the page, not processing. Target (issue 17): the page never freezes (no long task of a second).
// Usage: node bench/ui-compare.bench.mjs [--no-build] [--processes 100000] [--wheels 60] [--quick (2,000 processes, 10 notches)]
// Interrupted or failing, it closes the browser, stops the service and removes its folder.
// The functions passed to page.evaluate and addInitScript run in the browser:
/* global window */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { args, cleanup, numArg, quick, tempDir } from './cleanup.mjs'
import { launchChromium, startAviary } from './ui-kit.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const PROCESSES = numArg('--processes', 100_000, 2_000)
const WHEELS = numArg('--wheels', 60, 10)
const work = tempDir('aviary-ui-compare-bench-')
const log = (m) => process.stderr.write(`ui-compare: ${m}\n`)

/** A report of `n` processes under one root (in the tree and in behavior.processes), with their network and files. */
function report(n, seed) {
  const node = (pid, ppid, name, cmd) => ({ pid, ppid, process_name: name, command_line: cmd, first_seen: 1767225600 + pid / 1e4, track: true, children: [] })
  const root = node(1000, 1, 'forker', '/tmp/forker --spawn')
  const flat = [root]
  for (let i = 0; i < n - 1; i++) {
    const p = node(1001 + i, 1000, `worker${i % 50}`, `/tmp/worker --task ${seed}-${i} --out /tmp/out/${i}.dat`)
    root.children.push(p)
    flat.push({ ...p, children: undefined, calls: [] })
  }
  const hosts = Array.from({ length: 2000 }, (_, i) => `45.${seed}.${i >> 8}.${i & 255}`)
  return {
    info: { id: seed, score: 3 + seed, category: 'file', package: 'generic', platform: 'linux', version: '2.0.7' },
    target: { category: 'file', file: { name: `forker-${seed}`, size: 1000 + seed, sha256: String(seed).repeat(64).slice(0, 64), type: 'ELF 64-bit LSB pie executable' } },
    signatures: [{ name: 'starts_shell', description: 'Starts a command shell', severity: 2, ttp: { T1059: { short: 'Command and Scripting Interpreter', long: '' } }, marks: [], markcount: 0 }],
    behavior: { processtree: [root], processes: flat, summary: {} },
    network: { hosts, domains: hosts.slice(0, 500).map((ip, i) => ({ domain: `h${i}.s${seed}.example`, ip })), dns: [], http: [], tcp: hosts.map((dst) => ({ src: '10.0.0.2', sport: 40000, dst, dport: 443 })), udp: [] },
    dropped: Array.from({ length: 500 }, (_, i) => ({ name: `f${i}`, sha256: `${seed}${i}`.padStart(64, '0'), filepath: `/tmp/out/${i}.dat`, size: i, type: 'data' })),
    static: { elf: { file_header: { class: 'ELF64', machine: 'Advanced Micro Devices X86-64' }, libraries: ['libc.so.6'] } },
    strings: Array.from({ length: 2048 }, (_, i) => `string ${seed} ${i}`)
  }
}

// Runs in the page before its scripts: every long task; with `noWorker`, no Worker at all.
const INSTRUMENT = (noWorker) => {
  window.__bench = { longTasks: [] }
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__bench.longTasks.push({ start: e.startTime, duration: e.duration })
  }).observe({ type: 'longtask', buffered: true })
  if (noWorker) delete window.Worker
}

const longest = (tasks) => tasks.reduce((m, t) => Math.max(m, t.duration), 0)
const summarize = (tasks) => `${tasks.length} long task${tasks.length === 1 ? '' : 's'}, longest ${Math.round(longest(tasks))} ms, ${Math.round(tasks.reduce((s, t) => s + t.duration, 0))} ms in all`

async function load(browser, url, noWorker) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
  page.on('pageerror', (err) => log(`page error: ${err.message}`))
  await page.addInitScript(INSTRUMENT, noWorker)
  await page.goto(url)
  // At the quick size a page that has not drawn in a minute will not (the pass's own limit is longer).
  await page.getByTestId('score-compare').waitFor({ timeout: quick ? 60_000 : 300_000 })
  const paintedMs = await page.evaluate(() => new Promise((r) => window.requestAnimationFrame(() => r(performance.now()))))
  const tasks = await page.evaluate(() => window.__bench.longTasks.splice(0))
  return { page, paintedMs, tasks }
}

async function main() {
  if (!args.includes('--no-build') || !existsSync(path.join(root, 'out/renderer/index.html'))) {
    log('building the UI (electron-vite build) and the CLI')
    execFileSync(process.execPath, [path.join(root, 'scripts/build-cli.mjs')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
    execFileSync('npx', ['electron-vite', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
  }
  const dataDir = path.join(work, 'data')
  let svc = await startAviary(dataDir) // creates the database and its schema
  await svc.stop()
  const db = new Database(path.join(dataDir, 'aviary.db'))
  for (const [id, n] of [[1, PROCESSES], [2, 50]]) {
    const dir = path.join(dataDir, 'storage', 'analyses', String(id), 'reports')
    mkdirSync(dir, { recursive: true })
    writeFileSync(path.join(dir, 'report.json'), JSON.stringify(report(n, id)))
    log(`task ${id}: ${n} processes, report.json ${(statSync(path.join(dir, 'report.json')).size / 1e6).toFixed(1)} MB`)
    db.prepare(`INSERT INTO tasks (id, category, target, package, clock, added_on, started_on, completed_on, status)
      VALUES (?, 'file', '/tmp/forker', 'generic', '2026-01-01 00:00:00', '2026-01-01 00:00:00', '2026-01-01 00:00:00', '2026-01-01 00:01:00', 'reported')`).run(id)
  }
  db.close()

  svc = await startAviary(dataDir)
  try {
    const summary = await fetch(`${svc.base}/tasks/summary/1`)
    log(`/tasks/summary/1: ${((await summary.arrayBuffer()).byteLength / 1e6).toFixed(1)} MB`)
    const url = `${svc.base}/#/compare?a=local:1&b=local:2`
    const browser = await launchChromium(work)
    // Chromium's own temp files go into the bench's folder (a signal during its start leaves none in
    // /tmp), and bench/cleanup.mjs closes it on a signal: Playwright's own SIGINT handler would
    // exit the process (130) before the service and the folder are cleaned up.
    // Warm-up (HTTP cache, the service's report index, JIT): the measured loads come after it.
    await (await load(browser, url, false)).page.close()

    const results = {}
    for (const noWorker of [true, false]) {
      const { page, paintedMs, tasks } = await load(browser, url, noWorker)
      const label = noWorker ? 'without the worker' : 'with the worker'
      log(`${label}: comparison painted ${Math.round(paintedMs)} ms after navigation start; ${summarize(tasks)}`)
      results[label] = { paintedMs: Math.round(paintedMs), longTasks: tasks.length, longestMs: Math.round(longest(tasks)) }
      if (noWorker) { await page.close(); continue }

      const rows = page.getByRole('region', { name: 'By command line' }).locator('tbody tr')
      const box = page.getByLabel(/^command lines \([\d,]+ rows?, scrollable\)$/)
      await box.hover()
      for (let i = 0; i < WHEELS; i++) {
        await page.mouse.wheel(0, 480)
        await page.evaluate(() => new Promise((r) => window.requestAnimationFrame(() => r())))
      }
      const scrolled = await page.evaluate(() => window.__bench.longTasks.splice(0))
      const domRows = await rows.count()
      log(`${WHEELS} wheel notches over the command lines: ${summarize(scrolled)}; ${domRows} rows in the DOM`)
      results.scroll = { wheels: WHEELS, longTasks: scrolled.length, longestMs: Math.round(longest(scrolled)), domRows }

      const t0 = await page.evaluate(() => performance.now())
      // A click, not check(): the box follows the URL, which the router updates in a transition.
      await page.getByRole('checkbox', { name: 'Only differences' }).click()
      await page.waitForURL(/diff=1/)
      const t1 = await page.evaluate(() => new Promise((r) => window.requestAnimationFrame(() => r(performance.now()))))
      const toggled = await page.evaluate(() => window.__bench.longTasks.splice(0))
      log(`"Only differences" on: drawn in ${Math.round(t1 - t0)} ms; ${summarize(toggled)}`)
      results.onlyDiff = { ms: Math.round(t1 - t0), longTasks: toggled.length, longestMs: Math.round(longest(toggled)) }
      await page.close()
    }
    console.log(JSON.stringify({ processes: PROCESSES, ...results }))
  } finally {
    await cleanup()
  }
}

try {
  await main()
} finally {
  await cleanup()
}
