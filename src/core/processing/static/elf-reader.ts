// Bounds-checked reads of an ELF file's fields (either byte order, 32 or 64 bits), shared by the
// header and table readers (elf.ts, elf-tables.ts): a read outside the file throws ElfFormatError.

export class ElfFormatError extends Error {}

export interface ElfSection { name: string; type: number; addr: bigint; offset: number; size: number; link: number; entsize: number }

export class ElfReader {
  constructor (readonly b: Buffer, readonly le: boolean, readonly is64: boolean, readonly machine: number) {}
  private check (off: number, n: number): void {
    if (off < 0 || off + n > this.b.length) throw new ElfFormatError(`offset 0x${off.toString(16)} (+${n}) is outside the file`)
  }
  u8 (o: number): number { this.check(o, 1); return this.b.readUInt8(o) }
  u16 (o: number): number { this.check(o, 2); return this.le ? this.b.readUInt16LE(o) : this.b.readUInt16BE(o) }
  u32 (o: number): number { this.check(o, 4); return this.le ? this.b.readUInt32LE(o) : this.b.readUInt32BE(o) }
  u64 (o: number): bigint { this.check(o, 8); return this.le ? this.b.readBigUInt64LE(o) : this.b.readBigUInt64BE(o) }
  /** An address-sized field (4 or 8 bytes) as a bigint. */
  addr (o: number): bigint { return this.is64 ? this.u64(o) : BigInt(this.u32(o)) }
  /** An address-sized field as a number (offsets and sizes, which fit a double in a real file). */
  num (o: number): number { return Number(this.addr(o)) }
  bytes (o: number, n: number): Buffer { this.check(o, n); return this.b.subarray(o, o + n) }
  cstr (o: number, max = 4096): string {
    if (o < 0 || o >= this.b.length) return ''
    const window = this.b.subarray(o, Math.min(o + max, this.b.length))
    const end = window.indexOf(0)
    return window.subarray(0, end < 0 ? window.length : end).toString('latin1')
  }
}
