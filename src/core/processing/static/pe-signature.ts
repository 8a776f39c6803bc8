// The Authenticode signature of a PE, as Cuckoo 2's `signature` key lists it: one entry per signer
// certificate {serial_number, common_name, country, locality, organization, email, sha1, md5}.
// Node's X509Certificate parses a certificate but not the PKCS#7 SignedData around it, and no kept
// dependency reads PKCS#7, so the few DER levels down to `certificates` and `signerInfos` are walked
// here by hand (a bounded TLV reader). This says who signed, not whether the signature verifies.
import { createHash, X509Certificate } from 'node:crypto'
import { DIR, type PeImage } from './pe-image.js'
import { Closed, Nullable, Type, type Static } from '../schema.js'

export const PeSignerSchema = Closed({
  serial_number: Type.String(),
  common_name: Nullable(Type.String()),
  country: Nullable(Type.String()),
  locality: Nullable(Type.String()),
  organization: Nullable(Type.String()),
  email: Nullable(Type.String()),
  sha1: Type.String(),
  md5: Type.String(),
  full_name: Type.Optional(Type.String())
})
export type PeSigner = Static<typeof PeSignerSchema>

/** One DER element: its tag, the offset of its tag byte, and its contents [start, end). */
interface Tlv { tag: number; hdr: number; start: number; end: number }

/** Reads one DER TLV at `off` within [.., limit); null when it does not fit. */
function tlv (b: Buffer, off: number, limit: number): Tlv | null {
  if (off + 2 > limit) return null
  const tag = b[off] ?? 0
  let len = b[off + 1] ?? 0
  let p = off + 2
  if (len & 0x80) {
    const n = len & 0x7f
    if (n === 0 || n > 4 || p + n > limit) return null
    len = 0
    for (let i = 0; i < n; i++) len = len * 256 + (b[p + i] ?? 0)
    p += n
  }
  if (p + len > limit) return null
  return { tag, hdr: off, start: p, end: p + len }
}

function children (b: Buffer, t: Tlv): Tlv[] {
  const out: Tlv[] = []
  for (let p = t.start; p < t.end && out.length < 1024;) {
    const c = tlv(b, p, t.end)
    if (c === null) break
    out.push(c)
    p = c.end
  }
  return out
}

function field (subject: string, key: string): string | null {
  for (const line of subject.split('\n')) {
    if (line.startsWith(`${key}=`)) return line.slice(key.length + 1)
  }
  return null
}

/** Serial numbers (lowercase hex, no leading zeros) of the SignerInfos' issuerAndSerialNumber. */
function signerSerials (b: Buffer, signerInfos: Tlv): Set<string> {
  const serials = new Set<string>()
  for (const si of children(b, signerInfos)) {
    const isn = children(b, si)[1]
    const serial = isn === undefined ? undefined : children(b, isn)[1]
    if (serial?.tag === 0x02) serials.add(BigInt(`0x${b.subarray(serial.start, serial.end).toString('hex') || '0'}`).toString(16))
  }
  return serials
}

/**
 * The signer certificates of the security directory; [] when the file is not signed. `signed` is
 * true when the directory holds an Authenticode WIN_CERTIFICATE (whether or not it verifies).
 */
export function readSignature (pe: PeImage, errors: string[]): { signed: boolean; signers: PeSigner[] } {
  const dir = pe.directories[DIR.security]
  if (dir === undefined || dir.virtualAddress === 0 || dir.size === 0) return { signed: false, signers: [] }
  const signers: PeSigner[] = []
  try {
    // The security directory's "VirtualAddress" is a file offset; WIN_CERTIFICATE has an 8-byte header.
    const start = dir.virtualAddress + 8
    const end = Math.min(dir.virtualAddress + dir.size, pe.buf.length)
    if (start >= end) throw new Error('security directory outside the file')
    const b = pe.buf
    // WIN_CERTIFICATE: dwLength, wRevision (0x0100 or 0x0200), wCertificateType 2 (PKCS_SIGNED_DATA).
    const revision = b.readUInt16LE(dir.virtualAddress + 4)
    const certType = b.readUInt16LE(dir.virtualAddress + 6)
    if ((revision !== 0x0100 && revision !== 0x0200) || certType !== 2) {
      // The directory points at something else: a file modified after signing, or a fake entry.
      errors.push('signature: the security directory does not hold an Authenticode WIN_CERTIFICATE')
      return { signed: false, signers }
    }
    const contentInfo = tlv(b, start, end)
    if (contentInfo === null) throw new Error('bad PKCS#7 ContentInfo')
    const explicit = children(b, contentInfo)[1]
    const signedData = explicit === undefined ? undefined : children(b, explicit)[0]
    if (signedData === undefined) throw new Error('no SignedData')
    const parts = children(b, signedData)
    const certSet = parts.find((p) => p.tag === 0xa0)
    const signerSet = parts.filter((p) => p.tag === 0x31).at(-1)
    const wanted = signerSet === undefined ? new Set<string>() : signerSerials(b, signerSet)
    for (const c of certSet === undefined ? [] : children(b, certSet)) {
      if (c.tag !== 0x30) continue
      const der = b.subarray(c.hdr, c.end)
      const cert = new X509Certificate(der)
      const serial = BigInt(`0x${cert.serialNumber}`).toString(16)
      if (wanted.size > 0 && !wanted.has(serial)) continue
      const s = cert.subject
      const entry: PeSigner = {
        serial_number: serial.padStart(32, '0'),
        common_name: field(s, 'CN'),
        country: field(s, 'C'),
        locality: field(s, 'L'),
        organization: field(s, 'O'),
        email: field(s, 'emailAddress'),
        sha1: createHash('sha1').update(der).digest('hex'),
        md5: createHash('md5').update(der).digest('hex')
      }
      const gn = field(s, 'GN')
      const sn = field(s, 'SN')
      if (gn !== null || sn !== null) entry.full_name = [gn, sn].filter((x) => x !== null).join(' ')
      signers.push(entry)
    }
  } catch (err) {
    errors.push(`signature: ${(err as Error).message}`)
  }
  return { signed: true, signers }
}

