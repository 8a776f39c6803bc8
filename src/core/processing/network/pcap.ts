// Streaming reader of classic pcap files (what tcpdump -w writes): both byte orders, microsecond
// and nanosecond timestamps. The capture of one analysis can be hundreds of MB, so the file is read
// in big chunks into one reused buffer and every packet is handed to a synchronous callback as a
// view into that buffer (the callback copies whatever it keeps). The SHA-256 of the file is
// computed in the same pass (network.pcap_sha256). Written by hand: no maintained JS pcap reader
// streams with flat memory (the npm ones are unmaintained or read whole files). pcapng is refused
// with a clear error; a file cut short mid-packet ends the read without an error (tcpdump killed).
import { createHash } from 'node:crypto'
import { open } from 'node:fs/promises'

export class PcapFormatError extends Error {}

export interface PcapHeader {
  linktype: number
  snaplen: number
  /** Timestamp fraction unit: 1e-9 (nanosecond magic) or 1e-6. */
  nanos: boolean
  littleEndian: boolean
}

/**
 * One packet: `data` is a view valid only during the call. `offset` is the byte offset of its
 * record header in the file (Cuckoo's `offset`), the capture time is `sec` (epoch seconds) plus
 * `nsec` nanoseconds (kept apart: one double cannot hold epoch seconds to the nanosecond).
 */
export type PacketHandler = (data: Buffer, offset: number, sec: number, nsec: number, origLen: number) => void

export interface PcapReadResult {
  header: PcapHeader
  packets: number
  sha256: string
  /** The last record was cut short (capture killed mid-write); it was skipped. */
  truncated: boolean
}

const GLOBAL_HEADER = 24
const RECORD_HEADER = 16
const CHUNK = 8 * 1024 * 1024
/** No sane capture has bigger records (tcpdump's maximum snaplen is 262144). */
const MAX_CAPLEN = 16 * 1024 * 1024

export function parsePcapHeader(b: Buffer): PcapHeader {
  if (b.length < GLOBAL_HEADER) throw new PcapFormatError(`not a pcap file: ${b.length} bytes, the pcap header alone is ${GLOBAL_HEADER}`)
  const magicBE = b.readUInt32BE(0)
  let littleEndian: boolean
  let nanos: boolean
  switch (magicBE) {
    case 0xa1b2c3d4: littleEndian = false; nanos = false; break
    case 0xd4c3b2a1: littleEndian = true; nanos = false; break
    case 0xa1b23c4d: littleEndian = false; nanos = true; break
    case 0x4d3cb2a1: littleEndian = true; nanos = true; break
    case 0x0a0d0d0a:
      throw new PcapFormatError('pcapng is not supported: capture with tcpdump -w (classic pcap) or convert with `editcap -F pcap`')
    default:
      throw new PcapFormatError(`not a pcap file: unknown magic 0x${magicBE.toString(16).padStart(8, '0')}`)
  }
  const u32 = (o: number): number => (littleEndian ? b.readUInt32LE(o) : b.readUInt32BE(o))
  // The top 4 bits of the link-type field may carry FCS information (pcap-linktype(7)).
  return { linktype: u32(20) & 0x0fffffff, snaplen: u32(16), nanos, littleEndian }
}

/** Reads `file` packet by packet. Throws PcapFormatError for a file that is not classic pcap. */
export async function readPcap(file: string, onHeader: (h: PcapHeader) => void, onPacket: PacketHandler): Promise<PcapReadResult> {
  const fh = await open(file, 'r')
  const hash = createHash('sha256')
  try {
    let buf = Buffer.allocUnsafe(CHUNK)
    let start = 0
    let end = 0
    let fileOffset = 0 // file offset of buf[0]
    let eof = false
    const fill = async (): Promise<void> => {
      if (start > 0) {
        buf.copyWithin(0, start, end)
        fileOffset += start
        end -= start
        start = 0
      }
      while (end < buf.length && !eof) {
        const { bytesRead } = await fh.read(buf, end, buf.length - end, null)
        if (bytesRead === 0) { eof = true; break }
        hash.update(buf.subarray(end, end + bytesRead))
        end += bytesRead
      }
    }
    await fill()
    if (end === 0) throw new PcapFormatError('empty file: not a pcap')
    const header = parsePcapHeader(buf.subarray(0, Math.min(end, GLOBAL_HEADER)))
    onHeader(header)
    const le = header.littleEndian
    const toNsec = header.nanos ? 1 : 1000
    start = GLOBAL_HEADER
    let packets = 0
    let truncated = false
    for (;;) {
      if (end - start < RECORD_HEADER) {
        if (eof) { truncated = end > start; break }
        await fill()
        continue
      }
      const sec = le ? buf.readUInt32LE(start) : buf.readUInt32BE(start)
      const frac = le ? buf.readUInt32LE(start + 4) : buf.readUInt32BE(start + 4)
      const caplen = le ? buf.readUInt32LE(start + 8) : buf.readUInt32BE(start + 8)
      const origLen = le ? buf.readUInt32LE(start + 12) : buf.readUInt32BE(start + 12)
      if (caplen > MAX_CAPLEN) {
        throw new PcapFormatError(`corrupt pcap: record at offset ${fileOffset + start} claims ${caplen} bytes`)
      }
      const need = RECORD_HEADER + caplen
      if (end - start < need) {
        if (eof) { truncated = true; break }
        if (need > buf.length) {
          const bigger = Buffer.allocUnsafe(need + CHUNK)
          buf.copy(bigger, 0, start, end)
          fileOffset += start
          end -= start
          start = 0
          buf = bigger
        }
        await fill()
        continue
      }
      const dataStart = start + RECORD_HEADER
      onPacket(buf.subarray(dataStart, dataStart + caplen), fileOffset + start, sec, frac * toNsec, origLen)
      packets++
      start += need
    }
    // Whatever remains unread (nothing, unless the loop broke early) still counts for the hash.
    while (!eof) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null)
      if (bytesRead === 0) break
      hash.update(buf.subarray(0, bytesRead))
    }
    return { header, packets, sha256: hash.digest('hex'), truncated }
  } finally {
    await fh.close()
  }
}
