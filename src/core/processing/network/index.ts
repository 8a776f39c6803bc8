// Network analysis of an analysis' dump.pcap: Cuckoo 2's `network` report key (Cuckoo 2.0.7's cuckoo/processing/network.py,
// processing/network.py `Pcap`), computed in one streaming pass over the file with flat memory.
// pcap.ts reads records, decode.ts the link/IP/transport layers, flows.ts the TCP/UDP flows and
// the TCP stream parsers (http.ts, tls.ts, DNS over TCP), dns.ts the DNS messages. Differences from
// Cuckoo, on purpose: `domains[].ip` comes from the DNS answers in the capture (never resolved on
// the host); `tls` entries carry the ClientHello's SNI and version (plus Cuckoo's server_random and
// session_id from the ServerHello); flows carry byte and packet counts; HTTP requests are parsed
// from the reassembled stream (not packet by packet) with the response status where captured;
// IPv6 private ranges (link-local, ULA, multicast, loopback) are private too.
import { existsSync } from 'node:fs'
import { decodePacket, newDecoded, LINKTYPES, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP } from './decode'
import { DnsCollector, DnsEntrySchema, DomainEntrySchema } from './dns'
import { FlowEntrySchema, FlowTable, HttpEntrySchema, TlsEntrySchema } from './flows'
import { HttpExEntrySchema } from './mitm-flows'
import { Closed, Type, type Static } from '../schema'
import { PcapFormatError, readPcap, type PcapHeader } from './pcap'
import { isPrivateIp } from './private-ip'
import { toPrintable } from './printable'

export { PcapFormatError } from './pcap'
export type { FlowEntry, HttpEntry, TlsEntry } from './flows'
export type { DnsEntry, DnsAnswer, DomainEntry } from './dns'
export type { HttpExEntry } from './mitm-flows'

export const IcmpEntrySchema = Closed({ src: Type.String(), dst: Type.String(), type: Type.Integer(), data: Type.String() })
export type IcmpEntry = Static<typeof IcmpEntrySchema>

/** The report's `network` key. */
export const NetworkSchema = Closed({
  pcap_sha256: Type.String(),
  hosts: Type.Array(Type.String()),
  domains: Type.Array(DomainEntrySchema),
  dns: Type.Array(DnsEntrySchema),
  dns_servers: Type.Array(Type.String()),
  http: Type.Array(HttpEntrySchema),
  tls: Type.Array(TlsEntrySchema),
  tcp: Type.Array(FlowEntrySchema),
  udp: Type.Array(FlowEntrySchema),
  icmp: Type.Array(IcmpEntrySchema),
  /** [ip, port] pairs that only ever saw repeated connection attempts. */
  dead_hosts: Type.Array(Type.Tuple([Type.String(), Type.Integer()])),
  /** Decrypted by the proxy when the task asked for it (mitm-flows.ts); empty otherwise. */
  http_ex: Type.Array(HttpExEntrySchema),
  https_ex: Type.Array(HttpExEntrySchema),
  /** What the proxy reported besides flows: handshakes the guest refused. */
  mitm: Type.Array(Type.String()),
  /** Cuckoo keys Aviary does not fill (kept so consumers find them). */
  smtp: Type.Array(Type.Unknown()),
  irc: Type.Array(Type.Unknown())
})
export type NetworkReport = Static<typeof NetworkSchema>

export interface AnalyzePcapOptions {
  /**
   * Cuckoo's safelist: IP addresses (packets to them are skipped) and domain names (their DNS
   * queries are left out and the addresses they resolve to are not reported as hosts).
   * A domain entry also covers its subdomains.
   */
  safelist?: string[]
  /** Where to say what was skipped (the processing context's log). */
  log?(msg: string): void
}

export function emptyNetworkReport(): NetworkReport {
  return { pcap_sha256: '', hosts: [], domains: [], dns: [], dns_servers: [], http: [], tls: [], tcp: [], udp: [], icmp: [],
    dead_hosts: [], http_ex: [], https_ex: [], mitm: [], smtp: [], irc: [] }
}

const IP_LIKE = /^[0-9.]+$|:/

/**
 * The `network` key for `file`. A missing pcap (capture off) gives the empty report, as in Cuckoo;
 * a file that is not a classic pcap (empty, garbage, pcapng) or uses an unknown link type rejects
 * with a PcapFormatError saying so.
 */
export async function analyzePcap(file: string, o: AnalyzePcapOptions = {}): Promise<NetworkReport> {
  if (!existsSync(file)) return emptyNetworkReport()
  const safeIps = new Set<string>()
  const safeDomains: string[] = []
  for (const s of o.safelist ?? []) {
    if (IP_LIKE.test(s)) safeIps.add(s)
    else safeDomains.push(s.toLowerCase().replace(/\.$/, ''))
  }
  const isSafeDomain = (name: string): boolean => {
    const n = name.toLowerCase()
    return safeDomains.some((d) => n === d || n.endsWith(`.${d}`))
  }
  const safelistedAnswers = new Set<string>()
  const dns = new DnsCollector(isSafeDomain, (ip) => safelistedAnswers.add(ip))
  const flows = new FlowTable(dns)
  const hosts: string[] = []
  const seenDst = new Set<string>()
  const icmp: IcmpEntry[] = []
  const d = newDecoded()
  let linktype = -1
  let firstSec = -1
  let firstNsec = 0

  const onHeader = (h: PcapHeader): void => {
    if (!(h.linktype in LINKTYPES)) {
      throw new PcapFormatError(`unsupported pcap link type ${h.linktype}: supported are ${Object.entries(LINKTYPES).map(([k, v]) => `${k} (${v})`).join(', ')}`)
    }
    linktype = h.linktype
  }
  const onPacket = (b: Buffer, offset: number, sec: number, nsec: number): void => {
    if (firstSec < 0) { firstSec = sec; firstNsec = nsec }
    // One hostile packet must not cost the whole report (Cuckoo too skips packets that fail).
    try { packet(b, offset, sec, nsec) } catch { malformed++ }
  }
  let malformed = 0
  const packet = (b: Buffer, offset: number, sec: number, nsec: number): void => {
    if (!decodePacket(linktype, b, d)) return
    if (safeIps.has(d.dst)) return
    if (!seenDst.has(d.dst)) {
      seenDst.add(d.dst)
      if (!isPrivateIp(d.dst) && !safelistedAnswers.has(d.dst)) hosts.push(d.dst)
    }
    if (!d.transport) return
    const time = sec - firstSec + (nsec - firstNsec) / 1e9
    const payload = b.subarray(d.payloadStart, d.payloadEnd)
    switch (d.proto) {
      case PROTO_TCP:
        flows.tcpPacket(d.src, d.sport, d.dst, d.dport, d.seq, d.ack, d.flags, payload, d.payloadLen, offset, time)
        break
      case PROTO_UDP:
        flows.udpPacket(d.src, d.sport, d.dst, d.dport, payload, d.payloadLen, offset, time)
        break
      case PROTO_ICMP:
        icmp.push({ src: d.src, dst: d.dst, type: d.icmpType, data: toPrintable(payload) })
        break
      case PROTO_ICMPV6:
        // Echo only: neighbour discovery and router solicitations are the stack's own chatter.
        if (d.icmpType === 128 || d.icmpType === 129) icmp.push({ src: d.src, dst: d.dst, type: d.icmpType, data: toPrintable(payload) })
        break
    }
  }

  const read = await readPcap(file, onHeader, onPacket)
  if (malformed > 0) o.log?.(`network: ${malformed} malformed packets skipped`)
  const { http, deadHosts } = flows.finish()
  return {
    pcap_sha256: read.sha256,
    hosts: hosts.filter((h) => !safelistedAnswers.has(h)),
    domains: dns.domainList(),
    dns: dns.dns(),
    dns_servers: dns.dnsServers(),
    http,
    tls: flows.tls,
    tcp: flows.tcp,
    udp: flows.udp,
    icmp,
    dead_hosts: deadHosts,
    http_ex: [],
    https_ex: [],
    smtp: [],
    irc: [],
    mitm: []
  }
}
