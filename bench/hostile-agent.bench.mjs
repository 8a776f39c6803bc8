#!/usr/bin/env node
// The service's memory while hostile agents answer it (figures, not a test): the built `aviary
// serve` in its own process, 4 netns guests whose agent misbehaves (test/guests/hostile-agent.mjs:
// a 1 GiB answer to GET /, an endless answer to GET /status, a status that drips a byte every
// 2 s, and a guest that floods the result server past task_max_size), ROUNDS tasks on each, with
// timeout 10 s and critical timeout 10 s. The service's RSS (VmRSS) is read every 250 ms:
//   before   once the service has started, before the first task
//   during   peak and median while the tasks run
//   after    5 s after the last task ended
// and each task's final status and how long it held its machine. As root. netns 50-53.
// Usage: node bench/hostile-agent.bench.mjs [--rounds N] [--quick (1 round)]
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { cleanup, numArg, onCleanup, tempDir } from './cleanup.mjs'
import { netnsFixture, root, serve, settled } from './netns-serve.mjs'
import { setTimeout as sleep } from 'node:timers/promises'

const ROUNDS = numArg('--rounds', 3, 1)
const BEHAVIOURS = [['/', 'huge'], ['/status', 'endless'], ['/status', 'drip'], ['/status', 'cap']]
const MiB = 1024 * 1024
/** Far past the 20 s a task may hold its machine: a task still not settled then is a hang, not a figure. */
const SETTLE_LIMIT_MS = 10 * 60_000

const rssMiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024
const guests = []
try {
  const { createNetnsGuest } = await netnsFixture('hostile')
  const data = tempDir('aviary-bench-hostile-')
  for (const [i, [route, behaviour]] of BEHAVIOURS.entries()) {
    const g = await createNetnsGuest({ index: 50 + i, prefix: 'avbh' })
    guests.push(g)
    await g.startAgent([process.execPath, path.join(root, 'test/guests/hostile-agent.mjs'), route, behaviour])
  }
  writeFileSync(path.join(data, 'machines.json'), JSON.stringify({
    driver: 'physical',
    screenshots: { interval: 0 },
    timeouts: { critical: 10 },
    resultserver: { port: 0, task_max_size: 8 * MiB },
    machines: guests.map((g, i) => ({ name: `h${i}`, ip: g.guestIp, platform: 'linux', interface: g.hostIf, resultserver_ip: g.hostIp }))
  }))
  const { server, url } = await serve(data)
  await sleep(2000)
  const before = rssMiB(server.pid)
  const during = []
  const sampler = setInterval(() => during.push(rssMiB(server.pid)), 250)
  onCleanup(() => clearInterval(sampler))
  const t0 = performance.now()
  const ids = []
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < guests.length; i++) {
      const form = new FormData()
      form.set('file', new Blob(['#!/bin/sh\necho hostile\n']), 'sample.sh')
      form.set('timeout', '10')
      form.set('machine', `h${i}`)
      const res = await fetch(`${url}/tasks/create/file`, { method: 'POST', body: form })
      ids.push((await res.json()).task_id)
    }
  }
  const rows = []
  for (const id of ids) {
    const deadline = Date.now() + SETTLE_LIMIT_MS
    for (;;) {
      const { task } = await (await fetch(`${url}/tasks/view/${id}`)).json()
      if (settled(task.status)) {
        const held = (Date.parse(`${task.completed_on.replace(' ', 'T')}Z`) - Date.parse(`${task.started_on.replace(' ', 'T')}Z`)) / 1000
        rows.push({ id, status: task.status, held_s: held, reason: (task.errors[0] ?? '').slice(0, 90) })
        break
      }
      if (Date.now() > deadline) throw new Error(`task ${id} still ${task.status} after ${SETTLE_LIMIT_MS / 1000} s`)
      await sleep(250)
    }
  }
  clearInterval(sampler)
  const wall = (performance.now() - t0) / 1000
  await sleep(5000)
  const after = rssMiB(server.pid)
  const sorted = [...during].sort((a, b) => a - b)
  console.log(JSON.stringify({
    bench: 'service memory under hostile agents', behaviours: BEHAVIOURS.map(([r, b]) => `${r} ${b}`), rounds: ROUNDS, tasks: ids.length,
    rss_mib: { before: Math.round(before), during_median: Math.round(sorted[Math.floor(sorted.length / 2)]), during_peak: Math.round(sorted.at(-1)), after: Math.round(after) },
    held_s_max: Math.max(...rows.map((r) => r.held_s)), limit_s: 20, wall_s: +wall.toFixed(1),
    statuses: Object.fromEntries([...new Set(rows.map((r) => r.status))].map((s) => [s, rows.filter((r) => r.status === s).length])),
    reasons: [...new Set(rows.map((r) => r.reason))]
  }, null, 1))
} finally {
  await cleanup()
}
