#!/usr/bin/env node
// Capture and screenshot figures (not a test: they depend on the machine). As root:
//   node bench/capture.bench.mjs [rounds]        (default 10 rounds; --quick: 1 round, a burst of 2,000)
// Measures, with the real modules bundled by esbuild into a temp folder:
//   guest     createNetnsGuest() and close() of the test fixture (netns + veth + fake internet)
//   capture   startCapture() until tcpdump says "listening on", and stop() until the pcap is complete
//             (stop() includes the 1.2 s wait for libpcap's last block)
//   burst     20,000 UDP datagrams sent from the guest as fast as it can, stop() right after:
//             how many are in the pcap, with 4 busy-looping processes competing for the CPU
//   frames    decode + JPEG + thumbnail of one frame: 720x400 PPM (QEMU VGA text console size)
//             and 1280x800 PNG (a desktop)
// Prints one JSON line with medians in milliseconds. Uses index 19 (10.204.19.0/24, avng19).
import { build } from 'esbuild'
import { execFileSync, spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, made, own, positional, quick, tempDir, track } from './cleanup.mjs'

const ROUNDS = Number(positional()[0] ?? (quick ? 1 : 10))
const SENT = quick ? 2_000 : 20_000
const root = fileURLToPath(new URL('..', import.meta.url))
// Under out/ so the bundles' bare imports (sharp, dns-packet) resolve from the project's node_modules.
const work = tempDir('capture-bench-', path.join(root, 'out'))

await build({
  absWorkingDir: root,
  entryPoints: {
    tcpdump: 'src/core/capture/tcpdump.ts',
    screenshots: 'src/core/capture/screenshots.ts',
    guest: 'test/guests/netns-guest.ts'
  },
  outdir: work,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  logLevel: 'warning'
})
const load = (name) => import(path.join(work, `${name}.mjs`))
process.chdir(root)
const tcpdump = await load('tcpdump')
// A capture (tcpdump) still running at cleanup is stopped; release() stops it now.
const startCapture = (o) => own(tcpdump.startCapture(o), (c) => c.stop(), 'stop tcpdump')
const { decodeFrame, writeShot } = await load('screenshots')
const fixture = await load('guest')
const createNetnsGuest = (opts) => {
  made('netns', `avng${opts.index}`)
  return own(fixture.createNetnsGuest(opts), (g) => g.close(), `close guest avng${opts.index}`)
}
const sharp = (await import('sharp')).default

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return Number(s[Math.floor(s.length / 2)].toFixed(2)) }
const time = async (fn) => { const t = performance.now(); await fn(); return performance.now() - t }
const result = {}

try {
  // guest
  const create = []
  const close = []
  for (let i = 0; i < ROUNDS; i++) {
    let g
    create.push(await time(async () => { g = createNetnsGuest({ index: 19 }); await g }))
    close.push(await time(() => g.release()))
  }
  result.guestCreateMs = median(create)
  result.guestCloseMs = median(close)

  // capture
  const making = createNetnsGuest({ index: 19 })
  const g = await making
  try {
    const opts = (file) => ({ tcpdump: 'tcpdump', iface: g.hostIf, guestIp: g.guestIp, agentPort: 8000,
      resultserver: { ip: g.hostIp, port: 2042 }, file: path.join(work, file) })
    const start = []
    const stop = []
    for (let i = 0; i < ROUNDS; i++) {
      let c
      start.push(await time(async () => { c = startCapture(opts(`r${i}.pcap`)); await c }))
      stop.push(await time(() => c.release()))
    }
    result.captureStartMs = median(start)
    result.captureStopMs = median(stop)

    // burst
    const hogs = Array.from({ length: 4 }, () => track(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }), { graceMs: 0, label: 'stop a CPU hog' }))
    const capturing = startCapture(opts('burst.pcap'))
    const c = await capturing
    const sender = `const s = require('dgram').createSocket('udp4'); let n = 0; const b = Buffer.alloc(64)
      const next = () => { if (n++ >= ${SENT}) return s.close(); s.send(b, 9, '${g.internetIp}', next) }; next()`
    execFileSync('ip', ['netns', 'exec', g.ns, process.execPath, '-e', sender])
    const stopMs = await time(() => capturing.release())
    for (const h of hogs) h.kill('SIGKILL')
    const lines = execFileSync('tcpdump', ['-r', path.join(work, 'burst.pcap'), '-n', `udp and dst port 9`], { stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 })
      .toString().split('\n').filter(Boolean).length
    result.burst = { sent: SENT, inPcap: lines, droppedByKernel: c.stats()?.droppedByKernel, stopMs: Math.round(stopMs) }
  } finally {
    await making.release()
  }

  // frames
  const ppm = Buffer.concat([Buffer.from('P6\n720 400\n255\n'), Buffer.alloc(720 * 400 * 3, 0).map((_, i) => (i * 7) & 255)])
  const png = await sharp({ create: { width: 1280, height: 800, channels: 3, noise: { type: 'gaussian', mean: 128, sigma: 30 } } }).png().toBuffer()
  for (const [name, bytes] of [['ppm720x400', ppm], ['png1280x800', png]]) {
    const times = []
    for (let i = 0; i < ROUNDS; i++) times.push(await time(async () => writeShot(work, i + 1, await decodeFrame(bytes))))
    result[`frame_${name}_Ms`] = median(times)
  }
  console.log(JSON.stringify(result))
} finally {
  await cleanup()
}
