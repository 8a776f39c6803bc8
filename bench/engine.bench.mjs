#!/usr/bin/env node
// Engine benchmark (figures, not a test): how long a submitted task waits before its machine is
// asked to start, with a free machine. The service is the built `aviary serve` in its own process;
// its one machine is the `test` domain of libvirt's test hypervisor (the real kvm driver, through
// libvirtd, with instant state changes), marked `noagent` with a 1 s timeout so each run is short.
// Per task: from the moment the client sends POST /tasks/create/file to the moment it receives the
// `reverting` stage over GET /events (the stage written just before the driver's start), and the
// same on the server's clock (timeline `queued` → `reverting`). 100 tasks, one at a time.
// Usage: node bench/engine.bench.mjs [--tasks N] [--quick (5 tasks)]
import { execFileSync, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { cleanup, numArg, onCleanup, stopChild, tempDir, track } from './cleanup.mjs'
import { serve } from './netns-serve.mjs'

const TASKS = numArg('--tasks', 100, 5)
/** A task that has not ended by then is a hang (each runs with a 1 s timeout on an instant hypervisor). */
const TASK_LIMIT_MS = 120_000
const URI = 'test+unix:///default'

function virsh(...a) {
  return execFileSync('virsh', ['-c', URI, ...a], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

async function ensureLibvirtd() {
  try {
    virsh('version')
    return
  } catch { /* start it */ }
  for (const d of ['virtlogd', 'libvirtd']) {
    try { execFileSync('pgrep', ['-x', d]) } catch { execFileSync(d, ['-d']) }
  }
  for (let i = 0; i < 300; i++) {
    try {
      virsh('version')
      return
    } catch { await sleep(300) }
  }
  throw new Error('libvirtd does not answer')
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}

try {
  await ensureLibvirtd()
  // libvirt's test hypervisor forgets its state when its last connection closes: an interactive
  // virsh holds one open for the whole run, and makes the snapshot through it.
  const holder = track(spawn('virsh', ['-c', URI], { stdio: ['pipe', 'ignore', 'ignore'] }), { graceMs: 2000, label: 'stop the virsh holding the test hypervisor' })
  holder.stdin.write('snapshot-create-as test bench-clean\n')
  await sleep(1000)

  const data = tempDir('aviary-bench-engine-')
  writeFileSync(path.join(data, 'machines.json'), JSON.stringify({
    driver: 'kvm',
    kvm: { uri: URI },
    resultserver: { ip: '127.0.0.1', port: 0 },
    screenshots: { interval: 0 },
    machines: [{ name: 'bench', label: 'test', platform: 'linux', ip: '127.0.0.9', snapshot: 'bench-clean', options: ['noagent'] }]
  }))
  const { server, url } = await serve(data)

  // The event stream, parsed as it arrives; each `reverting` stage is stamped on receipt.
  const reverting = new Map()
  const completed = new Map()
  const finished = new Set()
  const events = await fetch(`${url}/events`)
  const reader = events.body.getReader()
  const stopReading = onCleanup(() => reader.cancel().catch(() => undefined), 'stop reading /events')
  let buf = ''
  ;(async () => {
    const dec = new TextDecoder()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      const now = performance.now()
      buf += dec.decode(value, { stream: true })
      let i
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i)
        buf = buf.slice(i + 2)
        const ev = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (ev !== 'stage' || !data) continue
        const s = JSON.parse(data)
        if (s.stage === 'reverting') reverting.set(s.task_id, { client: now, server: s.time })
        if (s.stage === 'completed' || s.stage === 'failed') {
          finished.add(s.task_id)
          completed.get(s.task_id)?.()
        }
      }
    }
  })().catch(() => undefined)

  const client = []
  const serverSide = []
  for (let n = 0; n < TASKS; n++) {
    const form = new FormData()
    form.set('file', new Blob([`#!/bin/sh\necho ${n}\n`]), `sample-${n}.sh`)
    form.set('timeout', '1')
    const t0 = performance.now()
    const res = await fetch(`${url}/tasks/create/file`, { method: 'POST', body: form })
    const { task_id: id } = await res.json()
    let timer
    const done = finished.has(id) ? Promise.resolve() : new Promise((resolve, reject) => {
      completed.set(id, resolve)
      timer = setTimeout(() => reject(new Error(`task ${id}: no completed or failed stage within ${TASK_LIMIT_MS / 1000} s`)), TASK_LIMIT_MS)
    })
    await done.finally(() => clearTimeout(timer))
    const r = reverting.get(id)
    if (!r) throw new Error(`task ${id}: no reverting stage`)
    client.push(r.client - t0)
    const timeline = await (await fetch(`${url}/tasks/timeline/${id}`)).json()
    const queued = timeline.timeline.find((e) => e.stage === 'queued')
    serverSide.push(r.server - queued.time)
  }
  await stopReading()
  await stopChild(server, { graceMs: 20_000 })
  holder.stdin.end('quit\n')

  const fmt = (xs) => {
    const s = [...xs].sort((a, b) => a - b)
    return { median_ms: +percentile(s, 50).toFixed(1), p99_ms: +percentile(s, 99).toFixed(1), max_ms: +s[s.length - 1].toFixed(1) }
  }
  console.log(JSON.stringify({ bench: 'submit→start requested', tasks: TASKS, client: fmt(client), server: fmt(serverSide) }))
} finally {
  await cleanup()
}
