#!/usr/bin/env node
// The Tasks page at 100,000 tasks, in Debian's Chromium: time from navigation start to the first
// task rows painted, and the long tasks (> 50 ms, the main thread blocked) while the mouse wheel
// scrolls through several thousand rows. Targets (issue 8): first rows < 1 s, no long task.
// The service is the built `aviary serve` with a fresh data dir seeded by SQL before it starts.
// Usage: node bench/ui-tasks.bench.mjs [--no-build] [--rows 5000] [--profile] [--quick (5,000 tasks, 500 rows)]
//   --profile prints the functions with the most CPU time during the scroll (to stderr)
// Interrupted or failing, it closes the browser, stops the service and removes its folder.
// The functions passed to page.evaluate and addInitScript run in the browser:
/* global window, document, MutationObserver, requestAnimationFrame */
import { execFileSync } from 'node:child_process'
import { createReadStream, existsSync, statSync } from 'node:fs'
import { createServer, request as httpRequest } from 'node:http'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { args, cleanup, numArg, onCleanup, quick, tempDir } from './cleanup.mjs'
import { launchChromium, printProfile, startAviary, freePort } from './ui-kit.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const TASKS = quick ? 5_000 : 100_000
const ROWS_TO_SCROLL = numArg('--rows', 5_000, 500)
const ROW_PX = 32
const WHEEL_PX = 480
const rendererDir = path.join(root, 'out/renderer')

const log = (m) => process.stderr.write(`ui-tasks: ${m}\n`)

// One transaction of prepared inserts: 100,000 tasks (one in ten a URL) in a couple of seconds.
function seedTasks(dataDir) {
  const db = new Database(path.join(dataDir, 'aviary.db'))
  const insertSample = db.prepare(`INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
    VALUES (?, 'PE32 executable (GUI) Intel 80386, for MS Windows', ?, 'ABCDEF01', ?, ?, ?, NULL, '2026-01-01 00:00:00')`)
  const insertTask = db.prepare(`INSERT INTO tasks (category, target, sample_id, package, timeout, priority, machine, clock, added_on,
      started_on, completed_on, status) VALUES (?, ?, ?, 'exe', 120, 1, ?, ?, ?, ?, ?, ?)`)
  // Final states only: pending, running or completed tasks would set the engine to work (recovery,
  // processing) and flood the page with live events while it is measured.
  const statuses = ['reported', 'reported', 'reported', 'reported', 'reported', 'failed_analysis', 'failed_processing', 'failed_reporting']
  db.transaction(() => {
    for (let i = 1; i <= TASKS; i++) {
      const t = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString().replace('T', ' ').slice(0, 19)
      const status = statuses[i % statuses.length]
      const done = true
      const started = t
      if (i % 10 === 0) {
        insertTask.run('url', `http://site${i}.example/path?q=${i}`, null, null, t, t, started, done ? t : null, status)
      } else {
        const h = (n) => randomBytes(n).toString('hex')
        const sha256 = h(32)
        const sampleId = insertSample.run(1000 + i, h(16), h(20), sha256, h(64)).lastInsertRowid
        insertTask.run('file', `${dataDir}/storage/uploads/${sha256}/sample${i}.exe`, sampleId, 'win10',
          t, t, started, done ? t : null, status)
      }
    }
  })()
  db.close()
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.woff2': 'font/woff2' }

/**
 * Only when the service does not serve the UI at / (older builds): out/renderer from a tiny
 * static server that forwards every other path to the service, so the page and its API share
 * one origin, as when the service serves it.
 */
async function startUiServer(apiBase) {
  const api = new URL(apiBase)
  const server = createServer((req, res) => {
    const p = decodeURIComponent((req.url ?? '/').split('?')[0])
    const file = p === '/' ? path.join(rendererDir, 'index.html') : p.startsWith('/assets/') ? path.join(rendererDir, path.normalize(p)) : null
    if (file && file.startsWith(rendererDir) && existsSync(file) && statSync(file).isFile()) {
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' })
      return void createReadStream(file).pipe(res)
    }
    const headers = { ...req.headers, host: api.host }
    delete headers.origin
    const upstream = httpRequest({ host: api.hostname, port: api.port, method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    upstream.on('error', () => { res.writeHead(502); res.end() })
    req.pipe(upstream)
  })
  const port = freePort()
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve))
  const stop = onCleanup(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve) }), 'stop the UI server')
  return { base: `http://127.0.0.1:${port}`, stop }
}

// Runs in the page before its scripts: records when the first task row is painted (the frame
// after it enters the DOM) and every long task.
const INSTRUMENT = () => {
  const w = window
  w.__bench = { firstRow: null, longTasks: [], maxFrameGap: 0 }
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) w.__bench.longTasks.push({ start: e.startTime, duration: e.duration })
  }).observe({ type: 'longtask', buffered: true })
  const seen = () => document.querySelector('[role="row"][data-task-id]')
  const mo = new MutationObserver(() => {
    if (!seen()) return
    mo.disconnect()
    requestAnimationFrame(() => setTimeout(() => { w.__bench.firstRow = performance.now() }, 0))
  })
  document.addEventListener('DOMContentLoaded', () => mo.observe(document.body, { childList: true, subtree: true }))
  let last = 0
  const frame = (t) => {
    if (last && w.__bench.measuringFrames) w.__bench.maxFrameGap = Math.max(w.__bench.maxFrameGap, t - last)
    last = t
    requestAnimationFrame(frame)
  }
  requestAnimationFrame(frame)
}

async function main() {
  if (!args.includes('--no-build') || !existsSync(path.join(rendererDir, 'index.html'))) {
    log('building the UI (electron-vite build) and the CLI')
    execFileSync(process.execPath, [path.join(root, 'scripts/build-cli.mjs')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
    execFileSync('npx', ['electron-vite', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
  }
  const work = tempDir('aviary-ui-bench-')
  const dataDir = path.join(work, 'data')
  let svc = await startAviary(dataDir) // creates the database and its schema
  await svc.stop()
  const seedStart = performance.now()
  seedTasks(dataDir)
  log(`seeded ${TASKS} tasks in ${Math.round(performance.now() - seedStart)} ms`)
  svc = await startAviary(dataDir)
  try {
    const index = await fetch(`${svc.base}/`).then((r) => r.text())
    const served = index.includes('id="root"') && index.includes('/assets/')
    const ui = served ? null : await startUiServer(svc.base)
    const pageBase = served ? svc.base : ui.base
    log(served ? 'UI served by the service' : 'UI served by the bench (the service does not serve it)')

    const browser = await launchChromium(work)
    // Chromium's own temp files go into the bench's folder (a signal during its start leaves none in
    // /tmp), and bench/cleanup.mjs closes it on a signal: Playwright's own SIGINT handler would
    // exit the process (130) before the service and the folder are cleaned up.
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
    page.on('pageerror', (err) => log(`page error: ${err.message}`))
    // Warm-up load (HTTP cache, service's task cache, JIT): the measured load is the second one,
    // as an analyst opens the list on a running instance, but in a fresh page.
    await page.goto(`${pageBase}/#/tasks`)
    await page.waitForSelector('[role="row"][data-task-id]', { timeout: 30_000 })
    await page.close()

    const measured = await browser.newPage({ viewport: { width: 1400, height: 900 } })
    await measured.addInitScript(INSTRUMENT)
    await measured.goto(`${pageBase}/#/tasks`)
    await measured.waitForFunction(() => window.__bench.firstRow !== null, null, { timeout: 30_000 })
    const firstRowMs = await measured.evaluate(() => window.__bench.firstRow)
    // Where the first-paint time went: the page's own loading, then each request before the rows.
    const loading = await measured.evaluate((until) => {
      const nav = performance.getEntriesByType('navigation')[0]
      return {
        domContentLoaded: Math.round(nav.domContentLoadedEventEnd),
        requests: performance.getEntriesByType('resource').filter((r) => r.startTime < until)
          .map((r) => `${new URL(r.name).pathname.slice(0, 40)} ${Math.round(r.startTime)}→${Math.round(r.responseEnd)}`)
      }
    }, firstRowMs)
    const rowCount = await measured.getAttribute('[role="grid"][aria-label="Tasks"]', 'aria-rowcount')

    // Scroll: the wheel over the list, a notch every frame or two, as a fast trackpad does.
    const box = await measured.locator('[role="grid"][aria-label="Tasks"]').boundingBox()
    await measured.mouse.move(box.x + box.width / 2, box.y + box.height / 2)
    await measured.evaluate(() => { window.__bench.longTasks = []; window.__bench.measuringFrames = true })
    const cdp = args.includes('--profile') ? await measured.context().newCDPSession(measured) : null
    if (cdp) { await cdp.send('Profiler.enable'); await cdp.send('Profiler.start') }
    const wheels = Math.ceil((ROWS_TO_SCROLL * ROW_PX) / WHEEL_PX)
    const scrollStart = performance.now()
    for (let i = 0; i < wheels; i++) {
      await measured.mouse.wheel(0, WHEEL_PX)
      await measured.waitForTimeout(16)
    }
    // Let the last pages arrive and render, then check the rows in view hold tasks.
    await measured.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[role="grid"] [role="row"]')]
      return rows.length > 0 && rows.every((r) => r.hasAttribute('data-task-id'))
    }, null, { timeout: 10_000 })
    const scrollMs = performance.now() - scrollStart
    if (cdp) printProfile((await cdp.send('Profiler.stop')).profile, log)
    const after = await measured.evaluate(() => ({
      longTasks: window.__bench.longTasks,
      maxFrameGap: window.__bench.maxFrameGap,
      scrollTop: document.querySelector('[role="grid"][aria-label="Tasks"]').scrollTop,
      rowsInDom: document.querySelectorAll('[role="grid"] [role="row"]').length
    }))
    const longest = after.longTasks.reduce((m, t) => Math.max(m, t.duration), 0)
    const result = {
      tasks: TASKS,
      listRowCount: Number(rowCount),
      firstRowsPaintedMs: Math.round(firstRowMs),
      firstPaintBreakdown: loading,
      scrolledRows: Math.round(after.scrollTop / ROW_PX),
      scrollWallMs: Math.round(scrollMs),
      rowsInDom: after.rowsInDom,
      longestTaskMs: Math.round(longest),
      longTasksOver50ms: after.longTasks.filter((t) => t.duration > 50).length,
      maxFrameGapMs: Math.round(after.maxFrameGap),
      targets: { firstRowsUnder1s: firstRowMs < 1000, noLongTaskOver50ms: after.longTasks.every((t) => t.duration <= 50) }
    }
    console.log(JSON.stringify(result, null, 2))
  } finally {
    await cleanup()
  }
}

try {
  await main()
} finally {
  await cleanup()
}
