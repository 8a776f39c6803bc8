// The TLS handshake hellos at the start of one direction of a TCP stream: the server name (SNI)
// and the highest version a ClientHello offers, and the server_random / session_id of a ServerHello
// (Cuckoo's `tls` entries, which dumptls joins with the monitor's master secrets). Handshake
// messages may span several records and segments, so up to HELLO_CAP bytes of the stream start are
// gathered. Written by hand: the hello layout is a handful of length-prefixed fields, and no
// maintained JS library parses TLS records from captured bytes.

const HELLO_CAP = 16 * 1024
const VERSIONS: Record<number, string> = { 0x0300: 'SSL 3.0', 0x0301: 'TLS 1.0', 0x0302: 'TLS 1.1', 0x0303: 'TLS 1.2', 0x0304: 'TLS 1.3' }

export interface ClientHello { sni: string; version: string }
export interface ServerHello { version: string; server_random: string; session_id: string }

export function tlsVersionName(v: number): string {
  return VERSIONS[v] ?? `0x${v.toString(16).padStart(4, '0')}`
}

/** GREASE values (RFC 8701) are not real versions. */
const isGrease = (v: number): boolean => (v & 0x0f0f) === 0x0a0a && (v >> 8) === (v & 0xff)

/** Could this stream start with a TLS handshake record? */
export function looksLikeTls(b: Buffer): boolean {
  return b.length >= 3 && b[0]! === 0x16 && b[1]! === 0x03 && b[2]! <= 0x04
}

export class TlsHelloStream {
  private parts: Buffer[] = []
  private size = 0
  private finished = false

  constructor(private readonly onClient: (h: ClientHello) => void, private readonly onServer: (h: ServerHello) => void) {}

  get done(): boolean { return this.finished }

  /** Feeds in-order bytes; false once the hello was found or the stream is not TLS. */
  push(chunk: Buffer): boolean {
    if (this.finished) return false
    const keep = chunk.subarray(0, HELLO_CAP - this.size)
    this.parts.push(Buffer.from(keep))
    this.size += keep.length
    const all = Buffer.concat(this.parts)
    this.parts = [all]
    const msg = handshakeMessage(all)
    if (msg === null) {
      if (this.size >= HELLO_CAP) this.stop()
      return !this.finished
    }
    if (msg !== 'invalid') {
      if (msg[0] === 1) { const h = parseClientHello(msg); if (h) this.onClient(h) }
      if (msg[0] === 2) { const h = parseServerHello(msg); if (h) this.onServer(h) }
    }
    this.stop()
    return false
  }

  private stop(): void { this.finished = true; this.parts = [] }
}

/** The first handshake message (type + length + body) from consecutive handshake records, null if incomplete. */
function handshakeMessage(b: Buffer): Buffer | null | 'invalid' {
  const frags: Buffer[] = []
  let have = 0
  let o = 0
  while (b.length - o >= 5) {
    if (b[o]! !== 0x16 || b[o + 1]! !== 0x03) return 'invalid'
    const len = b.readUInt16BE(o + 3)
    const avail = Math.min(len, b.length - o - 5)
    frags.push(b.subarray(o + 5, o + 5 + avail))
    have += avail
    if (have >= 4) {
      const hs = Buffer.concat(frags)
      const need = 4 + hs.readUIntBE(1, 3)
      if (hs.length >= need) return hs.subarray(0, need)
    }
    if (avail < len) return null
    o += 5 + len
  }
  return null
}

function parseClientHello(m: Buffer): ClientHello | null {
  try {
    let o = 4
    let version = m.readUInt16BE(o); o += 2 + 32
    o += 1 + m[o]! // session id
    o += 2 + m.readUInt16BE(o) // cipher suites
    o += 1 + m[o]! // compression methods
    let sni = ''
    if (o + 2 <= m.length) {
      const end = Math.min(m.length, o + 2 + m.readUInt16BE(o))
      o += 2
      while (o + 4 <= end) {
        const type = m.readUInt16BE(o)
        const len = m.readUInt16BE(o + 2)
        const d = m.subarray(o + 4, o + 4 + len)
        if (type === 0 && d.length >= 5 && d[2]! === 0) sni = d.toString('latin1', 5, 5 + d.readUInt16BE(3))
        if (type === 43 && d.length >= 1) {
          for (let i = 1; i + 1 < d.length && i <= d[0]!; i += 2) {
            const v = d.readUInt16BE(i)
            if (!isGrease(v) && v > version) version = v
          }
        }
        o += 4 + len
      }
    }
    return { sni, version: tlsVersionName(version) }
  } catch {
    return null // cut short: not a hello we can read
  }
}

function parseServerHello(m: Buffer): ServerHello | null {
  try {
    let o = 4
    let version = m.readUInt16BE(o); o += 2
    const random = m.subarray(o, o + 32); o += 32
    const sid = m.subarray(o + 1, o + 1 + m[o]!); o += 1 + m[o]!
    o += 3 // cipher suite, compression
    if (o + 2 <= m.length) {
      const end = Math.min(m.length, o + 2 + m.readUInt16BE(o))
      o += 2
      while (o + 4 <= end) {
        const type = m.readUInt16BE(o)
        const len = m.readUInt16BE(o + 2)
        if (type === 43 && len === 2) version = m.readUInt16BE(o + 4)
        o += 4 + len
      }
    }
    if (random.length !== 32) return null
    return { version: tlsVersionName(version), server_random: random.toString('hex'), session_id: sid.toString('hex') }
  } catch {
    return null
  }
}
