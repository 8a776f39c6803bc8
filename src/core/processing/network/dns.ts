// DNS of the capture as Cuckoo 2 reports it (processing/network.py `_add_dns`): every DNS message
// (UDP on port 53 or 5353, and TCP on port 53 with its 2-byte length prefix) gives
// {request, type, answers[{type, data}]} merged per (type, request); query destinations are the
// DNS servers; every requested name (except *.windows.com and *.in-addr.arpa) is a domain, whose
// IP is the first A/AAAA answer seen for it in the capture (never resolved on the host). Message
// decoding is dns-packet's; only the mapping to Cuckoo's shapes is here.
import dnsPacket from 'dns-packet'
import { Closed, Type, type Static } from '../schema'

export const DnsAnswerSchema = Closed({ type: Type.String(), data: Type.String() })
export type DnsAnswer = Static<typeof DnsAnswerSchema>
export const DnsEntrySchema = Closed({ request: Type.String(), type: Type.String(), answers: Type.Array(DnsAnswerSchema) })
export type DnsEntry = Static<typeof DnsEntrySchema>
export const DomainEntrySchema = Closed({ domain: Type.String(), ip: Type.String() })
export type DomainEntry = Static<typeof DomainEntrySchema>

const SKIPPED_DOMAINS = [/\.windows\.com$/, /\.in-addr\.arpa$/]

interface LooseRecord { type: string; name?: string; data?: unknown }

function answerData(a: LooseRecord): string {
  const d = a.data
  if (typeof d === 'string') return d
  if (d === undefined || d === null) return ''
  const o = d as Record<string, unknown>
  switch (a.type) {
    case 'MX': return String(o.exchange ?? '')
    case 'SOA': return [o.mname, o.rname, o.serial, o.refresh, o.retry, o.expire, o.minimum].map(String).join(',')
    case 'HINFO': return `${String(o.cpu ?? '')} ${String(o.os ?? '')}`
    case 'TXT': return (Array.isArray(d) ? d : [d]).map((x) => (Buffer.isBuffer(x) ? x.toString('latin1') : String(x))).join(' ')
    case 'SRV': return `${String(o.priority)} ${String(o.weight)} ${String(o.port)} ${String(o.target)}`
    default: return Buffer.isBuffer(d) ? d.toString('hex') : ''
  }
}

/**
 * The report's name of a query type: Cuckoo's for the types it names (A, AAAA, CNAME, MX, PTR, NS,
 * SOA, HINFO, TXT, SRV; ANY is "All"); dns-packet's for the others (e.g. HTTPS, UNKNOWN_64), where
 * Cuckoo wrote "None" and lost the information.
 */
export function queryTypeName(t: string): string {
  return t === 'ANY' ? 'All' : t
}

export class DnsCollector {
  private readonly entries = new Map<string, DnsEntry>()
  private readonly domains = new Map<string, DomainEntry>()
  private readonly servers = new Set<string>()

  constructor(private readonly isSafelistedDomain: (name: string) => boolean, private readonly onSafelistedIp: (ip: string) => void) {}

  /** One DNS message from `src` to `dst`. Returns false when it does not parse as DNS. */
  add(msg: Buffer, dst: string): boolean {
    let p: dnsPacket.Packet
    try { p = dnsPacket.decode(msg) } catch { return false }
    const q = p.questions?.[0]
    if (!q) return true
    if (p.type === 'query') this.servers.add(dst)
    const request = q.name
    const type = queryTypeName(q.type)
    const answers: DnsAnswer[] = []
    for (const a of (p.answers ?? []) as LooseRecord[]) answers.push({ type: a.type, data: answerData(a) })
    if (this.isSafelistedDomain(request)) {
      for (const a of answers) if (a.type === 'A' || a.type === 'AAAA') this.onSafelistedIp(a.data)
      return true
    }
    if (!SKIPPED_DOMAINS.some((r) => r.test(request)) && !this.domains.has(request)) {
      this.domains.set(request, { domain: request, ip: '' })
    }
    const key = `${type}\0${request}`
    const entry = this.entries.get(key)
    if (!entry) {
      this.entries.set(key, { request, type, answers })
      return true
    }
    for (const a of answers) {
      if (!entry.answers.some((x) => x.type === a.type && x.data === a.data)) entry.answers.push(a)
    }
    return true
  }

  /** DNS over TCP: a stream of messages, each prefixed with its 2-byte length. Returns bytes consumed. */
  addTcpStream(stream: Buffer, dst: string): number {
    let o = 0
    while (stream.length - o >= 2) {
      const len = stream.readUInt16BE(o)
      if (stream.length - o - 2 < len) break
      this.add(stream.subarray(o + 2, o + 2 + len), dst)
      o += 2 + len
    }
    return o
  }

  dns(): DnsEntry[] { return [...this.entries.values()] }

  domainList(): DomainEntry[] {
    const out: DomainEntry[] = []
    for (const d of this.domains.values()) {
      let ip = ''
      for (const t of ['A', 'AAAA']) {
        const e = this.entries.get(`${t}\0${d.domain}`)
        const a = e?.answers.find((x) => x.type === 'A' || x.type === 'AAAA')
        if (a) { ip = a.data; break }
      }
      if (!ip) {
        for (const e of this.entries.values()) {
          if (e.request !== d.domain) continue
          const a = e.answers.find((x) => x.type === 'A' || x.type === 'AAAA')
          if (a) { ip = a.data; break }
        }
      }
      out.push({ domain: d.domain, ip })
    }
    return out
  }

  dnsServers(): string[] { return [...this.servers] }
}
