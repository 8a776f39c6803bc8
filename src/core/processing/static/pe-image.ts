// A read-only view of a PE file for the static analysis: its headers (read with pe-library's header
// classes), its section table, and bounds-checked readers addressed by RVA. pe-library's
// NtExecutable is an editor: it refuses signed files and files with COFF symbols and copies every
// section, so only its header formats are used here; everything past the headers (imports, exports,
// resources, debug and security directories) is read through this view, which never reads outside
// the buffer: a truncated or corrupt file gives a PeFormatError, never a RangeError deep inside.
import { Format } from 'pe-library'

export class PeFormatError extends Error {}

export interface PeSection {
  name: string
  virtualAddress: number
  virtualSize: number
  sizeOfRawData: number
  pointerToRawData: number
  characteristics: number
}

export interface DataDirectory { virtualAddress: number; size: number }

/** Indexes of IMAGE_DIRECTORY_ENTRY_*. */
export const DIR = { export: 0, import: 1, resource: 2, security: 4, debug: 6, delayImport: 13 } as const

const MAX_SECTIONS = 96 // the Windows loader's limit

export class PeImage {
  readonly is64: boolean
  /** ImageBase as a bigint: PE32+ image bases need all 64 bits. */
  readonly imageBase: bigint
  readonly timeDateStamp: number
  readonly machine: number
  readonly characteristics: number
  readonly entryPoint: number
  readonly sizeOfHeaders: number
  readonly sections: PeSection[] = []
  readonly directories: DataDirectory[] = []
  /** Sections declared in the header whose entry lies past the end of the (read part of the) file. */
  readonly truncatedSections: number = 0

  /** Parses the headers; throws PeFormatError when the file is not a PE or its headers are cut. */
  constructor (readonly buf: Buffer, readonly fileSize: number = buf.length) {
    if (buf.length < 64 || buf.readUInt16LE(0) !== 0x5a4d) throw new PeFormatError('no MZ header')
    const dos = Format.ImageDosHeader.from(buf)
    const lfanew = dos.newHeaderAddress
    if (lfanew <= 0 || lfanew + 24 + 2 > buf.length) throw new PeFormatError('e_lfanew outside the file')
    if (buf.readUInt32LE(lfanew) !== 0x4550) throw new PeFormatError('no PE signature')
    const magic = buf.readUInt16LE(lfanew + 24)
    if (magic !== 0x10b && magic !== 0x20b) throw new PeFormatError(`unknown optional header magic 0x${magic.toString(16)}`)
    const optSize = magic === 0x20b ? 112 : 96
    if (lfanew + 24 + optSize + 128 > buf.length) throw new PeFormatError('optional header truncated')
    const nt = Format.ImageNtHeaders.from(buf, lfanew)
    const fh = nt.fileHeader
    const oh = nt.optionalHeader
    this.is64 = !nt.is32bit()
    this.imageBase = 'imageBaseBigInt' in oh ? oh.imageBaseBigInt : BigInt(oh.imageBase)
    this.timeDateStamp = fh.timeDateStamp
    this.machine = fh.machine
    this.characteristics = fh.characteristics
    this.entryPoint = oh.addressOfEntryPoint
    this.sizeOfHeaders = oh.sizeOfHeaders
    const nDirs = Math.min(16, oh.numberOfRvaAndSizes)
    const dirs = nt.optionalHeaderDataDirectory
    for (let i = 0; i < 16; i++) this.directories.push(i < nDirs ? { ...dirs.get(i) } : { virtualAddress: 0, size: 0 })
    // The section table follows the optional header of the size the file header declares (not the
    // standard size that pe-library's getSectionHeaderOffset assumes).
    const secOff = lfanew + 24 + fh.sizeOfOptionalHeader
    const declared = Math.min(fh.numberOfSections, MAX_SECTIONS)
    const fit = Math.max(0, Math.floor((buf.length - secOff) / 40))
    const count = Math.min(declared, fit)
    if (count > 0) {
      const arr = Format.ImageSectionHeaderArray.from(buf.buffer as ArrayBuffer, count, buf.byteOffset + secOff)
      for (let i = 0; i < count; i++) {
        const s = arr.get(i)
        this.sections.push({
          name: s.name,
          virtualAddress: s.virtualAddress,
          virtualSize: s.virtualSize,
          sizeOfRawData: s.sizeOfRawData,
          pointerToRawData: s.pointerToRawData,
          characteristics: s.characteristics
        })
      }
    }
    if (count < declared) this.truncatedSections = declared - count
  }

  /** The file offset of an RVA, or null when it is in no section's raw data and not in the headers. */
  rvaToOffset (rva: number): number | null {
    for (const s of this.sections) {
      const size = Math.max(s.virtualSize, s.sizeOfRawData)
      if (rva >= s.virtualAddress && rva < s.virtualAddress + size) {
        const delta = rva - s.virtualAddress
        // The loader rounds PointerToRawData down to 512; bytes past SizeOfRawData are zero-filled.
        if (delta >= s.sizeOfRawData) return null
        return (s.pointerToRawData & ~0x1ff) + delta
      }
    }
    if (rva < this.sizeOfHeaders || this.sections.length === 0) return rva
    return null
  }

  private at (rva: number, len: number): number {
    const off = this.rvaToOffset(rva)
    if (off === null || off < 0 || off + len > this.buf.length) {
      throw new PeFormatError(`RVA 0x${rva.toString(16)} (+${len}) is outside the file`)
    }
    return off
  }

  u16 (rva: number): number { return this.buf.readUInt16LE(this.at(rva, 2)) }
  u32 (rva: number): number { return this.buf.readUInt32LE(this.at(rva, 4)) }
  /** 64-bit value as a bigint (thunks of PE32+). */
  u64 (rva: number): bigint { return this.buf.readBigUInt64LE(this.at(rva, 8)) }

  bytes (rva: number, len: number): Buffer {
    const off = this.at(rva, 0)
    return this.buf.subarray(off, Math.min(off + len, this.buf.length))
  }

  /** A NUL-terminated ASCII string at an RVA, at most `max` bytes. */
  cstring (rva: number, max = 512): string {
    const b = this.bytes(rva, max)
    const end = b.indexOf(0)
    return b.subarray(0, end < 0 ? b.length : end).toString('latin1')
  }

  /** The raw bytes of a section as the loader maps them from the file (clipped to the file). */
  sectionData (s: PeSection): Buffer {
    const start = s.pointerToRawData & ~0x1ff
    if (start >= this.buf.length) return Buffer.alloc(0)
    return this.buf.subarray(start, Math.min(start + s.sizeOfRawData, this.buf.length))
  }
}
