// What the decrypting proxy saw of a mitm=1 task, as a pcap Suricata can read: each connection of
// the guest the proxy decrypted (mitm/flows.jsonl, one record per exchange, written by
// resources/mitm/aviary_flows.py) becomes one TCP connection between the guest's real address and
// port and the server's real address and port, with its handshake, the exchanges' requests and
// responses as plain HTTP/1.1 in order, and its close. The IDS then sees the HTTPS a sample sent
// as the HTTP it was, on the same 5-tuple the capture shows encrypted (transparent mode; in
// reverse mode, the inetsim route, the server is the upstream the proxy used): its HTTP rules
// fire, and an alert names the connection the analyst finds in dump.pcap. (mitmproxy 8 writes no pcap of
// its own, and the capture's TLS cannot be decrypted by Suricata.)
//
// By hand, because no maintained npm package writes TCP/IP packets into a pcap; the layers are
// the plain ones (Ethernet II, IPv4 or IPv6, TCP with correct checksums). The bodies are those the
// addon kept (up to its AVIARY_FLOWS_BODY): Content-Length is set to what is there, and
// Transfer-Encoding dropped (the addon records bodies de-chunked). HTTP/2 exchanges are written as
// HTTP/1.1 with a Host header from their :authority.
import { existsSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { isIPv6 } from 'node:net'
import { flowRecords } from '../network/mitm-flows'

const MAX_FLOWS = 5_000
const MSS = 1400

type Json = Record<string, unknown>
const str = (v: unknown): string => (typeof v === 'string' ? v : '')
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

interface Exchange { time: number; request: Buffer; response: Buffer | null }
interface Conn { client: [string, number]; server: [string, number]; exchanges: Exchange[] }

const HOP = new Set(['transfer-encoding', 'content-length', 'connection', 'keep-alive'])

function httpMessage(startLine: string, headers: unknown, body: Buffer, host: string | null): Buffer {
  const lines = [startLine]
  let hasHost = false
  if (Array.isArray(headers)) {
    for (const h of headers.slice(0, 500)) {
      if (!Array.isArray(h) || typeof h[0] !== 'string' || typeof h[1] !== 'string') continue
      const name = h[0].replace(/[\r\n:]/g, '')
      if (name === '' || name.startsWith(':') || HOP.has(name.toLowerCase())) continue
      if (name.toLowerCase() === 'host') hasHost = true
      lines.push(`${name}: ${h[1].replace(/[\r\n]/g, ' ')}`)
    }
  }
  if (host !== null && !hasHost) lines.splice(1, 0, `Host: ${host}`)
  if (body.length > 0 || !startLine.startsWith('HTTP/')) lines.push(`Content-Length: ${body.length}`)
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body])
}

const b64 = (v: unknown): Buffer => Buffer.from(str(v), 'base64')

/** The decrypted connections of flows.jsonl (https exchanges only: plain HTTP is in the capture already). */
async function readConnections(flowsFile: string): Promise<Conn[]> {
  const conns = new Map<string, Conn>()
  let n = 0
  for await (const r of flowRecords(flowsFile)) {
    if (n >= MAX_FLOWS) break
    if (r.type !== 'flow' || r.scheme !== 'https' || r.request === null || typeof r.request !== 'object') continue
    const client = Array.isArray(r.client) ? r.client : []
    const server = Array.isArray(r.server) ? r.server : []
    const cip = str(client[0]); const cport = num(client[1])
    const sip = str(server[0]); const sport = num(server[1])
    if (cip === '' || sip === '' || cport === null || sport === null || isIPv6(cip) !== isIPv6(sip)) continue
    n++
    const req = r.request as Json
    const res = r.response !== null && typeof r.response === 'object' ? (r.response as Json) : null
    const method = str(r.method).replace(/[^A-Za-z-]/g, '').slice(0, 32) || 'GET'
    const target = str(r.path).replace(/[\s]/g, '%20').slice(0, 8192) || '/'
    const host = str(r.host).replace(/[\r\n\s]/g, '')
    const port = num(r.port)
    const request = httpMessage(`${method} ${target} HTTP/1.1`, req.headers, b64(req.body_b64), host === '' ? null : port !== null && port !== 443 ? `${host}:${port}` : host)
    const status = res !== null ? num(res.status) : null
    const response = res !== null && status !== null
      ? httpMessage(`HTTP/1.1 ${Math.trunc(status)} ${str(res.reason).replace(/[\r\n]/g, ' ').slice(0, 200)}`, res.headers, b64(res.body_b64), null)
      : null
    const key = `${cip}|${cport}|${sip}|${sport}`
    let c = conns.get(key)
    if (c === undefined) conns.set(key, c = { client: [cip, cport], server: [sip, sport], exchanges: [] })
    c.exchanges.push({ time: num(r.time) ?? 0, request, response })
  }
  return [...conns.values()]
}

// --- packets ---

function checksum(...parts: Uint8Array[]): number {
  let sum = 0
  for (const b of parts) {
    for (let i = 0; i + 1 < b.length; i += 2) sum += (b[i]! << 8) | b[i + 1]!
    if (b.length % 2 === 1) sum += b[b.length - 1]! << 8
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16)
  return ~sum & 0xffff
}

function ipBytes(ip: string): Buffer {
  if (!isIPv6(ip)) return Buffer.from(ip.split('.').map(Number))
  const [head = '', tail = ''] = ip.split('::')
  const h = head === '' ? [] : head.split(':')
  const t = tail === '' ? [] : tail.split(':')
  const groups = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h
  const out = Buffer.alloc(16)
  groups.forEach((g, i) => out.writeUInt16BE(Number.parseInt(g, 16) || 0, i * 2))
  return out
}

const FIN = 0x01; const SYN = 0x02; const PSH = 0x08; const ACK = 0x10

function tcpPacket(src: Buffer, dst: Buffer, sport: number, dport: number, seq: number, ack: number, flags: number, payload: Uint8Array): Buffer {
  const tcp = Buffer.alloc(20)
  tcp.writeUInt16BE(sport, 0); tcp.writeUInt16BE(dport, 2)
  tcp.writeUInt32BE(seq >>> 0, 4); tcp.writeUInt32BE(ack >>> 0, 8)
  tcp[12] = 5 << 4; tcp[13] = flags
  tcp.writeUInt16BE(65535, 14)
  const v6 = src.length === 16
  const len = 20 + payload.length
  const pseudo = v6 ? Buffer.alloc(40) : Buffer.alloc(12)
  src.copy(pseudo, 0); dst.copy(pseudo, v6 ? 16 : 4)
  if (v6) { pseudo.writeUInt32BE(len, 32); pseudo[39] = 6 } else { pseudo[9] = 6; pseudo.writeUInt16BE(len, 10) }
  tcp.writeUInt16BE(checksum(pseudo, tcp, payload), 16)
  let ip: Buffer
  if (v6) {
    ip = Buffer.alloc(40)
    ip[0] = 0x60; ip.writeUInt16BE(len, 4); ip[6] = 6; ip[7] = 64
    src.copy(ip, 8); dst.copy(ip, 24)
  } else {
    ip = Buffer.alloc(20)
    ip[0] = 0x45; ip.writeUInt16BE(20 + len, 2); ip[6] = 0x40; ip[8] = 64; ip[9] = 6
    src.copy(ip, 12); dst.copy(ip, 16)
    ip.writeUInt16BE(checksum(ip), 10)
  }
  const eth = Buffer.alloc(14)
  eth.writeUInt16BE(v6 ? 0x86dd : 0x0800, 12)
  return Buffer.concat([eth, ip, tcp, payload])
}

/** Writes the decrypted connections of `flowsFile` to `out`; how many connections it holds (0: no file written). */
export async function writeDecryptedPcap(flowsFile: string, out: string): Promise<{ flows: number }> {
  if (!existsSync(flowsFile)) return { flows: 0 }
  const conns = await readConnections(flowsFile)
  if (conns.length === 0) return { flows: 0 }
  // Packets of every connection, then in time order (a stable sort keeps each connection's order).
  const packets: { t: number; data: Buffer }[] = []
  for (const c of conns) {
    c.exchanges.sort((a, b) => a.time - b.time)
    const ci = ipBytes(c.client[0]); const si = ipBytes(c.server[0])
    const [cp, sp] = [c.client[1], c.server[1]]
    let cseq = 1_000; let sseq = 500_000
    let t = c.exchanges[0]!.time
    const tick = (): number => (t += 0.000_1)
    const toServer = (flags: number, payload: Uint8Array = Buffer.alloc(0)): void => {
      packets.push({ t: tick(), data: tcpPacket(ci, si, cp, sp, cseq, sseq, flags, payload) })
      cseq += payload.length + (flags & (SYN | FIN) ? 1 : 0)
    }
    const toClient = (flags: number, payload: Uint8Array = Buffer.alloc(0)): void => {
      packets.push({ t: tick(), data: tcpPacket(si, ci, sp, cp, sseq, cseq, flags, payload) })
      sseq += payload.length + (flags & (SYN | FIN) ? 1 : 0)
    }
    // The SYN carries no ACK number; the rest acknowledge what the other side sent.
    packets.push({ t: tick(), data: tcpPacket(ci, si, cp, sp, cseq, 0, SYN, Buffer.alloc(0)) })
    cseq += 1
    toClient(SYN | ACK)
    toServer(ACK)
    for (const x of c.exchanges) {
      if (x.time > t) t = x.time
      for (let i = 0; i < x.request.length; i += MSS) { toServer(PSH | ACK, x.request.subarray(i, i + MSS)); toClient(ACK) }
      if (x.response !== null) for (let i = 0; i < x.response.length; i += MSS) { toClient(PSH | ACK, x.response.subarray(i, i + MSS)); toServer(ACK) }
    }
    toServer(FIN | ACK)
    toClient(FIN | ACK)
    toServer(ACK)
  }
  packets.sort((a, b) => a.t - b.t)
  const fh = await open(out, 'w')
  try {
    const header = Buffer.alloc(24)
    header.writeUInt32LE(0xa1b2c3d4, 0); header.writeUInt16LE(2, 4); header.writeUInt16LE(4, 6)
    header.writeUInt32LE(262_144, 16); header.writeUInt32LE(1, 20)
    await fh.write(header)
    for (const p of packets) {
      const rec = Buffer.alloc(16)
      const sec = Math.floor(p.t)
      rec.writeUInt32LE(sec, 0); rec.writeUInt32LE(Math.min(999_999, Math.round((p.t - sec) * 1e6)), 4)
      rec.writeUInt32LE(p.data.length, 8); rec.writeUInt32LE(p.data.length, 12)
      await fh.write(Buffer.concat([rec, p.data]))
    }
  } finally {
    await fh.close()
  }
  return { flows: conns.length }
}
