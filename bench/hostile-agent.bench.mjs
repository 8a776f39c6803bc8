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
// Usage: node bench/hostile-agent.bench.mjs [--rounds N]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { netnsFixture, root, serve, stop } from './netns-serve.mjs'
import { setTimeout as sleep } from 'node:timers/promises'

const args = process.argv.slice(2)
const ROUNDS = args.includes('--rounds') ? Number(args[args.indexOf('--rounds') + 1]) : 3
const BEHAVIOURS = [['/', 'huge'], ['/status', 'endless'], ['/status', 'drip'], ['/status', 'cap']]
const MiB = 1024 * 1024

const { createNetnsGuest, cleanup } = await netnsFixture('hostile')

const rssMiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024
const guests = []
const data = mkdtempSync(path.join(tmpdir(), 'aviary-bench-hostile-'))
let server
try {
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
  let url
  ;({ server, url } = await serve(data))
  await sleep(2000)
  const before = rssMiB(server.pid)
  const during = []
  const sampler = setInterval(() => during.push(rssMiB(server.pid)), 250)
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
    for (;;) {
      const { task } = await (await fetch(`${url}/tasks/view/${id}`)).json()
      if (['reported', 'failed_analysis', 'failed_processing'].includes(task.status)) {
        const held = (Date.parse(`${task.completed_on.replace(' ', 'T')}Z`) - Date.parse(`${task.started_on.replace(' ', 'T')}Z`)) / 1000
        rows.push({ id, status: task.status, held_s: held, reason: (task.errors[0] ?? '').slice(0, 90) })
        break
      }
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
  await stop(server)
  for (const g of guests) await g.close()
  rmSync(data, { recursive: true, force: true })
  cleanup()
}
