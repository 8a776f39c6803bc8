// TCP and UDP flows of the capture. Cuckoo 2 lists, per unique 4-tuple (either direction), the
// first packet carrying data: {src, sport, dst, dport, offset, time}; Aviary adds the payload
// bytes each way (bytes_sent from src, bytes_received by src; retransmissions included, as on the
// wire) and the packet count. TCP data is reassembled per direction (reassembly.ts) and handed to
// the parser its first bytes call for: HTTP, a TLS hello, or DNS over TCP (port 53). Data-less TCP
// packets that repeat the same seq/ack are counted for Cuckoo's dead_hosts. Per-flow state is a
// few numbers plus the parsers' bounded buffers, which are dropped as soon as a direction ends.
import { DnsCollector } from './dns'
import { HttpStream, looksLikeHttp, type HttpRequest } from './http'
import { TcpDirection, type StreamSink } from './reassembly'
import { TlsHelloStream, looksLikeTls } from './tls'
import { toPrintable } from './printable'
import { Closed, Type, type Static } from '../schema'

export const FlowEntrySchema = Closed({
  src: Type.String(),
  sport: Type.Integer(),
  dst: Type.String(),
  dport: Type.Integer(),
  /** Byte offset of the flow's first data packet in the pcap. */
  offset: Type.Integer(),
  /** Seconds since the capture's first packet. */
  time: Type.Number(),
  bytes_sent: Type.Integer(),
  bytes_received: Type.Integer(),
  packets: Type.Integer()
})
export type FlowEntry = Static<typeof FlowEntrySchema>

export const HttpEntrySchema = Closed({
  count: Type.Integer(),
  host: Type.String(),
  port: Type.Integer(),
  /** The request head as printable text. */
  data: Type.String(),
  /** The full URL (Cuckoo's `uri`); `path` is the request's path. */
  uri: Type.String(),
  body: Type.String(),
  path: Type.String(),
  /** "" when the request had none. */
  'user-agent': Type.String(),
  version: Type.String(),
  method: Type.String(),
  /** Status code of the response to the first of these requests, where the response was captured. */
  status: Type.Optional(Type.Integer())
})
export type HttpEntry = Static<typeof HttpEntrySchema>

export const TlsEntrySchema = Closed({
  src: Type.String(),
  sport: Type.Integer(),
  dst: Type.String(),
  dport: Type.Integer(),
  sni: Type.String(),
  /** Highest version the ClientHello offers (supported_versions included), e.g. "TLS 1.3". */
  version: Type.String(),
  /** From the ServerHello, where captured (Cuckoo's fields, which dumptls uses). */
  server_version: Type.Optional(Type.String()),
  server_random: Type.Optional(Type.String()),
  session_id: Type.Optional(Type.String())
})
export type TlsEntry = Static<typeof TlsEntrySchema>

interface Endpoint { ip: string; port: number }

interface Flow {
  /** Endpoint 0 sent the first packet we saw of this flow. */
  ends: [Endpoint, Endpoint]
  entry: FlowEntry | null
  /** TCP: per direction (0 = from ends[0]). */
  dirs: [TcpDirection, TcpDirection] | null
  lastSeqAck: [string, string]
  /** Data seen from this direction (its destination is alive, for dead_hosts). */
  alive: [boolean, boolean]
  requests: [HttpEntry[], HttpEntry[]]
  methods: [string[], string[]]
  statuses: [number[], number[]]
  tls: TlsEntry | null
}

/** DNS over TCP: length-prefixed messages, at most DNS_TCP_CAP bytes pending. */
const DNS_TCP_CAP = 64 * 1024

export class FlowTable {
  readonly tcp: FlowEntry[] = []
  readonly udp: FlowEntry[] = []
  readonly tls: TlsEntry[] = []
  private readonly flows = new Map<string, Flow>()
  private readonly http = new Map<string, HttpEntry>()
  private readonly deadCounts = new Map<string, number>()
  private readonly alive = new Set<string>()

  constructor(private readonly dns: DnsCollector) {}

  private flow(proto: string, src: string, sport: number, dst: string, dport: number): [Flow, 0 | 1] {
    const fwd = src < dst || (src === dst && sport <= dport)
    const key = fwd ? `${proto}${src}|${sport}|${dst}|${dport}` : `${proto}${dst}|${dport}|${src}|${sport}`
    let f = this.flows.get(key)
    if (!f) {
      f = { ends: [{ ip: src, port: sport }, { ip: dst, port: dport }], entry: null, dirs: null, lastSeqAck: ['', ''], alive: [false, false],
        requests: [[], []], methods: [[], []], statuses: [[], []], tls: null }
      if (proto === 't') f.dirs = [new TcpDirection((b) => this.sink(f as Flow, 0, b)), new TcpDirection((b) => this.sink(f as Flow, 1, b))]
      this.flows.set(key, f)
    }
    const dir = f.ends[0].ip === src && f.ends[0].port === sport ? 0 : 1
    return [f, dir]
  }

  private count(list: FlowEntry[], f: Flow, dir: 0 | 1, offset: number, time: number, bytes: number): void {
    if (!f.entry) {
      const [from, to] = dir === 0 ? f.ends : [f.ends[1], f.ends[0]]
      f.entry = { src: from.ip, sport: from.port, dst: to.ip, dport: to.port, offset, time, bytes_sent: 0, bytes_received: 0, packets: 0 }
      list.push(f.entry)
    }
    const e = f.entry
    e.packets++
    if (e.src === f.ends[dir].ip && e.sport === f.ends[dir].port) e.bytes_sent += bytes
    else e.bytes_received += bytes
  }

  tcpPacket(src: string, sport: number, dst: string, dport: number, seq: number, ack: number, flags: number,
    payload: Buffer, announced: number, offset: number, time: number): void {
    const [f, dir] = this.flow('t', src, sport, dst, dport)
    if (announced > 0) {
      this.count(this.tcp, f, dir, offset, time, announced)
      if (!f.alive[dir]) { f.alive[dir] = true; this.alive.add(`${dst}|${dport}`) }
    } else {
      const sa = `${seq}|${ack}`
      if (f.lastSeqAck[dir] === sa) {
        const host = `${dst}|${dport}`
        this.deadCounts.set(host, (this.deadCounts.get(host) ?? 1) + 1)
      }
      f.lastSeqAck[dir] = sa
    }
    const d = f.dirs?.[dir]
    if (d?.active) {
      d.segment(seq, (flags & 0x02) !== 0, payload, announced)
      if (flags & 0x05) d.end() // FIN or RST: this direction is over
      // Both directions done: drop the reassembly state, keep the counters.
      if (f.dirs && !f.dirs[0].active && !f.dirs[1].active) f.dirs = null
    }
  }

  udpPacket(src: string, sport: number, dst: string, dport: number, payload: Buffer, announced: number, offset: number, time: number): void {
    if (announced === 0) return
    const [f, dir] = this.flow('u', src, sport, dst, dport)
    this.count(this.udp, f, dir, offset, time, announced)
    if (sport === 53 || dport === 53 || sport === 5353 || dport === 5353) this.dns.add(payload, dst)
  }

  /** The parser for the bytes one direction starts with. */
  private sink(f: Flow, dir: 0 | 1, first: Buffer): StreamSink | null {
    const from = f.ends[dir]
    const to = f.ends[dir === 0 ? 1 : 0]
    if (from.port === 53 || to.port === 53) return this.dnsSink(to.ip)
    if (looksLikeTls(first)) {
      const s = new TlsHelloStream(
        (h) => {
          f.tls ??= this.addTls(from, to)
          f.tls.sni = h.sni
          f.tls.version = h.version
        },
        (h) => {
          f.tls ??= this.addTls(to, from)
          f.tls.server_version = h.version
          f.tls.server_random = h.server_random
          f.tls.session_id = h.session_id
        })
      return { push: (b) => s.push(b), finish: () => undefined }
    }
    if (looksLikeHttp(first)) {
      const s = new HttpStream({
        onRequest: (r) => this.addHttp(f, dir, r, to.port),
        // Interim answers (100 Continue) do not answer a request; 101 ends HTTP on the connection.
        onResponse: (r) => { if (r.status >= 200 || r.status === 101) f.statuses[dir].push(r.status) },
        requestMethod: (n) => f.methods[dir === 0 ? 1 : 0][n]
      })
      return { push: (b) => s.push(b), finish: () => s.finish(), gap: () => s.gap() }
    }
    return null
  }

  private dnsSink(server: string): StreamSink {
    let pending = Buffer.alloc(0)
    return {
      push: (b) => {
        pending = pending.length ? Buffer.concat([pending, b]) : Buffer.from(b)
        const used = this.dns.addTcpStream(pending, server)
        pending = Buffer.from(pending.subarray(used))
        return pending.length <= DNS_TCP_CAP
      },
      finish: () => { pending = Buffer.alloc(0) }
    }
  }

  private addTls(client: Endpoint, server: Endpoint): TlsEntry {
    const e: TlsEntry = { src: client.ip, sport: client.port, dst: server.ip, dport: server.port, sni: '', version: '' }
    this.tls.push(e)
    return e
  }

  /** Cuckoo's `_add_http`: identical requests are one entry with a count. */
  private addHttp(f: Flow, dir: 0 | 1, r: HttpRequest, port: number): void {
    f.methods[dir].push(r.method)
    const data = toPrintable(r.head)
    const body = toPrintable(r.body)
    const key = `${port}\0${data}\0${body}`
    let e = this.http.get(key)
    if (e) {
      e.count++
    } else {
      const host = r.headers.get('host') ?? ''
      let netloc = host
      if (port !== 80 && !netloc.includes(':')) netloc += `:${port}`
      // urlunparse(("http", netloc, path, ...)): a path without a leading slash gets one.
      const path = r.path
      const url = netloc && path && !path.startsWith('/') ? `/${path}` : path
      // Cuckoo writes "user-agent" always, "" for a request without one (MISP's cuckooimport reads it unguarded).
      const ua = r.headers.get('user-agent')
      e = { count: 1, host: toPrintable(Buffer.from(host, 'latin1')), port, data, uri: toPrintable(Buffer.from(`http://${netloc}${url}`, 'latin1')),
        body, path: toPrintable(Buffer.from(path, 'latin1')), 'user-agent': ua === undefined ? '' : toPrintable(Buffer.from(ua, 'latin1')), version: r.version, method: r.method }
      this.http.set(key, e)
    }
    f.requests[dir].push(e)
  }

  /** End of capture: flush the parsers, pair HTTP requests with responses, list dead hosts. */
  finish(): { http: HttpEntry[]; deadHosts: [string, number][] } {
    for (const f of this.flows.values()) {
      if (f.dirs) { f.dirs[0].end(); f.dirs[1].end() }
      for (const dir of [0, 1] as const) {
        const statuses = f.statuses[dir === 0 ? 1 : 0]
        f.requests[dir].forEach((e, i) => { if (e.status === undefined && statuses[i] !== undefined) e.status = statuses[i] })
      }
    }
    const deadHosts: [string, number][] = []
    for (const [host, n] of this.deadCounts) {
      if (n < 3 || this.alive.has(host)) continue
      const i = host.lastIndexOf('|')
      deadHosts.push([host.slice(0, i), Number(host.slice(i + 1))])
    }
    return { http: [...this.http.values()], deadHosts }
  }
}
