#!/usr/bin/env node
// Live console bench (figures, not a test; issue 26): through the built `aviary serve` and its
// console websocket, against the QEMU test guest with a root shell on its VGA console
// (test/guests/kvm-guest.ts, instance `console`; TCG here). A Node client speaks RFB by hand, as
// noVNC does (tight, zrle, zlib, hextile, copyrect, raw; a framebuffer update request every 100 ms):
//   key → guest   `echo <marker> >/dev/ttyS0` typed as key events (Shift sent for '>': QEMU adds
//                 none), from the first key to the marker in the guest's serial log; N rounds
//   bytes/minute  the session's recording (console/NNNN.vncrec) over its length, while a command
//                 with a screenful of output is typed every 2 s (a busy text console), and idle
// A desktop's figure is not measured: the test guest is a busybox initramfs on a VGA text console,
// and no desktop image can be built here (no X or Wayland stack in its image, and none within
// reach of a TCG boot in bench time); the recorder writes what the VNC server sends, so a desktop
// costs what its screen changes cost in tight/zrle.
// As root. Usage: node bench/console.bench.mjs [--quick] [--rounds N] [--busy S] [--idle S]
// --quick: 2 rounds, 10 s busy, 10 s idle. Prints one JSON line.
import { execFileSync } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { build } from 'esbuild'
import { WebSocket } from 'ws'
import { cleanup, numArg, onCleanup, tempDir } from './cleanup.mjs'
import { root, serve } from './netns-serve.mjs'

const ROUNDS = numArg('--rounds', 10, 2)
const BUSY_S = numArg('--busy', 60, 10)
const IDLE_S = numArg('--idle', 60, 10)

/** X keysyms of the characters typed; shifted ones carry Shift_L (0xffe1) around them. */
const SHIFTED = new Set(['>', '|', '_', ':', '"', '<'])
const keysym = (ch) => (ch === '\n' ? 0xff0d : ch.charCodeAt(0))

/** A by-hand RFB 3.8 client over the service's websocket: just enough to hold a session open. */
class Rfb {
  constructor(ws) {
    this.ws = ws
    this.buf = Buffer.alloc(0)
    this.waiters = []
    this.received = 0
    ws.on('message', (d) => { this.received += d.length; this.buf = Buffer.concat([this.buf, d]); for (const w of this.waiters.splice(0)) w() })
  }
  async take(n) {
    const end = Date.now() + 30_000
    while (this.buf.length < n) {
      if (Date.now() > end) throw new Error(`RFB: timed out waiting for ${n} bytes`)
      await new Promise((ok) => { this.waiters.push(ok); setTimeout(ok, 200) })
    }
    const out = this.buf.subarray(0, n)
    this.buf = this.buf.subarray(n)
    return out
  }
  async handshake() {
    await this.take(12)
    this.ws.send(Buffer.from('RFB 003.008\n'))
    const n = (await this.take(1))[0]
    await this.take(n)
    this.ws.send(Buffer.from([1]))
    await this.take(4)
    this.ws.send(Buffer.from([1]))
    const init = await this.take(24)
    await this.take(init.readUInt32BE(20))
    this.width = init.readUInt16BE(0)
    this.height = init.readUInt16BE(2)
    // From here the server's bytes are screen updates: not parsed, only counted.
    this.buf = Buffer.alloc(0)
    this.ws.removeAllListeners('message')
    this.ws.on('message', (d) => { this.received += d.length })
    const encodings = [7, 16, 6, 5, 1, 0, -223]
    const set = Buffer.alloc(4 + 4 * encodings.length)
    set.writeUInt8(2, 0)
    set.writeUInt16BE(encodings.length, 2)
    encodings.forEach((e, i) => set.writeInt32BE(e, 4 + 4 * i))
    this.ws.send(set)
    this.update(false)
    this.timer = setInterval(() => this.update(true), 100)
  }
  update(incremental) {
    const m = Buffer.alloc(10)
    m.writeUInt8(3, 0)
    m.writeUInt8(incremental ? 1 : 0, 1)
    m.writeUInt16BE(this.width, 6)
    m.writeUInt16BE(this.height, 8)
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(m)
  }
  key(sym, down) {
    const m = Buffer.alloc(8)
    m.writeUInt8(4, 0)
    m.writeUInt8(down ? 1 : 0, 1)
    m.writeUInt32BE(sym, 4)
    this.ws.send(m)
  }
  async type(text) {
    for (const ch of text) {
      if (SHIFTED.has(ch) || /[A-Z]/.test(ch)) this.key(0xffe1, true)
      this.key(keysym(ch), true)
      this.key(keysym(ch), false)
      if (SHIFTED.has(ch) || /[A-Z]/.test(ch)) this.key(0xffe1, false)
      // A person types a key every few tens of ms; noVNC sends each as it comes.
      await sleep(15)
    }
  }
  stop() {
    clearInterval(this.timer)
  }
}

const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]

try {
  const work = tempDir('aviary-console-bench-')
  // The test guest's helper is TypeScript: bundled for this run, next to it (it finds the repo
  // from its own place).
  const guestJs = path.join(root, 'test/guests', `.console-bench-guest-${process.pid}.mjs`)
  onCleanup(() => rmSync(guestJs, { force: true }), `remove ${guestJs}`)
  await build({ entryPoints: [path.join(root, 'test/guests/kvm-guest.ts')], bundle: true, platform: 'node', format: 'esm', outfile: guestJs, packages: 'external', logLevel: 'error' })
  const { ensureKvmGuest, aviaryAgent } = await import(pathToFileURL(guestJs).href)
  const guest = await ensureKvmGuest({ ...aviaryAgent(), instance: 'console' })
  onCleanup(() => guest.release(), 'release the console test guest')
  const data = path.join(work, 'data')
  execFileSync('mkdir', ['-p', data])
  writeFileSync(path.join(data, 'machines.json'), JSON.stringify({
    driver: 'kvm', kvm: { uri: guest.uri }, interface: guest.tap, resultserver: { ip: guest.hostIp, port: 0 },
    screenshots: { interval: 0 },
    machines: [{ name: 'vm1', label: guest.domain, ip: guest.ip, snapshot: guest.snapshot, platform: 'linux' }]
  }))
  const { url } = await serve(data)
  const form = new FormData()
  form.set('file', new Blob(['#!/bin/sh\nsleep 1\n']), 'console-bench.sh')
  form.set('timeout', String(ROUNDS * 15 + BUSY_S + IDLE_S + 120))
  form.set('options', 'interactive=1')
  const id = (await (await fetch(`${url}/tasks/create/file`, { method: 'POST', body: form })).json()).task_id
  const stagesOf = async () => (await (await fetch(`${url}/tasks/timeline/${id}`)).json()).timeline.map((e) => e.stage)
  for (const t = Date.now(); !(await stagesOf()).includes('analyzer_started'); await sleep(500)) {
    if (Date.now() - t > 600_000) throw new Error('the analyzer did not start within 600 s')
  }
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/aviary/tasks/${id}/console/ws`, ['aviary.console.interactive'])
  await new Promise((ok, ko) => { ws.once('open', ok); ws.once('error', ko) })
  const opened = Date.now()
  const rfb = new Rfb(ws)
  await rfb.handshake()
  await sleep(1000)
  await rfb.type('\n')
  await sleep(1000)
  const serial = () => readFileSync(guest.consoleLog, 'latin1')
  const latencies = []
  for (let i = 0; i < ROUNDS; i++) {
    const from = serial().length
    const marker = `bench-${process.pid}-${i}`
    const first = Date.now()
    const typing = rfb.type(`echo ${marker} >/dev/ttyS0\n`)
    let seen = 0
    while (Date.now() - first < 15_000) {
      if (serial().slice(from).includes(marker)) { seen = Date.now(); break }
      await sleep(10)
    }
    await typing
    if (seen === 0) throw new Error(`round ${i}: the marker did not reach the serial log within 15 s`)
    latencies.push(seen - first)
    await sleep(1000)
  }
  // A busy text console: a screenful of output every 2 s. Then idle.
  const busyFrom = rfb.received
  const busyStart = Date.now()
  while (Date.now() - busyStart < BUSY_S * 1000) {
    await rfb.type('ls -la /bin | head -40\n')
    await sleep(2000)
  }
  const busyBytes = rfb.received - busyFrom
  const busyMs = Date.now() - busyStart
  const idleFrom = rfb.received
  const idleStart = Date.now()
  await sleep(IDLE_S * 1000)
  const idleBytes = rfb.received - idleFrom
  const idleMs = Date.now() - idleStart
  rfb.stop()
  const sessionMs = Date.now() - opened
  ws.close()
  await fetch(`${url}/aviary/tasks/${id}/finish`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  for (const t = Date.now(); ; await sleep(500)) {
    const { task } = await (await fetch(`${url}/tasks/view/${id}`)).json()
    if (task.status !== 'running' && task.status !== 'pending') break
    if (Date.now() - t > 120_000) throw new Error('the run did not end within 120 s of Finish now')
  }
  const { recordings, total_bytes: total } = await (await fetch(`${url}/aviary/tasks/${id}/console/recordings`)).json()
  const perMin = (bytes, ms) => Math.round(bytes / (ms / 60_000))
  console.log(JSON.stringify({
    bench: 'console',
    key_to_guest_ms: { median: median(latencies), min: Math.min(...latencies), max: Math.max(...latencies), rounds: ROUNDS, keys_per_command: `echo bench-${process.pid}-0 >/dev/ttyS0\n`.length },
    screen: `${rfb.width}x${rfb.height}`,
    text_console_bytes_per_min: { busy: perMin(busyBytes, busyMs), idle: perMin(idleBytes, idleMs) },
    recording: { files: recordings.length, bytes: total, session_s: +(sessionMs / 1000).toFixed(1), bytes_per_min: perMin(total, sessionMs) },
    desktop: 'not measured: the test guest has no desktop (see the header)'
  }))
} finally {
  await cleanup()
}
