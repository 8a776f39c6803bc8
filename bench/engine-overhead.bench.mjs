#!/usr/bin/env node
// Host overhead per task (figures, not a test): 50 short tasks over 4 netns guests, each running
// `aviary agent` under the physical driver, through the built `aviary serve` with packet capture.
// The sample sleeps 1 s. Per task, from the timeline:
//   wall      machine_locked → completed (everything the host does for the task)
//   analysis  analyzer_started → finished (the analyzer running the sample in the guest)
//   overhead  wall − analysis: result server, capture start/stop, agent sequence, teardown;
//             printed whole and in its two parts: before the analyzer starts (machine_locked →
//             analyzer_started: result server, capture start, the agent sequence) and after it
//             finished (finished → completed: capture stop, guest ended, machine stopped)
// Also the whole run's wall time. As root. Uses netns indexes 4-7 (10.204.4-7.0/24).
// A task counts once its run has ended (any status after running: it may already be reported).
// Usage: node bench/engine-overhead.bench.mjs [--tasks N] [--quick (4 tasks)]
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { cleanup, numArg, tempDir } from './cleanup.mjs'
import { netnsFixture, root, serve, waitForRun } from './netns-serve.mjs'

const TASKS = numArg('--tasks', 50, 4)
const GUESTS = 4

const guests = []
try {
  const { createNetnsGuest } = await netnsFixture('overhead')
  const data = tempDir('aviary-bench-overhead-')
  for (let i = 0; i < GUESTS; i++) {
    const g = await createNetnsGuest({ index: 4 + i, prefix: 'avbo' })
    guests.push(g)
    await g.startAgent([process.execPath, path.join(root, 'bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000'])
  }
  writeFileSync(path.join(data, 'machines.json'), JSON.stringify({
    driver: 'physical',
    screenshots: { interval: 0 },
    resultserver: { ip: '0.0.0.0', port: 0 },
    machines: guests.map((g, i) => ({ name: `g${i}`, ip: g.guestIp, platform: 'linux', interface: g.hostIf, resultserver_ip: g.hostIp }))
  }))
  const { url } = await serve(data)

  const t0 = performance.now()
  const ids = []
  for (let n = 0; n < TASKS; n++) {
    const form = new FormData()
    form.set('file', new Blob([`#!/bin/sh\nsleep 1\necho ${n} > /tmp/out-${n}.txt\n`]), `short-${n}.sh`)
    form.set('timeout', '30')
    const res = await fetch(`${url}/tasks/create/file`, { method: 'POST', body: form })
    ids.push((await res.json()).task_id)
  }
  const rows = []
  for (const id of ids) rows.push(await waitForRun(url, id))
  const total = (performance.now() - t0) / 1000
  const failed = rows.filter((r) => r.status === 'failed_analysis').length
  const ok = rows.filter((r) => r.status !== 'failed_analysis' && Number.isFinite(r.analysis))
  const overhead = ok.map((r) => (r.wall - r.analysis) / 1000).sort((a, b) => a - b)
  const at = (xs, p) => +xs[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)].toFixed(2)
  const pick = (p) => at(overhead, p)
  const part = (key) => {
    const xs = ok.map((r) => r[key] / 1000).sort((a, b) => a - b)
    return { median: at(xs, 0.5), p90: at(xs, 0.9), max: at(xs, 1) }
  }
  console.log(JSON.stringify({
    bench: 'host overhead per task', tasks: TASKS, guests: GUESTS, failed,
    overhead_s: { median: pick(0.5), p90: pick(0.9), max: pick(1) }, before_analyzer_s: part('start'), after_finished_s: part('end'),
    load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    analysis_s_median: +(ok.map((r) => r.analysis / 1000).sort((a, b) => a - b)[Math.floor(ok.length / 2)]).toFixed(2),
    wall_total_s: +total.toFixed(1), tasks_per_minute: +((TASKS / total) * 60).toFixed(1)
  }))
} finally {
  await cleanup()
}
