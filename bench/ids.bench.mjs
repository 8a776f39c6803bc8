#!/usr/bin/env node
// The IDS step over a capture: `node bench/ids.bench.mjs [MiB] [rounds]` (default 20 MiB, 3 rounds;
// target: 20 MiB in ≤ 10 s). Makes real traffic for the capture — an HTTP server and a client on a
// loopback address of its own (127.91.28.1), keep-alive connections fetching 20 KiB pages and, one
// request in fifty, a Windows executable (so Aviary's rules fire), under real tcpdump on `lo` —
// then times the whole step (src/core/processing/suricata, bundled with esbuild, in its own
// process): Debian's Suricata started with the bundled and Aviary's rules, run over the pcap, and
// its eve.json read into the report's section. Wall clock, startup and rule loading included; the
// best round is kept. Prints one JSON line: the pcap's size, the seconds of each round, what the
// section holds (alerts, http records: a sanity check that it decoded the traffic). Needs root
// (tcpdump) and suricata. Cleans up its temp folder and children, also when interrupted.
// --quick: a 2 MiB capture, 1 round.
import { build } from 'esbuild'
import { spawn } from 'node:child_process'
import { mkdirSync, statSync, writeFileSync, copyFileSync } from 'node:fs'
import { request, createServer, Agent } from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, positional, quick, tempDir, track } from './cleanup.mjs'

const MIB = Number(positional()[0] ?? (quick ? 2 : 20))
const ROUNDS = Number(positional()[1] ?? (quick ? 1 : 3))
const ADDR = '127.91.28.1'
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const PAGE = Buffer.alloc(20 * 1024, 'aviary ids bench page ')
const PE = Buffer.concat([Buffer.from('MZ\x90\x00', 'latin1'), Buffer.alloc(60), Buffer.from('This program cannot be run in DOS mode.\r\r\n$', 'latin1'), Buffer.alloc(8000, 0x41)])

const RUNNER = `
import { suricataStep } from './ids.mjs'
const t = Date.now()
const errors = []
const r = await suricataStep({ dir: process.argv[2], suricataDir: null, log: () => {}, errors })
process.stdout.write(JSON.stringify({ seconds: (Date.now() - t) / 1000, skipped: r.skipped, errors, alerts: r.alerts.length, sids: [...new Set(r.alerts.map((a) => a.sid))], http: r.http.length, rules: r.rules_loaded }))
`

async function capture(file) {
  const server = createServer((req, res) => {
    const body = req.url.endsWith('.exe') ? PE : PAGE
    res.writeHead(200, { 'content-type': req.url.endsWith('.exe') ? 'application/octet-stream' : 'text/html', 'content-length': body.length })
    res.end(body)
  })
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(8080, ADDR, resolve) })
  const tcpdump = track(spawn('tcpdump', ['-U', '-n', '-i', 'lo', '-s', '0', '-w', file, '-Z', 'root', `host ${ADDR}`], { stdio: ['ignore', 'ignore', 'pipe'] }))
  await new Promise((resolve, reject) => {
    let err = ''
    tcpdump.stderr.on('data', (b) => { err += b; if (err.includes('listening on')) resolve() })
    tcpdump.once('exit', (code) => reject(new Error(`tcpdump exited ${code}: ${err}`)))
  })
  const agent = new Agent({ keepAlive: true, maxSockets: 4 })
  const get = (p) => new Promise((resolve, reject) => {
    request({ host: ADDR, port: 8080, path: p, agent, headers: { 'user-agent': 'aviary-bench/1' } }, (res) => { res.resume(); res.on('end', resolve) }).on('error', reject).end()
  })
  const n = Math.ceil((MIB * 1024 * 1024) / (PAGE.length + 1200))
  for (let i = 0; i < n; i += 4) await Promise.all([0, 1, 2, 3].map((k) => get((i + k) % 50 === 0 ? `/update-${i + k}.exe` : `/page/${i + k}.html`)))
  agent.destroy()
  await new Promise((r) => setTimeout(r, 1500))
  tcpdump.kill('SIGTERM')
  await new Promise((r) => tcpdump.once('exit', r))
  await new Promise((r) => server.close(r))
}

function timed(args) {
  return new Promise((resolve, reject) => {
    const p = track(spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] }))
    let out = ''
    p.stdout.on('data', (b) => { out += b })
    p.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`runner exited ${code}`))))
  })
}

try {
  const work = tempDir('aviary-ids-bench-')
  const pcap = path.join(work, 'lab.pcap')
  await capture(pcap)
  await build({ entryPoints: [path.join(root, 'src/core/processing/suricata/index.ts')], bundle: true, format: 'esm', platform: 'node',
    outfile: path.join(work, 'ids.mjs'), logLevel: 'error',
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" } })
  writeFileSync(path.join(work, 'run.mjs'), RUNNER)
  const rounds = []
  let last
  for (let i = 0; i < ROUNDS; i++) {
    const dir = path.join(work, `task-${i}`)
    mkdirSync(dir)
    copyFileSync(pcap, path.join(dir, 'dump.pcap'))
    last = await timed([path.join(work, 'run.mjs'), dir])
    if (last.skipped !== null) throw new Error(`the IDS step was skipped: ${last.skipped}`)
    rounds.push(last.seconds)
  }
  const best = Math.min(...rounds)
  console.log(JSON.stringify({
    bench: 'ids', pcap_mib: +(statSync(pcap).size / 1024 / 1024).toFixed(1), rounds: rounds.map((s) => +s.toFixed(2)), best_s: +best.toFixed(2),
    target_s: 10, within: best <= 10, alerts: last.alerts, sids: last.sids, http: last.http, rules_loaded: last.rules, errors: last.errors
  }))
} finally {
  await cleanup()
}
