#!/usr/bin/env node
// A Windows task's overhead under Wine (figures, not a test): N tasks, one after the other, on one
// Wine guest of the test bed (test/guests/wine-guest.ts: a netns guest running Aviary's Windows
// agent under Wine as a physical machine), through the built `aviary serve` with packet capture.
// The sample (test/fixtures/windows-samples/sleeper.c, built with mingw-w64) sleeps 1 s. Per task,
// from the timeline:
//   wall      machine_locked → completed (everything for the task)
//   analysis  analyzer_started → finished (the analyzer in the guest: node.exe and the helper
//             starting under Wine, the sample, the last polls, the uploads)
//   host      wall − analysis: what the service adds (agent sequence, result server, capture
//             start and stop, processing is not included: it runs after completed)
//   guest     analysis − 1 s: what the Windows analyzer adds around the sample's own second
// As root. Uses netns index 58 (10.204.58.0/24). Every guest, wineserver and the service are
// stopped on exit, also on SIGINT/SIGTERM or an error (bench/cleanup.mjs).
// Usage: node bench/windows-overhead.bench.mjs [--tasks N] [--quick (1 task)] [--log] (--log: the last task's analysis.log on stderr)
import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { args, cleanup, made, numArg, own, tempDir } from './cleanup.mjs'
import { root, serve, waitForRun } from './netns-serve.mjs'

const TASKS = numArg('--tasks', 10, 1)
const LOG = args.includes('--log')

try {
  const work = tempDir('windows-bench-', path.join(root, 'out'))
  await build({
    absWorkingDir: root, entryPoints: { wine: 'test/guests/wine-guest.ts' }, outdir: work, outExtension: { '.js': '.mjs' },
    bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'warning',
    define: { __dirname: JSON.stringify(path.join(root, 'test/guests')) }
  })
  const { createWineGuest, wineVersion } = await import(path.join(work, 'wine.mjs'))
  process.chdir(root)
  const data = tempDir('aviary-bench-windows-')
  const exe = path.join(work, 'sleeper.exe')
  execFileSync('x86_64-w64-mingw32-gcc', ['-O2', '-s', '-o', exe, path.join(root, 'test/fixtures/windows-samples/sleeper.c')])
  const t0Guest = performance.now()
  made('netns', 'avwb58')
  const guest = await own(createWineGuest({ index: 58, prefix: 'avwb' }), (g) => g.close(), 'close the Wine guest')
  const guestReady = (performance.now() - t0Guest) / 1000
  writeFileSync(path.join(data, 'machines.json'), JSON.stringify({
    driver: 'physical',
    screenshots: { interval: 0 },
    resultserver: { ip: guest.hostIp, port: 0 },
    interface: guest.hostIf,
    machines: [{ name: 'wine', ip: guest.guestIp, platform: 'windows' }]
  }))
  const { url } = await serve(data)
  const bytes = readFileSync(exe)
  const rows = []
  const t0 = performance.now()
  for (let n = 0; n < TASKS; n++) {
    const form = new FormData()
    form.set('file', new Blob([bytes]), `sleeper-${n}.exe`)
    form.set('timeout', '60')
    const id = (await (await fetch(`${url}/tasks/create/file`, { method: 'POST', body: form })).json()).task_id
    rows.push(await waitForRun(url, id, 100))
  }
  const total = (performance.now() - t0) / 1000
  if (LOG && rows.length > 0) process.stderr.write(readFileSync(path.join(data, 'storage/analyses', String(rows[rows.length - 1].id), 'analysis.log'), 'utf8'))
  const ok = rows.filter((r) => r.status !== 'failed_analysis' && Number.isFinite(r.analysis) && Number.isFinite(r.wall))
  const stats = (xs) => {
    const s = xs.sort((a, b) => a - b)
    const pick = (p) => +s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)].toFixed(2)
    return { median: pick(0.5), p90: pick(0.9), max: pick(1) }
  }
  console.log(JSON.stringify({
    bench: 'Windows task overhead under Wine', wine: wineVersion(), tasks: TASKS, failed: rows.length - ok.length,
    guest_ready_s: +guestReady.toFixed(1),
    host_overhead_s: stats(ok.map((r) => (r.wall - r.analysis) / 1000)),
    analyzer_overhead_s: stats(ok.map((r) => r.analysis / 1000 - 1)),
    wall_s: stats(ok.map((r) => r.wall / 1000)),
    wall_total_s: +total.toFixed(1)
  }))
} finally {
  await cleanup()
}
