#!/usr/bin/env node
// Report writing: `node bench/reports.bench.mjs [calls]` (default 1,000,000 API calls). Each case
// runs in its own child process (so one case's heap does not blur the next), on the same synthetic
// report (one process with `calls` distinct API-call objects, as Cuckoo's behavior.processes[].calls):
//   json      src/core/reporting/json-writer.ts writeJsonReport (streamed, indent 4)
//   baseline  fs.writeFileSync(file, JSON.stringify(report, null, 4)) — what it replaces
//   html      src/core/reporting/html/render.ts on a report with 100,000 processes and DNS entries
//   index     src/core/reporting/json-index.ts over the json case's file (written first, untimed):
//             what ?elements= and /tasks/summary read before copying a key's bytes
// Prints one JSON line: output bytes, seconds, MB/s and peak RSS growth over the built report for
// json and baseline (the ratio json/baseline of time), and the html page's size and time.
// TypeScript is bundled with esbuild, as bench/resultserver.bench.mjs does. Cleans up its temp
// dirs, also when interrupted. --quick: 20,000 calls, and 5,000 processes and DNS entries for html.
import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, positional, quick, tempDir } from './cleanup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const CALLS = Number(positional()[0] ?? (quick ? 20_000 : 1_000_000))
/** Processes and DNS entries of the html case. */
const WIDE = quick ? 5_000 : 100_000
const dir = tempDir('aviary-reports-bench-')
// The bundle lives under node_modules so that its `import 'sharp'` resolves (ESM ignores NODE_PATH).
const code = tempDir('aviary-reports-bench-', path.join(root, 'node_modules', '.cache'))

const CHILD = `
import { writeFileSync, statSync, rmSync } from 'node:fs'
import { writeJsonReport, renderHtmlReport, indexJsonFile } from './lib.mjs'
const [mode, out, n, wide] = [process.argv[2], process.argv[3], Number(process.argv[4]), Number(process.argv[5])]
let report
if (mode === 'html') {
  const processes = Array.from({ length: wide }, (_, i) => ({ pid: i + 2, ppid: 1, process_name: 'p' + i, command_line: '/bin/p ' + i, children: [] }))
  report = { info: { id: 1, score: 5 }, target: { category: 'file', file: { name: 'x' } },
    behavior: { processes: [], processtree: processes, summary: {} },
    network: { dns: Array.from({ length: wide }, (_, i) => ({ request: 'd' + i + '.example', type: 'A', answers: [{ type: 'A', data: '1.2.3.4' }] })) } }
} else {
  const calls = []
  for (let i = 0; i < n; i++) calls.push({ api: 'NtWriteFile', category: 'file', status: true, return_value: 0,
    arguments: { file_handle: '0x' + (i * 4).toString(16), buffer: 'data ' + i, length: i % 4096 },
    flags: {}, time: 1763900000 + i / 1000, tid: 1000 + (i % 7), stacktrace: [] })
  report = { info: { id: 1 }, behavior: { processes: [{ pid: 4, calls }], summary: {} }, debug: {} }
}
if (mode === 'index') {
  await writeJsonReport(out, report)
  report = undefined
}
globalThis.gc()
const before = process.memoryUsage().rss
let peak = before
const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 2)
const t0 = performance.now()
if (mode === 'json') await writeJsonReport(out, report)
else if (mode === 'baseline') {
  // JSON.stringify gives up past V8's longest string (~512 Mi characters): say so instead of a figure.
  try { writeFileSync(out, JSON.stringify(report, null, 4) + '\\n') } catch (err) {
    clearInterval(timer)
    process.stdout.write(JSON.stringify({ error: String(err.message), rss_growth_mib: (Math.max(peak, process.memoryUsage().rss) - before) / 1048576 }))
    process.exit(0)
  }
}
else if (mode === 'index') await indexJsonFile(out)
else await renderHtmlReport(report, { dir: '/nonexistent', out })
const seconds = (performance.now() - t0) / 1000
clearInterval(timer)
peak = Math.max(peak, process.memoryUsage().rss)
const bytes = statSync(out).size
rmSync(out)
process.stdout.write(JSON.stringify({ bytes, seconds, rss_growth_mib: (peak - before) / 1048576 }))
`

try {
  writeFileSync(path.join(code, 'entry.ts'), `export { writeJsonReport } from '${root}src/core/reporting/json-writer'\nexport { renderHtmlReport } from '${root}src/core/reporting/html/render'\nexport { indexJsonFile } from '${root}src/core/reporting/json-index'\n`)
  await build({ entryPoints: [path.join(code, 'entry.ts')], bundle: true, platform: 'node', format: 'esm', outfile: path.join(code, 'lib.mjs'), external: ['sharp'], logLevel: 'silent' })
  writeFileSync(path.join(code, 'child.mjs'), CHILD)
  const run = (mode) => JSON.parse(execFileSync(process.execPath, ['--expose-gc', path.join(code, 'child.mjs'), mode, path.join(dir, `out-${mode}`), String(CALLS), String(WIDE)],
    { encoding: 'utf8', cwd: root, maxBuffer: 1 << 20 }))
  const json = run('json')
  const baseline = run('baseline')
  const html = run('html')
  const index = run('index')
  const mbps = (r) => (r.error ? null : Math.round(r.bytes / 1e6 / r.seconds))
  const r2 = (x) => Math.round(x * 100) / 100
  console.log(JSON.stringify({
    calls: CALLS,
    json: { bytes: json.bytes, s: r2(json.seconds), mb_per_s: mbps(json), rss_growth_mib: Math.round(json.rss_growth_mib) },
    baseline: baseline.error
      ? { error: baseline.error, rss_growth_mib: Math.round(baseline.rss_growth_mib) }
      : { bytes: baseline.bytes, s: r2(baseline.seconds), mb_per_s: mbps(baseline), rss_growth_mib: Math.round(baseline.rss_growth_mib) },
    time_ratio_json_over_baseline: baseline.error ? null : r2(json.seconds / baseline.seconds),
    index: { bytes: index.bytes, s: r2(index.seconds), mb_per_s: mbps(index), rss_growth_mib: Math.round(index.rss_growth_mib) },
    [WIDE === 100_000 ? 'html_100k' : `html_${WIDE}`]: { bytes: html.bytes, s: r2(html.seconds), rss_growth_mib: Math.round(html.rss_growth_mib) }
  }))
} finally {
  await cleanup()
}
