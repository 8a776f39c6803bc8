#!/usr/bin/env node
// Result-server throughput: `node bench/resultserver.bench.mjs [MiB] [rounds]` (default 1024 MiB,
// 5 rounds), as root. A network namespace `avrs` plays the guest behind a veth pair
// (10.201.0.1/24 host ↔ 10.201.0.2/24 guest). From inside it, `node sender.mjs` sends the data as
// a FILE upload to the result server (src/core/resultserver/result-server.ts bundled with esbuild,
// in its own process) and, as the baseline, the same bytes over the same veth to a plain Node TCP
// server piping into `cat > file`. Each transfer is timed by the sender from connect until the
// server closes the connection, which both do only once the file is written. Rounds alternate, each
// after a `sync`; the best of each is reported (and the ratio of medians). Prints one JSON line: MB/s (10^6
// bytes/s) of both, the ratio (target ≥ 0.8), the result server's peak RSS and CPU s per GiB.
// Cleans up the namespace, the servers and files, also when interrupted. --quick: 32 MiB, 1 round.
import { build } from 'esbuild'
import { execFileSync, spawn } from 'node:child_process'
import { rmSync, writeFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanup, made, onCleanup, positional, quick, tempDir, track } from './cleanup.mjs'

const MIB = Number(positional()[0] ?? (quick ? 32 : 1024))
const ROUNDS = Number(positional()[1] ?? (quick ? 1 : 5))
const BYTES = MIB * 1024 * 1024
const NS = 'avrs'
const HOST_IF = 'avrs-h'
const GUEST_IF = 'avrs-g'
const HOST_IP = '10.201.0.1'
const GUEST_IP = '10.201.0.2'

const ip = (...args) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })
const quietly = (fn) => { try { fn() } catch { /* already gone */ } }

function netnsUp() {
  netnsDown()
  ip('netns', 'add', NS)
  ip('link', 'add', HOST_IF, 'type', 'veth', 'peer', 'name', GUEST_IF)
  ip('link', 'set', GUEST_IF, 'netns', NS)
  ip('addr', 'add', `${HOST_IP}/24`, 'dev', HOST_IF)
  ip('link', 'set', HOST_IF, 'up')
  ip('-n', NS, 'addr', 'add', `${GUEST_IP}/24`, 'dev', GUEST_IF)
  ip('-n', NS, 'link', 'set', GUEST_IF, 'up')
  ip('-n', NS, 'link', 'set', 'lo', 'up')
}

function netnsDown() {
  quietly(() => ip('link', 'del', HOST_IF))
  quietly(() => ip('netns', 'del', NS))
}

// The guest side: sends `header` then BYTES bytes (a 16 MiB random block repeated, so the sender
// reads no disk), and prints the seconds from connect until the server closed the connection.
const SENDER = `
import net from 'node:net'
import { randomFillSync } from 'node:crypto'
const [host, port, headerB64, total] = process.argv.slice(2)
const block = randomFillSync(Buffer.alloc(16 * 1024 * 1024))
const t0 = process.hrtime.bigint()
const s = net.connect({ host, port: Number(port) }, async () => {
  s.write(Buffer.from(headerB64, 'base64'))
  let left = Number(total)
  while (left > 0) {
    const b = left >= block.length ? block : block.subarray(0, left)
    left -= b.length
    if (!s.write(b)) await new Promise((r) => s.once('drain', r))
  }
  s.end()
})
s.resume()
s.on('close', () => console.log(JSON.stringify({ seconds: Number(process.hrtime.bigint() - t0) / 1e9 })))
s.on('error', (e) => { console.error(e.message); process.exitCode = 1 })
`

// The result server in its own process, driven over IPC: one task registration per round.
const RS_SERVER = `
import { readFileSync } from 'node:fs'
const { ResultServer } = await import(process.argv[2])
const rs = new ResultServer({ limits: { uploadMaxSize: 4 * 1024 ** 3, taskMaxSize: 8 * 1024 ** 3 }, log: { info() {}, warn: (m) => console.error(m) } })
const port = await rs.listen(process.argv[3], 0)
process.send({ port })
process.on('message', async (m) => {
  if (m.dir) {
    const cpu0 = process.cpuUsage()
    rs.addTask(process.argv[4], { taskId: 1, dir: m.dir, onUpload: (u) => {
      const cpu = process.cpuUsage(cpu0)
      rs.removeTask(process.argv[4]).then(() => process.send({ uploaded: u, cpuSeconds: (cpu.user + cpu.system) / 1e6 }))
    } })
    process.send({ ready: true })
  } else if (m.stop) {
    await rs.stop()
    const hwm = /VmHWM:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))
    process.send({ rssMb: Number(hwm[1]) / 1024 }, () => process.exit(0))
  }
})
`

// The baseline: a plain Node TCP server piping each connection into \`cat > file\`.
const CAT_SERVER = `
import net from 'node:net'
import { openSync, closeSync } from 'node:fs'
import { spawn } from 'node:child_process'
let file = null
const server = net.createServer((socket) => {
  const fd = openSync(file, 'w')
  const cat = spawn('cat', [], { stdio: ['pipe', fd, 'inherit'] })
  closeSync(fd)
  socket.pipe(cat.stdin)
  cat.on('exit', () => socket.destroy())
})
server.listen({ host: process.argv[2], port: 0 }, () => process.send({ port: server.address().port }))
process.on('message', (m) => {
  if (m.file) { file = m.file; process.send({ ready: true }) } else if (m.stop) { server.close(); process.exit(0) }
})
`

function child(script, args) {
  const c = track(spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }), { graceMs: 5000 })
  const next = (key) => new Promise((resolve, reject) => {
    const onMsg = (m) => { if (key in m) { c.off('message', onMsg); c.off('exit', onExit); resolve(m) } }
    const onExit = (code) => reject(new Error(`${path.basename(script)} exited (${code}) while waiting for ${key}`))
    c.on('message', onMsg)
    c.once('exit', onExit)
  })
  return { c, next }
}

function sendFromGuest(work, port, header) {
  // Start each transfer with no dirty pages from the previous one, so rounds do not tax each other.
  execFileSync('sync')
  const out = execFileSync('ip', ['netns', 'exec', NS, process.execPath, path.join(work, 'sender.mjs'), HOST_IP, String(port),
    Buffer.from(header).toString('base64'), String(BYTES)]).toString()
  return JSON.parse(out).seconds
}

if (process.getuid?.() !== 0) {
  console.error('bench: needs root (ip netns)')
  process.exit(1)
}
const root = fileURLToPath(new URL('..', import.meta.url))
const work = tempDir('aviary-rsbench-')
try {
  onCleanup(netnsDown, `remove netns ${NS}`)
  made('netns', NS)
  const bundle = path.join(work, 'result-server.mjs')
  await build({ entryPoints: [path.join(root, 'src/core/resultserver/result-server.ts')], bundle: true, format: 'esm', platform: 'node', outfile: bundle })
  writeFileSync(path.join(work, 'sender.mjs'), SENDER)
  writeFileSync(path.join(work, 'rs-server.mjs'), RS_SERVER)
  writeFileSync(path.join(work, 'cat-server.mjs'), CAT_SERVER)
  netnsUp()

  const rsChild = child(path.join(work, 'rs-server.mjs'), [bundle, HOST_IP, GUEST_IP])
  const rsPort = (await rsChild.next('port')).port
  const catChild = child(path.join(work, 'cat-server.mjs'), [HOST_IP])
  const catPort = (await catChild.next('port')).port

  const rs = []
  const cat = []
  const rsCpu = []
  for (let round = 0; round < ROUNDS; round++) {
    // result server
    const dir = path.join(work, `task-${round}`)
    execFileSync('mkdir', ['-p', path.join(dir, 'files')])
    const ready = rsChild.next('ready')
    rsChild.c.send({ dir })
    await ready
    const uploaded = rsChild.next('uploaded')
    const rsSeconds = sendFromGuest(work, rsPort, 'FILE 2\nfiles/big.bin\nC:\\big.bin\n1234\n')
    const { uploaded: u, cpuSeconds } = await uploaded
    rsCpu.push(cpuSeconds)
    if (u.bytes !== BYTES || statSync(path.join(dir, 'files/big.bin')).size !== BYTES) throw new Error(`result server stored ${u.bytes} of ${BYTES} bytes`)
    rmSync(dir, { recursive: true })
    rs.push(BYTES / 1e6 / rsSeconds)
    // baseline
    const file = path.join(work, `cat-${round}.bin`)
    const catReady = catChild.next('ready')
    catChild.c.send({ file })
    await catReady
    const catSeconds = sendFromGuest(work, catPort, '')
    if (statSync(file).size !== BYTES) throw new Error('cat baseline stored a different size')
    rmSync(file)
    cat.push(BYTES / 1e6 / catSeconds)
  }
  const stopped = rsChild.next('rssMb')
  rsChild.c.send({ stop: true })
  const { rssMb } = await stopped
  const best = (xs) => Math.max(...xs)
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  console.log(JSON.stringify({
    bench: 'resultserver', mib: MIB, rounds: ROUNDS, node: process.version,
    resultServerMBps: Math.round(best(rs)), catBaselineMBps: Math.round(best(cat)), ratio: Number((best(rs) / best(cat)).toFixed(2)),
    medianRatio: Number((median(rs) / median(cat)).toFixed(2)), target: 0.8, serverPeakRssMb: Math.round(rssMb),
    serverCpuSecondsPerGiB: Number((median(rsCpu) * 1024 / MIB).toFixed(2)),
    allRounds: { resultServer: rs.map(Math.round), cat: cat.map(Math.round) }
  }))
} finally {
  await cleanup()
}
