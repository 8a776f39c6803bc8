#!/usr/bin/env node
// Network processing of a big pcap: `node bench/network.bench.mjs [MiB] [rounds]` (default 100 MiB,
// 3 rounds). Synthesizes a valid Ethernet pcap of that size with realistic traffic (per session: a
// DNS query and its CNAME+A answer over UDP, then either an HTTP/1.1 GET with a 10-40 KB response
// in MSS-sized segments, or a TLS connection with a real-shaped ClientHello carrying SNI, a
// ServerHello and application data; handshakes, ACKs and FINs included), then times
// analyzePcap (src/core/processing/network, bundled with esbuild, in its own process) against
// `tshark -r FILE -T fields -e frame.number -e ip.src -e ip.dst -e tcp.srcport -e tcp.dstport
// -e dns.qry.name -e http.request.uri -e tls.handshake.extensions_server_name` over the same file.
// Both are timed as whole processes (wall clock, startup included) with /usr/bin/time giving their
// peak RSS; the best round of each is kept. Prints one JSON line: sizes, seconds, the ratio
// (analyzePcap / tshark, target ≤ 1.0), peak RSS of each, and what analyzePcap found (a sanity check
// that it decoded the traffic). Cleans up its temp folder and children, also when interrupted.
// --quick: a 4 MiB pcap, 1 round.
import { build } from 'esbuild'
import { spawn } from 'node:child_process'
import { createWriteStream, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import dnsPacket from 'dns-packet'
import { cleanup, positional, quick, tempDir, track } from './cleanup.mjs'

const MIB = Number(positional()[0] ?? (quick ? 4 : 100))
const ROUNDS = Number(positional()[1] ?? (quick ? 1 : 3))
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TSHARK_FIELDS = ['frame.number', 'ip.src', 'ip.dst', 'tcp.srcport', 'tcp.dstport', 'dns.qry.name', 'http.request.uri',
  'tls.handshake.extensions_server_name']

// ---- pcap synthesis -------------------------------------------------------------------------
const MAC = Buffer.from('020000000002020000000001', 'hex')
let tsUsec = 1_700_000_000n * 1_000_000n
const ip4 = (s) => Buffer.from(s.split('.').map(Number))

function frame(src, dst, proto, sport, dport, seq, ack, flags, payload) {
  const l4len = proto === 6 ? 20 : 8
  const b = Buffer.alloc(14 + 20 + l4len + payload.length)
  MAC.copy(b, 0); b.writeUInt16BE(0x0800, 12)
  b[14] = 0x45; b.writeUInt16BE(20 + l4len + payload.length, 16); b[22] = 64; b[23] = proto
  ip4(src).copy(b, 26); ip4(dst).copy(b, 30)
  b.writeUInt16BE(sport, 34); b.writeUInt16BE(dport, 36)
  if (proto === 6) {
    b.writeUInt32BE(seq >>> 0, 38); b.writeUInt32BE(ack >>> 0, 42); b[46] = 0x50; b[47] = flags; b.writeUInt16BE(64240, 48)
  } else {
    b.writeUInt16BE(8 + payload.length, 38)
  }
  payload.copy(b, 14 + 20 + l4len)
  return b
}

function record(data) {
  tsUsec += 137n
  const h = Buffer.alloc(16)
  h.writeUInt32LE(Number(tsUsec / 1_000_000n), 0); h.writeUInt32LE(Number(tsUsec % 1_000_000n), 4)
  h.writeUInt32LE(data.length, 8); h.writeUInt32LE(data.length, 12)
  return [h, data]
}

function clientHello(sni) {
  const ext = []
  const name = Buffer.from(sni)
  const sniExt = Buffer.alloc(9 + name.length)
  sniExt.writeUInt16BE(0, 0); sniExt.writeUInt16BE(5 + name.length, 2); sniExt.writeUInt16BE(3 + name.length, 4)
  sniExt[6] = 0; sniExt.writeUInt16BE(name.length, 7); name.copy(sniExt, 9)
  ext.push(sniExt, Buffer.from('002b0005040304030300', 'hex').subarray(0, 9), Buffer.from('000a00080006001d00170018', 'hex'))
  const pad = Buffer.alloc(4 + 300); pad.writeUInt16BE(21, 0); pad.writeUInt16BE(300, 2); ext.push(pad)
  const exts = Buffer.concat(ext)
  const ciphers = Buffer.alloc(2 + 32); ciphers.writeUInt16BE(32, 0); for (let i = 0; i < 16; i++) ciphers.writeUInt16BE(0x1301 + i, 2 + i * 2)
  const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32, 7), Buffer.from([32]), Buffer.alloc(32, 9), ciphers, Buffer.from([1, 0]),
    Buffer.from([exts.length >> 8, exts.length & 0xff]), exts])
  const hs = Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 0xff]), body])
  return Buffer.concat([Buffer.from([0x16, 3, 1, hs.length >> 8, hs.length & 0xff]), hs])
}

function serverHello() {
  const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32, 5), Buffer.from([32]), Buffer.alloc(32, 9), Buffer.from([0x13, 0x01, 0]),
    Buffer.from('0006002b00020304', 'hex')])
  const hs = Buffer.concat([Buffer.from([2, 0, body.length >> 8, body.length & 0xff]), body])
  return Buffer.concat([Buffer.from([0x16, 3, 3, hs.length >> 8, hs.length & 0xff]), hs, Buffer.alloc(2800, 0x17)])
}

function* session(i) {
  const client = `10.0.${(i >> 8) & 255}.${(i & 255) || 1}`
  const server = `93.${184 + (i % 50)}.${(i >> 3) & 255}.${(i % 200) + 20}`
  const name = `host${i}.example${i % 97}.com`
  const sport = 20000 + (i % 40000)
  const q = dnsPacket.encode({ type: 'query', id: i & 0xffff, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name }] })
  const r = dnsPacket.encode({ type: 'response', id: i & 0xffff, flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
    questions: [{ type: 'A', name }], answers: [{ type: 'CNAME', name, ttl: 60, data: `cdn${i % 13}.example.net` },
      { type: 'A', name: `cdn${i % 13}.example.net`, ttl: 60, data: server }] })
  yield frame(client, '10.0.0.1', 17, 30000 + (i % 30000), 53, 0, 0, 0, q)
  yield frame('10.0.0.1', client, 17, 53, 30000 + (i % 30000), 0, 0, 0, r)
  const tls = i % 3 === 0
  const dport = tls ? 443 : 80
  let cs = 1000 + i * 7, ss = 5000 + i * 11
  const c2s = (flags, data = Buffer.alloc(0)) => { const f = frame(client, server, 6, sport, dport, cs, ss, flags, data); cs += data.length; return f }
  const s2c = (flags, data = Buffer.alloc(0)) => { const f = frame(server, client, 6, dport, sport, ss, cs, flags, data); ss += data.length; return f }
  yield frame(client, server, 6, sport, dport, cs - 1, 0, 0x02, Buffer.alloc(0))
  yield frame(server, client, 6, dport, sport, ss - 1, cs, 0x12, Buffer.alloc(0))
  yield c2s(0x10)
  let body
  if (tls) {
    yield c2s(0x18, clientHello(name))
    yield s2c(0x10)
    const sh = serverHello()
    yield s2c(0x10, sh.subarray(0, 1448)); yield s2c(0x18, sh.subarray(1448))
    yield c2s(0x10)
    body = Buffer.alloc(14000 + (i % 20) * 1000, 0x17)
  } else {
    yield c2s(0x18, Buffer.from(`GET /files/${i}/index.html?session=${i * 31} HTTP/1.1\r\nHost: ${name}\r\n` +
      'User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AviaryBench/1.0\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n'))
    const size = 10000 + (i % 30) * 1000
    body = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: ${size}\r\n\r\n`), Buffer.alloc(size, 0x61)])
  }
  for (let o = 0, n = 0; o < body.length; o += 1448, n++) {
    yield s2c(0x18, body.subarray(o, o + 1448))
    if (n % 2 === 1) yield c2s(0x10)
  }
  // FINs take one sequence number each.
  yield c2s(0x11); cs += 1
  yield s2c(0x11); ss += 1
  yield c2s(0x10)
}

async function synthesize(file, bytes) {
  const out = createWriteStream(file)
  const gh = Buffer.alloc(24)
  gh.writeUInt32LE(0xa1b2c3d4, 0); gh.writeUInt16LE(2, 4); gh.writeUInt16LE(4, 6); gh.writeUInt32LE(262144, 16); gh.writeUInt32LE(1, 20)
  let written = 24
  let packets = 0
  let sessions = 0
  let batch = [gh]
  while (written < bytes) {
    for (const f of session(sessions)) { const [h, d] = record(f); batch.push(h, d); written += 16 + d.length; packets++ }
    sessions++
    if (batch.length > 4096) { if (!out.write(Buffer.concat(batch))) await new Promise((r) => out.once('drain', r)); batch = [] }
  }
  out.end(Buffer.concat(batch))
  await new Promise((r) => out.once('close', r))
  return { packets, sessions }
}

// ---- timing -------------------------------------------------------------------------------------
/** Runs a command under /usr/bin/time; wall seconds (measured here), peak RSS (KiB) and its stdout. */
function timed(cmd, args, keepStdout) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint()
    const p = track(spawn('/usr/bin/time', ['-f', '%M', cmd, ...args], { stdio: ['ignore', keepStdout ? 'pipe' : 'ignore', 'pipe'], detached: true }), { group: true })
    let out = ''
    let err = ''
    p.stdout?.on('data', (b) => { out += b })
    p.stderr.on('data', (b) => { err += b })
    p.once('exit', (code) => {
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9
      if (code !== 0) return reject(new Error(`${cmd} exited ${code}: ${err.slice(-500)}`))
      resolve({ seconds, rssKiB: Number(err.trim().split('\n').pop()), out })
    })
  })
}

// The runner also reports the longest stretch analyzePcap kept the event loop busy: processing runs
// in the service's process, so this is how long an API request can wait behind it.
const RUNNER = `
import { analyzePcap } from './network.mjs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
const h = monitorEventLoopDelay({ resolution: 5 })
h.enable()
const r = await analyzePcap(process.argv[2])
h.disable()
console.log(JSON.stringify({ maxEventLoopDelayMs: Math.round(h.max / 1e6), tcp: r.tcp.length, udp: r.udp.length, http: r.http.length, tls: r.tls.length, dns: r.dns.length,
  domains: r.domains.length, hosts: r.hosts.length, tlsWithSni: r.tls.filter((t) => t.sni).length }))
`

async function main() {
  const work = tempDir('aviary-network-bench-')
  try {
    const pcap = path.join(work, 'big.pcap')
    const gen = await synthesize(pcap, MIB * 1024 * 1024)
    await build({ entryPoints: [path.join(root, 'src/core/processing/network/index.ts')], bundle: true, format: 'esm', platform: 'node',
      outfile: path.join(work, 'network.mjs'), logLevel: 'error',
      // dns-packet is CommonJS and requires Node built-ins: give the ESM bundle a require().
      banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" } })
    writeFileSync(path.join(work, 'run.mjs'), RUNNER)
    const ours = []
    const theirs = []
    let found
    for (let i = 0; i < ROUNDS; i++) {
      const a = await timed(process.execPath, [path.join(work, 'run.mjs'), pcap], true)
      found = JSON.parse(a.out)
      ours.push(a)
      theirs.push(await timed('tshark', ['-r', pcap, '-n', '-T', 'fields', ...TSHARK_FIELDS.flatMap((f) => ['-e', f])], false))
    }
    const best = (l) => l.reduce((x, y) => (y.seconds < x.seconds ? y : x))
    const a = best(ours)
    const t = best(theirs)
    console.log(JSON.stringify({
      bench: 'network', pcapMiB: Math.round(statSync(pcap).size / 1048576), packets: gen.packets, sessions: gen.sessions, rounds: ROUNDS,
      analyzePcapS: Number(a.seconds.toFixed(2)), tsharkS: Number(t.seconds.toFixed(2)), ratio: Number((a.seconds / t.seconds).toFixed(3)),
      analyzePcapPeakRssMiB: Math.round(Math.max(...ours.map((x) => x.rssKiB)) / 1024),
      tsharkPeakRssMiB: Math.round(Math.max(...theirs.map((x) => x.rssKiB)) / 1024),
      found
    }))
  } finally {
    await cleanup()
  }
}

await main()
