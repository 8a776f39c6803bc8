// `procmemory`: the process memory dumps a run uploaded (memory/<pid>-<n>.dmp), each described as
// Cuckoo 2's processing/procmemory.py does: {file, pid, num, yara, urls, regions}. YARA runs with
// the rest of the task's files (pipeline.ts). The dump is read once, streamed: Cuckoo's format is a
// 24-byte header per region (address u64, size u32, state u32, type u32, protect u32, little-endian)
// followed by the region's bytes; the regions are listed from the headers and the http(s) URLs are
// found in the regions' bytes (never across a header). A file that is not in that format (a
// header running past the end) is searched as raw bytes from there on. The guest wrote these
// files: every count is bounded.
import { open } from 'node:fs/promises'
import { UrlScanner } from '../hashing/urls'
import { Closed, Type, type Static } from './schema'

/** Regions listed per dump; a dump has more only if its process had thousands of mappings. */
export const MAX_REGIONS = 4096
/** Bytes of a dump searched for URLs (the analyzer caps a process at 64 MiB by default). */
export const MAX_SCAN_BYTES = 512 * 1024 * 1024
const BUF = 1024 * 1024

export const MemoryRegionSchema = Closed({
  addr: Type.String({ description: 'start address, 0x-prefixed hex' }),
  end: Type.String({ description: 'end address (exclusive), 0x-prefixed hex' }),
  size: Type.Integer({ minimum: 0 }),
  /** Where the region's bytes start in the dump file. */
  offset: Type.Integer({ minimum: 0 }),
  state: Type.Integer(),
  type: Type.Integer(),
  protect: Type.Integer({ description: "Windows' page protection constant (PAGE_READWRITE = 4, ...)" })
})
export type MemoryRegion = Static<typeof MemoryRegionSchema>

const hex = (n: bigint): string => `0x${n.toString(16).padStart(8, '0')}`

/** Regions and URLs of one dump, read once. */
export async function readProcessDump(file: string): Promise<{ regions: MemoryRegion[]; urls: string[] }> {
  const fh = await open(file, 'r')
  const regions: MemoryRegion[] = []
  const urls = new UrlScanner(MAX_SCAN_BYTES)
  try {
    const size = (await fh.stat()).size
    const buf = Buffer.allocUnsafe(BUF)
    let pos = 0
    let raw = false
    let scanned = 0
    while (pos < size && scanned < MAX_SCAN_BYTES) {
      let dataEnd = size
      if (!raw) {
        const { bytesRead } = await fh.read(buf, 0, 24, pos)
        const len = bytesRead === 24 ? buf.readUInt32LE(8) : -1
        if (len < 0 || pos + 24 + len > size) {
          raw = true
        } else {
          const addr = buf.readBigUInt64LE(0)
          if (regions.length < MAX_REGIONS) {
            regions.push({
              addr: hex(addr), end: hex(addr + BigInt(len)), size: len, offset: pos + 24,
              state: buf.readUInt32LE(12), type: buf.readUInt32LE(16), protect: buf.readUInt32LE(20)
            })
          }
          pos += 24
          dataEnd = pos + len
        }
      }
      while (pos < dataEnd && scanned < MAX_SCAN_BYTES) {
        const { bytesRead } = await fh.read(buf, 0, Math.min(BUF, dataEnd - pos), pos)
        if (bytesRead <= 0) {
          pos = size
          break
        }
        urls.update(buf.subarray(0, bytesRead))
        pos += bytesRead
        scanned += bytesRead
      }
    }
  } finally {
    await fh.close()
  }
  return { regions, urls: urls.result() }
}
