// Real traffic for tests that need a pcap without a guest: a DNS server and an HTTP server on a
// loopback address of the test's own (127.x.y.z, all local on Linux; pick one no other test uses),
// a client that resolves names and fetches URLs through them, and real tcpdump on `lo` filtered
// to that address. The capture is what a guest's dump.pcap holds for the same exchanges.
import { spawn, type ChildProcess } from 'node:child_process'
import { createSocket } from 'node:dgram'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, request } from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import dnsPacket from 'dns-packet'

export interface LoopbackTraffic {
  /** Names the client resolves (every A query is answered with `answer`). */
  resolve: string[]
  answer: string
  /** URLs fetched from the HTTP server on `addr`:80, with their host as the Host header. */
  fetch: string[]
}

/** Runs the traffic on `addr` under tcpdump; the pcap's bytes. Needs root (ports 53 and 80, tcpdump). */
export async function captureLoopback(addr: string, traffic: LoopbackTraffic): Promise<Buffer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-lo-capture-'))
  const file = path.join(dir, 'dump.pcap')
  const dns = createSocket('udp4')
  const http = createServer((_req, res) => res.end('ok\n'))
  const tcpdump = spawn('tcpdump', ['-U', '-n', '-i', 'lo', '-w', file, '-Z', 'root', `host ${addr}`], { stdio: ['ignore', 'ignore', 'pipe'] })
  try {
    await new Promise<void>((resolve, reject) => {
      let err = ''
      tcpdump.stderr.on('data', (b: Buffer) => { err += b.toString(); if (err.includes('listening on')) resolve() })
      tcpdump.once('exit', (code) => reject(new Error(`tcpdump exited ${code}: ${err}`)))
    })
    dns.on('message', (msg, rinfo) => {
      const q = dnsPacket.decode(msg)
      const answers = (q.questions ?? []).filter((x) => x.type === 'A').map((x) => ({ type: 'A' as const, name: x.name, ttl: 60, data: traffic.answer }))
      dns.send(dnsPacket.encode({ type: 'response', id: q.id, flags: dnsPacket.RECURSION_DESIRED, questions: q.questions, answers }), rinfo.port, rinfo.address)
    })
    await new Promise<void>((resolve) => dns.bind(53, addr, resolve))
    await new Promise<void>((resolve) => http.listen(80, addr, resolve))

    const client = createSocket('udp4')
    try {
      for (const [i, name] of traffic.resolve.entries()) {
        const answered = new Promise<void>((resolve) => client.once('message', () => resolve()))
        client.send(dnsPacket.encode({ type: 'query', id: i + 1, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name }] }), 53, addr)
        await answered
      }
    } finally {
      client.close()
    }
    for (const url of traffic.fetch) {
      const u = new URL(url)
      await new Promise<void>((resolve, reject) => {
        const req = request({ host: addr, port: 80, path: `${u.pathname}${u.search}`, headers: { Host: u.host }, agent: false }, (res) => {
          res.resume()
          res.on('end', resolve)
        })
        req.on('error', reject)
        req.end()
      })
    }
    await new Promise((r) => setTimeout(r, 1500)) // libpcap hands over its last block after ≤ 1 s
    await stop(tcpdump)
    return readFileSync(file)
  } finally {
    await stop(tcpdump)
    dns.close()
    http.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await exited
}
