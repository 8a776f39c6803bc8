// The ELF tables Cuckoo 2.0.7's static module lists besides the headers (its web template shows
// them): `symbol_tables` (every symbol of .symtab and .dynsym: value, type, bind, name),
// `relocations` (per REL/RELA section: offset, info, type, and the symbol's value and name), and
// `notes` (from the PT_NOTE segments: owner, size, what the note says, its type), in the words
// pyelftools and readelf use. Read with the bounds-checked reader of elf.ts; a crafted file can
// declare millions of entries, so each list is capped (the report says how many there were).
import type { ElfReader, ElfSection } from './elf-reader.js'
import { Closed, Hex, Type, type Static } from '../schema.js'

export const MAX_SYMBOLS = 4096
export const MAX_RELOCATIONS = 4096
export const MAX_NOTES = 64

export const ElfSymbolSchema = Closed({ value: Hex, type: Type.String(), bind: Type.String(), ndx_name: Type.String() })
export const ElfRelocationSchema = Closed({ offset: Hex, info: Hex, type: Type.String(), value: Type.String(), name: Type.String() })
export const ElfRelocationsSchema = Closed({ name: Type.String(), entries: Type.Array(ElfRelocationSchema) })
export const ElfNoteSchema = Closed({ owner: Type.String(), size: Hex, note: Type.String(), name: Type.String() })
type Symbol = Static<typeof ElfSymbolSchema>
type Relocations = Static<typeof ElfRelocationsSchema>
type Note = Static<typeof ElfNoteSchema>

const SYMBOL_TYPE: Record<number, string> = { 0: 'NOTYPE', 1: 'OBJECT', 2: 'FUNC', 3: 'SECTION', 4: 'FILE', 5: 'COMMON', 6: 'TLS', 10: 'IFUNC' }
const SYMBOL_BIND: Record<number, string> = { 0: 'LOCAL', 1: 'GLOBAL', 2: 'WEAK', 10: 'UNIQUE' }
const RELOC_X86_64: Record<number, string> = {
  0: 'R_X86_64_NONE', 1: 'R_X86_64_64', 2: 'R_X86_64_PC32', 3: 'R_X86_64_GOT32', 4: 'R_X86_64_PLT32', 5: 'R_X86_64_COPY',
  6: 'R_X86_64_GLOB_DAT', 7: 'R_X86_64_JUMP_SLOT', 8: 'R_X86_64_RELATIVE', 9: 'R_X86_64_GOTPCREL', 10: 'R_X86_64_32',
  11: 'R_X86_64_32S', 16: 'R_X86_64_DTPMOD64', 17: 'R_X86_64_DTPOFF64', 18: 'R_X86_64_TPOFF64', 37: 'R_X86_64_IRELATIVE'
}
const RELOC_386: Record<number, string> = {
  0: 'R_386_NONE', 1: 'R_386_32', 2: 'R_386_PC32', 3: 'R_386_GOT32', 4: 'R_386_PLT32', 5: 'R_386_COPY', 6: 'R_386_GLOB_DAT',
  7: 'R_386_JUMP_SLOT', 8: 'R_386_RELATIVE', 35: 'R_386_TLS_DTPMOD32', 36: 'R_386_TLS_DTPOFF32', 37: 'R_386_TLS_TPOFF32', 42: 'R_386_IRELATIVE'
}
const RELOC_AARCH64: Record<number, string> = {
  0: 'R_AARCH64_NONE', 257: 'R_AARCH64_ABS64', 1024: 'R_AARCH64_COPY', 1025: 'R_AARCH64_GLOB_DAT', 1026: 'R_AARCH64_JUMP_SLOT',
  1027: 'R_AARCH64_RELATIVE', 1032: 'R_AARCH64_IRELATIVE'
}
const GNU_NOTE: Record<number, string> = { 1: 'NT_GNU_ABI_TAG', 2: 'NT_GNU_HWCAP', 3: 'NT_GNU_BUILD_ID', 4: 'NT_GNU_GOLD_VERSION', 5: 'NT_GNU_PROPERTY_TYPE_0' }
const ABI_OS: Record<number, string> = { 0: 'Linux', 1: 'Hurd', 2: 'Solaris', 3: 'FreeBSD' }

const SHT_SYMTAB = 2
const SHT_RELA = 4
const SHT_REL = 9
const SHT_DYNSYM = 11
const PT_NOTE = 4

function relocTypeName(machine: number, type: number): string {
  const table = machine === 62 ? RELOC_X86_64 : machine === 3 ? RELOC_386 : machine === 183 ? RELOC_AARCH64 : {}
  return table[type] ?? `<unknown>: 0x${type.toString(16)}`
}

interface RawSymbol { name: string; value: bigint; info: number; shndx: number; nameOffset: number }

function readSymbol(r: ElfReader, section: ElfSection, strtab: ElfSection | undefined, index: number): RawSymbol {
  const o = section.offset + index * section.entsize
  const nameOffset = r.u32(o)
  const info = r.is64 ? r.u8(o + 4) : r.u8(o + 12)
  const shndx = r.is64 ? r.u16(o + 6) : r.u16(o + 14)
  const value = r.is64 ? r.u64(o + 8) : BigInt(r.u32(o + 4))
  const name = strtab === undefined || nameOffset === 0 ? '' : r.cstr(strtab.offset + nameOffset, 1024)
  return { name, value, info, shndx, nameOffset }
}

function entries(s: ElfSection): number {
  return s.entsize > 0 ? Math.floor(s.size / s.entsize) : 0
}

/** `symbol_tables`: the symbols of every SYMTAB and DYNSYM section, at most MAX_SYMBOLS. */
export function symbolTables(r: ElfReader, sections: ElfSection[], fmt: (v: bigint) => string, errors: string[]): Symbol[] {
  const out: Symbol[] = []
  try {
    for (const s of sections.filter((x) => x.type === SHT_SYMTAB || x.type === SHT_DYNSYM)) {
      for (let i = 0; i < entries(s) && out.length < MAX_SYMBOLS; i++) {
        const sym = readSymbol(r, s, sections[s.link], i)
        out.push({ value: fmt(sym.value), type: SYMBOL_TYPE[sym.info & 0xf] ?? String(sym.info & 0xf), bind: SYMBOL_BIND[sym.info >> 4] ?? String(sym.info >> 4), ndx_name: sym.name })
      }
    }
  } catch (err) {
    errors.push(`symbol tables: ${(err as Error).message}`)
  }
  return out
}

/** `relocations`: one block per REL/RELA section, MAX_RELOCATIONS entries in all. */
export function relocations(r: ElfReader, sections: ElfSection[], machine: number, fmt: (v: bigint) => string, errors: string[]): Relocations[] {
  const out: Relocations[] = []
  let budget = MAX_RELOCATIONS
  try {
    for (const s of sections.filter((x) => x.type === SHT_REL || x.type === SHT_RELA)) {
      const block: Relocations = { name: s.name, entries: [] }
      out.push(block)
      const symtab = sections[s.link]
      const seen = new Set<string>()
      for (let i = 0; i < entries(s) && budget > 0; i++) {
        const o = s.offset + i * s.entsize
        const offset = r.is64 ? r.u64(o) : BigInt(r.u32(o))
        const info = r.is64 ? r.u64(o + 8) : BigInt(r.u32(o + 4))
        const symIndex = Number(r.is64 ? info >> 32n : info >> 8n)
        const type = Number(r.is64 ? info & 0xffffffffn : info & 0xffn)
        let value = ''
        let name = ''
        if (symIndex !== 0 && symtab !== undefined && symtab.entsize > 0 && symIndex < entries(symtab)) {
          const sym = readSymbol(r, symtab, sections[symtab.link], symIndex)
          value = fmt(sym.value)
          // A symbol without a name stands for the section it points at.
          name = sym.nameOffset === 0 ? (sections[sym.shndx]?.name ?? '') : sym.name
        }
        const entry = { offset: fmt(offset), info: fmt(info), type: relocTypeName(r.machine, type), value, name }
        const key = JSON.stringify(entry)
        if (seen.has(key)) continue
        seen.add(key)
        block.entries.push(entry)
        budget--
      }
    }
  } catch (err) {
    errors.push(`relocations: ${(err as Error).message}`)
  }
  return out
}

function describeNote(owner: string, type: number, desc: Buffer, le: boolean): { name: string; note: string } {
  if (owner === 'GNU') {
    const name = GNU_NOTE[type] ?? `0x${type.toString(16)}`
    if (type === 1 && desc.length >= 16) {
      const w = (i: number): number => (le ? desc.readUInt32LE(i * 4) : desc.readUInt32BE(i * 4))
      return { name, note: `OS: ${ABI_OS[w(0)] ?? `<unknown: ${w(0)}>`}, ABI: ${w(1)}.${w(2)}.${w(3)}` }
    }
    if (type === 3) return { name, note: `Build ID: ${desc.toString('hex')}` }
    if (type === 4) return { name, note: `Version: ${desc.toString('latin1').replace(/\0+$/, '')}` }
    return { name, note: `Description data: ${desc.subarray(0, 64).toString('hex')}` }
  }
  return { name: `0x${type.toString(16)}`, note: `Description data: ${desc.subarray(0, 64).toString('hex')}` }
}

/** `notes`: the notes of the PT_NOTE segments, at most MAX_NOTES. */
export function notes(r: ElfReader, segments: { type: number; offset: number; size: number }[], fmt: (v: bigint) => string, errors: string[]): Note[] {
  const out: Note[] = []
  const align4 = (n: number): number => (n + 3) & ~3
  try {
    for (const seg of segments.filter((p) => p.type === PT_NOTE)) {
      let o = seg.offset
      const end = seg.offset + seg.size
      while (o + 12 <= end && out.length < MAX_NOTES) {
        const namesz = r.u32(o)
        const descsz = r.u32(o + 4)
        const type = r.u32(o + 8)
        const nameAt = o + 12
        const descAt = nameAt + align4(namesz)
        const next = descAt + align4(descsz)
        if (next > end || namesz > 4096 || descsz > 65536) break
        const owner = r.cstr(nameAt, namesz)
        const { name, note } = describeNote(owner, type, r.bytes(descAt, descsz), r.le)
        out.push({ owner, size: fmt(BigInt(descsz)), note, name })
        o = next
      }
    }
  } catch (err) {
    errors.push(`notes: ${(err as Error).message}`)
  }
  return out
}
