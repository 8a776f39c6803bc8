#!/usr/bin/env node
// The calls view at a million calls, in Debian's Chromium: time from navigation start to the first
// call rows painted on a task's Behavior tab, the same from a click on the tab, and the long tasks
// (> 50 ms, the main thread blocked) while the mouse wheel scrolls through thousands of calls and
// the scroll bar is dragged to the middle. Targets (issue 16): first rows < 1 s, no long task.
// The task is real: an strace log of CALLS system calls (one busy process, a forked child) goes
// through the core's own processing (the behaviour module with calls_max = CALLS, so every call is
// kept in the calls store, and the streamed report writer); the built `aviary serve` then pages
// them through GET /aviary/tasks/1/calls/<pid>.
// Usage: node bench/ui-calls.bench.mjs [--no-build] [--calls 1000000] [--wheels 150] [--profile] [--quick (20,000 calls, 20 notches)]
//   --profile prints the functions with the most CPU time during the scroll (to stderr)
// Interrupted or failing, it closes the browser, stops the service and removes its folder.
// The functions passed to page.evaluate and addInitScript run in the browser:
/* global window, document, MutationObserver, requestAnimationFrame */
import { execFileSync } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { build } from 'esbuild'
import { args, cleanup, numArg, tempDir } from './cleanup.mjs'
import { launchChromium, printProfile, startAviary } from './ui-kit.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const CALLS = numArg('--calls', 1_000_000, 20_000)
const WHEELS = numArg('--wheels', 150, 20)
const WHEEL_PX = 480
const PID = 4242
const rendererDir = path.join(root, 'out/renderer')
const work = tempDir('aviary-ui-calls-bench-')

const log = (m) => process.stderr.write(`ui-calls: ${m}\n`)

/** Call i of the busy process, as the analyzer's strace (-f -ttt -yy) prints it. */
function line(i) {
  const t = (1_767_225_600 + i / 20_000).toFixed(6)
  switch (i % 8) {
    case 0: return `${PID} ${t} openat(AT_FDCWD</tmp/work>, "/usr/lib/x86_64-linux-gnu/lib${i % 300}.so.6", O_RDONLY|O_CLOEXEC) = 3</usr/lib/x86_64-linux-gnu/lib${i % 300}.so.6>`
    case 1: return `${PID} ${t} newfstatat(AT_FDCWD</tmp/work>, "/etc/conf.d/f${i % 3000}", 0x7ffd5e1c2a10, 0) = -1 ENOENT (No such file or directory)`
    case 2: return `${PID} ${t} connect(3<TCP:[10.0.0.2:${40000 + (i % 20000)}->203.0.113.${i % 250}:443]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("203.0.113.${i % 250}")}, 16) = -1 EINPROGRESS (Operation now in progress)`
    case 3: return `${PID} ${t} openat(AT_FDCWD</tmp/work>, "out/${i}.dat", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 5</tmp/work/out/${i}.dat>`
    case 4: return `${PID} ${t} unlinkat(AT_FDCWD</tmp/work>, "out/${i - 1}.dat", 0) = 0`
    case 5: return `${PID} ${t} access("/etc/ld.so.preload", R_OK) = -1 ENOENT (No such file or directory)`
    case 6: return `${PID} ${t} getdents64(3</tmp/work/out>, 0x55d0a2c0 /* 12 entries */, 32768) = 384`
    default: return `${PID} ${t} kill(${PID + 1}, SIGTERM) = -1 ESRCH (No such process)`
  }
}

function writeStraceLog(file) {
  const fd = openSync(file, 'w')
  writeSync(fd, `${PID} 1767225599.000000 execve("/tmp/work/busy", ["/tmp/work/busy", "--calls"], 0x7ffd /* 20 vars */) = 0\n`)
  writeSync(fd, `${PID} 1767225599.000100 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f00) = ${PID + 1}\n`)
  writeSync(fd, `${PID + 1} 1767225599.000200 execve("/bin/sleep", ["sleep", "1"], 0x7ffd /* 20 vars */) = 0\n`)
  let chunk = []
  for (let i = 3; i < CALLS + 1; i++) {
    chunk.push(line(i))
    if (chunk.length === 10_000) { writeSync(fd, `${chunk.join('\n')}\n`); chunk = [] }
  }
  if (chunk.length > 0) writeSync(fd, `${chunk.join('\n')}\n`)
  closeSync(fd)
}

/** The core's processing of the behaviour and the report, bundled from source (as bench/calls.bench.mjs does). */
async function processTask(analysis) {
  const entry = path.join(work, 'process.ts')
  const out = path.join(work, 'process.cjs')
  writeFileSync(entry, `
import path from 'node:path'
import { analyzeBehaviorDetailed } from ${JSON.stringify(path.join(root, 'src/core/processing/behavior/index.ts'))}
import { writeJsonReport } from ${JSON.stringify(path.join(root, 'src/core/reporting/json-writer.ts'))}
async function main(): Promise<void> {
  const dir = process.argv[2] as string
  const b = await analyzeBehaviorDetailed(dir, { maxCalls: Number(process.argv[3]) })
  await writeJsonReport(path.join(dir, 'reports', 'report.json'), {
    info: { id: 1, category: 'file', package: 'generic', platform: 'linux', score: 0 },
    target: { category: 'file', file: { name: 'busy', size: 1 } },
    behavior: b.behavior, signatures: []
  })
  console.log(JSON.stringify({ kept: b.calls?.processes.map((p) => [p.pid, p.calls]) }))
}
void main()
`)
  await build({ entryPoints: [entry], outfile: out, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'error' })
  return JSON.parse(execFileSync(process.execPath, ['--max-semi-space-size=2', out, analysis, String(CALLS + 10)], { encoding: 'utf8', maxBuffer: 1 << 20 }).trim())
}

// Runs in the page before its scripts: when the first call row is painted (the frame after it
// enters the DOM), and every long task.
const INSTRUMENT = () => {
  const w = window
  w.__bench = { firstRow: null, longTasks: [] }
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) w.__bench.longTasks.push({ start: e.startTime, duration: e.duration })
  }).observe({ type: 'longtask', buffered: true })
  const seen = () => document.querySelector('[role="grid"][aria-label="Calls"] [role="row"][data-call]')
  const mo = new MutationObserver(() => {
    if (!seen()) return
    mo.disconnect()
    requestAnimationFrame(() => setTimeout(() => { w.__bench.firstRow = performance.now() }, 0))
  })
  document.addEventListener('DOMContentLoaded', () => mo.observe(document.body, { childList: true, subtree: true }))
}

const callRows = '[role="grid"][aria-label="Calls"] [role="row"]'

async function main() {
  if (!args.includes('--no-build') || !existsSync(path.join(rendererDir, 'index.html'))) {
    log('building the UI (electron-vite build) and the CLI')
    execFileSync(process.execPath, [path.join(root, 'scripts/build-cli.mjs')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
    execFileSync('npx', ['electron-vite', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
  }
  const dataDir = path.join(work, 'data')
  let svc = await startAviary(dataDir, ['--max-semi-space-size=2']) // creates the database and its schema
  await svc.stop()
  const analysis = path.join(dataDir, 'storage', 'analyses', '1')
  mkdirSync(path.join(analysis, 'logs'), { recursive: true })
  mkdirSync(path.join(analysis, 'reports'), { recursive: true })
  let t = performance.now()
  writeStraceLog(path.join(analysis, 'logs', 'strace.log'))
  log(`strace log of ${CALLS} calls written in ${Math.round(performance.now() - t)} ms`)
  t = performance.now()
  const processed = await processTask(analysis)
  log(`processed in ${Math.round(performance.now() - t)} ms: ${JSON.stringify(processed.kept)}, report.json ${Math.round(statSync(path.join(analysis, 'reports', 'report.json')).size / 1e6)} MB`)
  const db = new Database(path.join(dataDir, 'aviary.db'))
  db.prepare(`INSERT INTO tasks (id, category, target, package, clock, added_on, started_on, completed_on, status)
    VALUES (1, 'file', '/tmp/work/busy', 'generic', '2026-01-01 00:00:00', '2026-01-01 00:00:00', '2026-01-01 00:00:00', '2026-01-01 00:01:00', 'reported')`).run()
  db.close()

  svc = await startAviary(dataDir, ['--max-semi-space-size=2'])
  try {
    const listing = await (await fetch(`${svc.base}/aviary/tasks/1/calls`)).json()
    const busy = listing.processes.find((p) => p.pid === PID)
    if (!busy || busy.calls < CALLS) throw new Error(`the service lists ${JSON.stringify(listing).slice(0, 300)}`)
    const url = `${svc.base}/#/tasks/1?tab=behavior`
    const browser = await launchChromium(work)
    // Chromium's own temp files go into the bench's folder (a signal during its start leaves none in
    // /tmp), and bench/cleanup.mjs closes it on a signal: Playwright's own SIGINT handler would
    // exit the process (130) before the service and the folder are cleaned up.
    // Warm-up (HTTP cache, the service's report index, JIT): the measured load is the second one.
    const warm = await browser.newPage({ viewport: { width: 1400, height: 900 } })
    await warm.goto(url)
    await warm.waitForSelector(`${callRows}[data-call]`, { timeout: 120_000 })
    await warm.close()

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
    page.on('pageerror', (err) => log(`page error: ${err.message}`))
    await page.addInitScript(INSTRUMENT)
    await page.goto(url)
    await page.waitForFunction(() => window.__bench.firstRow !== null, null, { timeout: 60_000 })
    const firstRowMs = await page.evaluate(() => window.__bench.firstRow)
    const loading = await page.evaluate((until) => performance.getEntriesByType('resource').filter((r) => r.startTime < until)
      .map((r) => `${new URL(r.name).pathname.slice(0, 48)}${new URL(r.name).search.slice(0, 24)} ${Math.round(r.startTime)}→${Math.round(r.responseEnd)}`), firstRowMs)
    const grid = page.locator('[role="grid"][aria-label="Calls"]')
    const rowCount = Number(await grid.getAttribute('aria-rowcount'))

    // From a click on the tab (the page and the listing already loaded once).
    await page.getByRole('tab', { name: 'Summary' }).click()
    await page.waitForSelector('[role="grid"][aria-label="Calls"]', { state: 'detached' })
    const tabMs = await page.evaluate(() => new Promise((resolve) => {
      const t0 = performance.now()
      const mo = new MutationObserver(() => {
        if (!document.querySelector('[role="grid"][aria-label="Calls"] [role="row"][data-call]')) return
        mo.disconnect()
        requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t0), 0))
      })
      mo.observe(document.body, { childList: true, subtree: true })
      document.querySelector('[role="tab"][data-tab="behavior"]').click()
    }))
    await grid.waitFor()

    // Scroll: the wheel over the grid, a notch every frame or two, as a fast trackpad does.
    await grid.scrollIntoViewIfNeeded()
    const box = await grid.boundingBox()
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2)
    await page.evaluate(() => { window.__bench.longTasks = [] })
    const cdp = args.includes('--profile') ? await page.context().newCDPSession(page) : null
    if (cdp) { await cdp.send('Profiler.enable'); await cdp.send('Profiler.start') }
    const scrollStart = performance.now()
    for (let i = 0; i < WHEELS; i++) {
      await page.mouse.wheel(0, WHEEL_PX)
      await page.waitForTimeout(16)
    }
    const allLoaded = () => {
      const rows = [...document.querySelectorAll('[role="grid"][aria-label="Calls"] [role="row"]')]
      return rows.length > 0 && rows.every((r) => r.hasAttribute('data-call'))
    }
    await page.waitForFunction(allLoaded, null, { timeout: 10_000 })
    const wheelMs = performance.now() - scrollStart
    const afterWheel = await page.evaluate(() => {
      const rows = [...document.querySelectorAll('[role="grid"][aria-label="Calls"] [role="row"][data-call]')].map((r) => Number(r.getAttribute('data-call')))
      return { firstRowInView: Math.min(...rows), rowsInDom: rows.length }
    })
    // The scroll bar dragged to the middle: the rows there, fetched and drawn.
    const jumpStart = performance.now()
    await page.evaluate(() => {
      const g = document.querySelector('[role="grid"][aria-label="Calls"]')
      g.scrollTop = (g.scrollHeight - g.clientHeight) / 2
    })
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[role="grid"][aria-label="Calls"] [role="row"][data-call]')].map((r) => Number(r.getAttribute('data-call')))
      const total = Number(document.querySelector('[role="grid"][aria-label="Calls"]').getAttribute('aria-rowcount'))
      return rows.some((i) => Math.abs(i - total / 2) < 100)
    }, null, { timeout: 10_000 })
    await page.waitForFunction(allLoaded, null, { timeout: 10_000 })
    const jumpMs = performance.now() - jumpStart
    if (cdp) printProfile((await cdp.send('Profiler.stop')).profile, log)
    const scrolled = await page.evaluate(() => ({ longTasks: window.__bench.longTasks, rowsInDom: document.querySelectorAll('[role="grid"][aria-label="Calls"] [role="row"]').length }))

    // A category filter answered by the service over the million calls (the rows for it drawn).
    await page.evaluate(() => { window.__bench.longTasks = [] })
    const filterStart = performance.now()
    await page.getByRole('group', { name: 'Categories' }).getByRole('button', { name: /^network/ }).click()
    await page.waitForFunction((n) => document.querySelector('[role="grid"][aria-label="Calls"]').getAttribute('aria-rowcount') !== String(n), rowCount, { timeout: 30_000 })
    await page.waitForFunction(allLoaded, null, { timeout: 10_000 })
    const filterMs = performance.now() - filterStart
    const filtered = Number(await grid.getAttribute('aria-rowcount'))
    const filterLongTasks = await page.evaluate(() => window.__bench.longTasks)

    const longest = scrolled.longTasks.reduce((m, x) => Math.max(m, x.duration), 0)
    console.log(JSON.stringify({
      calls: CALLS,
      gridRowCount: rowCount,
      firstRowsPaintedMs: Math.round(firstRowMs),
      firstPaintRequests: loading,
      behaviorTabClickToRowsMs: Math.round(tabMs),
      wheel: { notches: WHEELS, px: WHEEL_PX, wallMs: Math.round(wheelMs), firstRowInView: afterWheel.firstRowInView, rowsInDom: afterWheel.rowsInDom },
      jumpToMiddleMs: Math.round(jumpMs),
      rowsInDomAfterScroll: scrolled.rowsInDom,
      longestTaskWhileScrollingMs: Math.round(longest),
      longTasksOver50ms: scrolled.longTasks.filter((x) => x.duration > 50).length,
      networkFilter: { rows: filtered, wallMs: Math.round(filterMs), longestTaskMs: Math.round(filterLongTasks.reduce((m, x) => Math.max(m, x.duration), 0)) },
      targets: { firstRowsUnder1s: firstRowMs < 1000, noLongTaskOver50msWhileScrolling: longest <= 50 }
    }, null, 2))
  } finally {
    await cleanup()
  }
}

try {
  await main()
} finally {
  await cleanup()
}
