// Decoders of the layers under the application data: link layer (Ethernet with VLAN tags, Linux
// cooked capture SLL and SLL2, raw IP, BSD loopback), IPv4, IPv6 (extension headers skipped), TCP,
// UDP, ICMP and ICMPv6. Written by hand because no maintained JS packet dissector exists (the npm
// `pcap` family is abandoned and needs libpcap bindings); these are a few fixed-offset reads. For
// speed one Decoded object is reused for every packet; payloads are offsets into the packet
// buffer, never copies. Truncated packets (small snaplen) decode as far as their bytes go: a layer
// whose header is cut is reported absent, its payload is cut at the captured length.

export const PROTO_ICMP = 1
export const PROTO_TCP = 6
export const PROTO_UDP = 17
export const PROTO_ICMPV6 = 58

export const TCP_FIN = 0x01
export const TCP_SYN = 0x02
export const TCP_RST = 0x04
export const TCP_ACK = 0x10

export interface Decoded {
  src: string
  dst: string
  /** IP protocol number of the transport (after IPv6 extension headers). */
  proto: number
  /** True when the transport header below is complete (ports, seq... are valid). */
  transport: boolean
  /** A non-first IP fragment: its payload is not a transport header. */
  fragment: boolean
  sport: number
  dport: number
  seq: number
  ack: number
  flags: number
  icmpType: number
  icmpCode: number
  /** Transport payload within the packet buffer: [payloadStart, payloadEnd). */
  payloadStart: number
  payloadEnd: number
  /** Payload length the IP header announces (may exceed what was captured). */
  payloadLen: number
}

export function newDecoded(): Decoded {
  return { src: '', dst: '', proto: 0, transport: false, fragment: false, sport: 0, dport: 0, seq: 0, ack: 0, flags: 0,
    icmpType: 0, icmpCode: 0, payloadStart: 0, payloadEnd: 0, payloadLen: 0 }
}

/** Link types this decoder knows (pcap-linktype(7)). */
export const LINKTYPES: Record<number, string> = {
  0: 'BSD loopback', 1: 'Ethernet', 12: 'raw IP', 14: 'raw IP', 101: 'raw IP', 108: 'OpenBSD loopback',
  113: 'Linux cooked (SLL)', 228: 'raw IPv4', 229: 'raw IPv6', 276: 'Linux cooked v2 (SLL2)'
}

/** Offset of the IP header in a frame of `linktype`, or -1 when the frame carries no IP. */
function ipOffset(linktype: number, b: Buffer): number {
  switch (linktype) {
    case 1: { // Ethernet II, with any number of 802.1Q / 802.1ad tags
      let o = 12
      if (b.length < o + 2) return -1
      let type = b.readUInt16BE(o)
      while ((type === 0x8100 || type === 0x88a8 || type === 0x9100) && b.length >= o + 6) {
        o += 4
        type = b.readUInt16BE(o)
      }
      return type === 0x0800 || type === 0x86dd ? o + 2 : -1
    }
    case 113: { // SLL: protocol type at 14, header 16 bytes
      if (b.length < 16) return -1
      const type = b.readUInt16BE(14)
      return type === 0x0800 || type === 0x86dd ? 16 : -1
    }
    case 276: { // SLL2: protocol type at 0, header 20 bytes
      if (b.length < 20) return -1
      const type = b.readUInt16BE(0)
      return type === 0x0800 || type === 0x86dd ? 20 : -1
    }
    case 0: case 108: // 4-byte address family (host order for 0, network order for 108)
      return b.length >= 4 ? 4 : -1
    case 12: case 14: case 101: case 228: case 229:
      return 0
    default:
      return -1
  }
}

export function formatIPv4(b: Buffer, o: number): string {
  return `${b[o]!}.${b[o + 1]!}.${b[o + 2]!}.${b[o + 3]!}`
}

/** RFC 5952 text form (what inet_ntop and tshark print). */
export function formatIPv6(b: Buffer, o: number): string {
  const g: number[] = []
  for (let i = 0; i < 8; i++) g.push(b.readUInt16BE(o + i * 2))
  if (g[0]! === 0 && g[1]! === 0 && g[2]! === 0 && g[3]! === 0 && g[4]! === 0 && g[5]! === 0xffff) {
    return `::ffff:${formatIPv4(b, o + 12)}`
  }
  let best = -1
  let bestLen = 1
  for (let i = 0; i < 8;) {
    if (g[i]! !== 0) { i++; continue }
    let j = i
    while (j < 8 && g[j]! === 0) j++
    if (j - i > bestLen) { best = i; bestLen = j - i }
    i = j
  }
  const hex = (x: number[]): string => x.map((v) => v.toString(16)).join(':')
  if (best < 0) return hex(g)
  return `${hex(g.slice(0, best))}::${hex(g.slice(best + bestLen))}`
}

/** Decodes `b` (one captured frame) into `d`. False when it is not an IP packet we can read. */
export function decodePacket(linktype: number, b: Buffer, d: Decoded): boolean {
  const ip = ipOffset(linktype, b)
  if (ip < 0 || b.length < ip + 1) return false
  d.transport = false
  d.fragment = false
  const version = b[ip]! >> 4
  let l4: number
  let l4End: number
  if (version === 4) {
    if (b.length < ip + 20) return false
    const ihl = (b[ip]! & 0x0f) * 4
    if (ihl < 20) return false
    const total = b.readUInt16BE(ip + 2)
    d.proto = b[ip + 9]!
    d.fragment = (b.readUInt16BE(ip + 6) & 0x1fff) !== 0
    d.src = formatIPv4(b, ip + 12)
    d.dst = formatIPv4(b, ip + 16)
    l4 = ip + ihl
    // total 0: segmentation offload captured before the NIC split it; trust the captured length.
    const announced = total === 0 ? b.length - ip : total
    l4End = ip + announced
  } else if (version === 6) {
    if (b.length < ip + 40) return false
    d.src = formatIPv6(b, ip + 8)
    d.dst = formatIPv6(b, ip + 24)
    let next = b[ip + 6]!
    l4 = ip + 40
    l4End = l4 + b.readUInt16BE(ip + 4)
    for (;;) {
      if (next === 0 || next === 43 || next === 60) {
        if (b.length < l4 + 2) { d.proto = next; return true }
        next = b[l4]!; l4 += (b[l4 + 1]! + 1) * 8
      } else if (next === 44) {
        if (b.length < l4 + 8) { d.proto = next; return true }
        d.fragment = (b.readUInt16BE(l4 + 2) & 0xfff8) !== 0
        next = b[l4]!; l4 += 8
      } else if (next === 51) {
        if (b.length < l4 + 2) { d.proto = next; return true }
        next = b[l4]!; l4 += (b[l4 + 1]! + 2) * 4
      } else break
    }
    d.proto = next
  } else {
    return false
  }
  d.payloadLen = Math.max(0, l4End - l4)
  const capEnd = Math.min(l4End, b.length)
  if (d.fragment) return true
  switch (d.proto) {
    case PROTO_TCP: {
      if (capEnd < l4 + 20) return true
      const off = (b[l4 + 12]! >> 4) * 4
      if (off < 20 || capEnd < l4 + off) return true
      d.sport = b.readUInt16BE(l4)
      d.dport = b.readUInt16BE(l4 + 2)
      d.seq = b.readUInt32BE(l4 + 4)
      d.ack = b.readUInt32BE(l4 + 8)
      d.flags = b[l4 + 13]!
      d.payloadStart = l4 + off
      d.payloadEnd = capEnd
      d.payloadLen = Math.max(0, l4End - l4 - off)
      d.transport = true
      return true
    }
    case PROTO_UDP: {
      if (capEnd < l4 + 8) return true
      d.sport = b.readUInt16BE(l4)
      d.dport = b.readUInt16BE(l4 + 2)
      const udpLen = b.readUInt16BE(l4 + 4)
      const end = udpLen >= 8 ? Math.min(l4 + udpLen, capEnd) : capEnd
      d.payloadStart = l4 + 8
      d.payloadEnd = end
      d.payloadLen = udpLen >= 8 ? udpLen - 8 : Math.max(0, l4End - l4 - 8)
      d.transport = true
      return true
    }
    case PROTO_ICMP: case PROTO_ICMPV6: {
      if (capEnd < l4 + 4) return true
      d.icmpType = b[l4]!
      d.icmpCode = b[l4 + 1]!
      // The "data" Cuckoo reports: what follows the 8-byte header (echo id/seq, or unused+MTU).
      d.payloadStart = Math.min(l4 + 8, capEnd)
      d.payloadEnd = capEnd
      d.payloadLen = Math.max(0, l4End - l4 - 8)
      d.transport = true
      return true
    }
    default:
      return true
  }
}
