// Decides from content, never from the file name, whether a file is an archive we unpack.
import { open } from 'node:fs/promises'
import { readDecompressedHead } from './unpack-decompress'
import type { ArchiveFormat } from './unpack-common'

/** Enough for a tar header, the longest signature we check. */
export const SNIFF_BYTES = 512

function startsWith(head: Uint8Array, bytes: number[], at = 0): boolean {
  return head.length >= at + bytes.length && bytes.every((b, i) => head[at + i] === b)
}

function isTarHeader(head: Uint8Array): boolean {
  if (head.length < 512) return false
  const magic = String.fromCharCode(...head.subarray(257, 263))
  if (magic !== 'ustar\0' && magic !== 'ustar ') return false
  const field = String.fromCharCode(...head.subarray(148, 156)).replace(/[\0 ]+$/, '').trim()
  if (!/^[0-7]{1,7}$/.test(field)) return false
  // The checksum is computed with its own field read as spaces; old tools summed signed bytes.
  let unsigned = 8 * 0x20
  let signed = 8 * 0x20
  for (let i = 0; i < 512; i++) {
    if (i >= 148 && i < 156) continue
    const byte = head[i] ?? 0
    unsigned += byte
    signed += byte > 127 ? byte - 256 : byte
  }
  const expected = parseInt(field, 8)
  return expected === unsigned || expected === signed
}

/**
 * The format from the first bytes. 'gzip' and 'bzip2' only say the data is compressed: whether
 * a tar is inside is for resolveCompressed to find out.
 */
export function sniffArchive(head: Uint8Array): ArchiveFormat | 'gzip' | 'bzip2' | null {
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04]) || startsWith(head, [0x50, 0x4b, 0x05, 0x06])) return 'zip'
  if (startsWith(head, [0x1f, 0x8b, 0x08])) return 'gzip'
  // "BZh" and a block size, then the block magic (pi) or the end-of-stream magic (sqrt pi).
  if (startsWith(head, [0x42, 0x5a, 0x68]) && (head[3] ?? 0) >= 0x31 && (head[3] ?? 0) <= 0x39) {
    if (head.length < 10) return 'bzip2'
    if (startsWith(head, [0x31, 0x41, 0x59, 0x26, 0x53, 0x59], 4) || startsWith(head, [0x17, 0x72, 0x45, 0x38, 0x50, 0x90], 4)) {
      return 'bzip2'
    }
    return null
  }
  return isTarHeader(head) ? 'tar' : null
}

/** Whether compressed data holds a tar, by decompressing only its first block. */
export async function resolveCompressed(filePath: string, kind: 'gzip' | 'bzip2'): Promise<'tar.gz' | 'tar.bz2' | null> {
  const format = kind === 'gzip' ? 'tar.gz' : 'tar.bz2'
  const head = await readDecompressedHead(filePath, format, SNIFF_BYTES)
  return isTarHeader(head) ? format : null
}

export async function readHead(filePath: string, n = SNIFF_BYTES): Promise<Buffer> {
  const fh = await open(filePath, 'r')
  try {
    const buf = Buffer.alloc(n)
    const { bytesRead } = await fh.read(buf, 0, n, 0)
    return buf.subarray(0, bytesRead)
  } finally {
    await fh.close()
  }
}

async function classify(filePath: string, unreadableZip: 'zip' | null): Promise<ArchiveFormat | null> {
  const kind = sniffArchive(await readHead(filePath))
  if (kind === 'gzip' || kind === 'bzip2') return resolveCompressed(filePath, kind)
  if (kind !== 'zip') return kind
  // zip.js loads here, with the first zip seen, not with the service.
  const document = await (await import('./unpack-zip')).isZipDocument(filePath)
  return document === null ? unreadableZip : document ? null : 'zip'
}

/**
 * The archive format of a file, or null when it is not one we unpack (including zips that are
 * documents, JARs or APKs, and .gz/.bz2 files without a tar inside). An unreadable zip still
 * counts, so that unpacking reports what is wrong with it. Rejects when bzip2 data is found but
 * the bzip2 program is missing.
 */
export function detectArchive(filePath: string): Promise<ArchiveFormat | null> {
  return classify(filePath, 'zip')
}

/** As detectArchive, but a member that only looks like a zip is kept as a plain file. */
export function detectNestedArchive(filePath: string): Promise<ArchiveFormat | null> {
  return classify(filePath, null)
}
