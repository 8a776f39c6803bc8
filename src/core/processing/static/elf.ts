// Static analysis of an ELF file: `static.elf` with the keys Cuckoo 2.0.7 fills from pyelftools
// (file_header, section_headers, program_headers, dynamic_tags, symbol_tables, relocations, notes:
// the last three in elf-tables.ts) and the words readelf uses, plus what an analyst asks first: the
// shared libraries it needs (DT_NEEDED) and how many symbols it has. There is no maintained ELF reader for Node that takes an untrusted buffer; the ELF header
// and tables are fixed-size records, read here with bounds checks (a cut file gives what was read
// and an `error`).

import { Closed, Hex, Type, type Static } from '../schema.js'
import { ElfNoteSchema, ElfRelocationsSchema, ElfSymbolSchema, notes, relocations, symbolTables } from './elf-tables.js'
import { ElfFormatError, ElfReader, type ElfSection } from './elf-reader.js'

export { ElfFormatError }

export const ElfSchema = Closed({
  file_header: Closed({
    magic: Type.String(), class: Type.String(), data: Type.String(), ei_version: Type.String(), os_abi: Type.String(),
    abi_version: Type.Integer(), type: Type.String(), machine: Type.String(), version: Hex, entry_point_address: Hex,
    start_of_program_headers: Type.Integer(), start_of_section_headers: Type.Integer(), flags: Hex,
    size_of_this_header: Type.Integer(), size_of_program_headers: Type.Integer(), number_of_program_headers: Type.Integer(),
    size_of_section_headers: Type.Integer(), number_of_section_headers: Type.Integer(), section_header_string_table_index: Type.Integer()
  }),
  section_headers: Type.Array(Closed({ name: Type.String(), type: Type.String(), addr: Hex, size: Type.Integer() })),
  program_headers: Type.Array(Closed({ type: Type.String(), addr: Hex, flags: Type.String(), size: Type.Integer() })),
  dynamic_tags: Type.Array(Closed({ tag: Hex, type: Type.String(), value: Type.String() })),
  symbol_tables: Type.Array(ElfSymbolSchema),
  relocations: Type.Array(ElfRelocationsSchema),
  notes: Type.Array(ElfNoteSchema),
  /** Aviary: the DT_NEEDED libraries, and how many symbols .symtab and .dynsym hold. */
  libraries: Type.Array(Type.String()),
  symbols: Type.Integer(),
  error: Type.Optional(Type.String())
})
export type ElfStatic = Static<typeof ElfSchema>

const E_TYPE: Record<number, string> = {
  0: 'NONE (None)', 1: 'REL (Relocatable file)', 2: 'EXEC (Executable file)', 3: 'DYN (Shared object file)', 4: 'CORE (Core file)'
}
const E_MACHINE: Record<number, string> = {
  3: 'Intel 80386', 8: 'MIPS R3000', 20: 'PowerPC', 21: 'PowerPC64', 40: 'ARM', 62: 'Advanced Micro Devices X86-64',
  183: 'AArch64', 243: 'RISC-V'
}
const OS_ABI: Record<number, string> = { 0: 'UNIX - System V', 3: 'UNIX - Linux', 9: 'UNIX - FreeBSD', 12: 'UNIX - OpenBSD' }
const SH_TYPE: Record<number, string> = {
  0: 'NULL', 1: 'PROGBITS', 2: 'SYMTAB', 3: 'STRTAB', 4: 'RELA', 5: 'HASH', 6: 'DYNAMIC', 7: 'NOTE', 8: 'NOBITS',
  9: 'REL', 10: 'SHLIB', 11: 'DYNSYM', 14: 'INIT_ARRAY', 15: 'FINI_ARRAY', 16: 'PREINIT_ARRAY', 17: 'GROUP',
  18: 'SYMTAB_SHNDX', 0x6ffffff6: 'GNU_HASH', 0x6ffffffd: 'VERDEF', 0x6ffffffe: 'VERNEED', 0x6fffffff: 'VERSYM',
  0x6ffffff5: 'GNU_ATTRIBUTES', 0x70000001: 'X86_64_UNWIND', 0x6fffff4c: 'RELR'
}
const P_TYPE: Record<number, string> = {
  0: 'NULL', 1: 'LOAD', 2: 'DYNAMIC', 3: 'INTERP', 4: 'NOTE', 5: 'SHLIB', 6: 'PHDR', 7: 'TLS',
  0x6474e550: 'GNU_EH_FRAME', 0x6474e551: 'GNU_STACK', 0x6474e552: 'GNU_RELRO', 0x6474e553: 'GNU_PROPERTY'
}
const D_TAG: Record<number, string> = {
  0: 'NULL', 1: 'NEEDED', 2: 'PLTRELSZ', 3: 'PLTGOT', 4: 'HASH', 5: 'STRTAB', 6: 'SYMTAB', 7: 'RELA', 8: 'RELASZ',
  9: 'RELAENT', 10: 'STRSZ', 11: 'SYMENT', 12: 'INIT', 13: 'FINI', 14: 'SONAME', 15: 'RPATH', 16: 'SYMBOLIC',
  17: 'REL', 18: 'RELSZ', 19: 'RELENT', 20: 'PLTREL', 21: 'DEBUG', 22: 'TEXTREL', 23: 'JMPREL', 24: 'BIND_NOW',
  25: 'INIT_ARRAY', 26: 'FINI_ARRAY', 27: 'INIT_ARRAYSZ', 28: 'FINI_ARRAYSZ', 29: 'RUNPATH', 30: 'FLAGS',
  0x6ffffef5: 'GNU_HASH', 0x6ffffff0: 'VERSYM', 0x6ffffff9: 'RELACOUNT', 0x6ffffffa: 'RELCOUNT',
  0x6ffffffb: 'FLAGS_1', 0x6ffffffe: 'VERNEED', 0x6fffffff: 'VERNEEDNUM'
}
const STRING_TAGS: Record<number, string> = { 1: 'Shared library', 14: 'Library soname', 15: 'Library rpath', 29: 'Library runpath' }

const MAX_ENTRIES = 65536

function flags (f: number): string {
  return `${f & 4 ? 'R' : ' '}${f & 2 ? 'W' : ' '}${f & 1 ? 'E' : ' '}`.trim()
}


/** `static.elf`. Throws ElfFormatError only when the ELF header itself is missing or cut. */
export function analyzeElf (buf: Buffer): ElfStatic {
  if (buf.length < 52 || buf.readUInt32BE(0) !== 0x7f454c46) throw new ElfFormatError('no ELF header')
  const cls = buf[4]
  const data = buf[5]
  if ((cls !== 1 && cls !== 2) || (data !== 1 && data !== 2)) throw new ElfFormatError('unknown ELF class or data encoding')
  const is64 = cls === 2
  if (is64 && buf.length < 64) throw new ElfFormatError('ELF header truncated')
  const machine = data === 1 ? buf.readUInt16LE(18) : buf.readUInt16BE(18)
  const r = new ElfReader(buf, data === 1, is64, machine)
  const fmt = (v: bigint): string => `0x${v.toString(16).padStart(is64 ? 16 : 8, '0')}`
  const A = is64 ? 8 : 4
  const type = r.u16(16)
  const phoff = r.num(24 + A)
  const shoff = r.num(24 + 2 * A)
  const base = 24 + 3 * A
  const header = {
    magic: '\\x7fELF',
    class: is64 ? 'ELF64' : 'ELF32',
    data: data === 1 ? "2's complement, little endian" : "2's complement, big endian",
    ei_version: buf[6] === 1 ? '1 (current)' : String(buf[6]),
    os_abi: OS_ABI[buf[7] ?? 0] ?? `<unknown: ${buf[7]}>`,
    abi_version: buf[8] ?? 0,
    type: E_TYPE[type] ?? `<unknown>: 0x${type.toString(16)}`,
    machine: E_MACHINE[machine] ?? `<unknown>: 0x${machine.toString(16)}`,
    version: `0x${r.u32(20).toString(16)}`,
    entry_point_address: fmt(r.addr(24)),
    start_of_program_headers: phoff,
    start_of_section_headers: shoff,
    flags: `0x${r.u32(base).toString(16)}`,
    size_of_this_header: r.u16(base + 4),
    size_of_program_headers: r.u16(base + 6),
    number_of_program_headers: r.u16(base + 8),
    size_of_section_headers: r.u16(base + 10),
    number_of_section_headers: r.u16(base + 12),
    section_header_string_table_index: r.u16(base + 14)
  }
  const errors: string[] = []
  const sections: ElfSection[] = []
  const nameOffsets: number[] = []
  try {
    const shentsize = header.size_of_section_headers
    const n = Math.min(header.number_of_section_headers, MAX_ENTRIES)
    for (let i = 0; i < n && shoff > 0; i++) {
      const o = shoff + i * shentsize
      nameOffsets.push(r.u32(o))
      sections.push({
        name: '',
        type: r.u32(o + 4),
        addr: r.addr(o + 8 + A),
        offset: r.num(o + 8 + 2 * A),
        size: r.num(o + 8 + 3 * A),
        link: r.u32(o + 8 + 4 * A),
        entsize: r.num(o + 16 + 5 * A)
      })
    }
  } catch (err) {
    errors.push(`section headers: ${(err as Error).message}`)
  }
  // Names are offsets into the section-name string table, known once the headers are read.
  const shstrtab = sections[header.section_header_string_table_index]
  sections.forEach((s, i) => { s.name = shstrtab === undefined ? '' : r.cstr(shstrtab.offset + (nameOffsets[i] ?? 0), 256) })
  const sectionHeaders = sections.map((s) => ({ name: s.name, type: SH_TYPE[s.type] ?? `0x${s.type.toString(16)}`, addr: fmt(s.addr), size: s.size }))

  const segments: Array<{ type: string; addr: string; flags: string; size: number }> = []
  const rawSegments: Array<{ type: number; offset: number; size: number }> = []
  try {
    const n = Math.min(header.number_of_program_headers, MAX_ENTRIES)
    for (let i = 0; i < n && phoff > 0; i++) {
      const o = phoff + i * header.size_of_program_headers
      const pt = r.u32(o)
      const pf = is64 ? r.u32(o + 4) : r.u32(o + 24)
      const size = r.num(is64 ? o + 40 : o + 20)
      segments.push({ type: P_TYPE[pt] ?? `0x${pt.toString(16)}`, addr: fmt(r.addr(is64 ? o + 16 : o + 8)), flags: flags(pf), size })
      // p_filesz: what the file holds of the segment (the notes are read from there).
      rawSegments.push({ type: pt, offset: r.num(is64 ? o + 8 : o + 4), size: r.num(is64 ? o + 32 : o + 16) })
    }
  } catch (err) {
    errors.push(`program headers: ${(err as Error).message}`)
  }

  const tags: Array<{ tag: string; type: string; value: string }> = []
  const libraries: string[] = []
  try {
    // One budget for all DYNAMIC sections: a crafted file can declare thousands of them.
    let budget = MAX_ENTRIES
    for (const s of sections.filter((x) => x.type === 6)) {
      const strtab = sections[s.link]
      const entsize = 2 * A
      for (let i = 0; i < s.size / entsize && budget > 0; i++, budget--) {
        const o = s.offset + i * entsize
        const tag = Number(r.addr(o))
        const val = r.addr(o + A)
        const label = STRING_TAGS[tag]
        let value = `0x${val.toString(16)}`
        if (label !== undefined && strtab !== undefined) {
          const str = r.cstr(strtab.offset + Number(val))
          value = `${label}: [${str}]`
          if (tag === 1) libraries.push(str)
        }
        tags.push({ tag: fmt(BigInt(tag)), type: D_TAG[tag] ?? `0x${tag.toString(16)}`, value })
        if (tag === 0) break
      }
    }
  } catch (err) {
    errors.push(`dynamic section: ${(err as Error).message}`)
  }
  const result: ElfStatic = {
    file_header: header,
    section_headers: sectionHeaders,
    program_headers: segments,
    dynamic_tags: tags,
    symbol_tables: symbolTables(r, sections, fmt, errors),
    relocations: relocations(r, sections, machine, fmt, errors),
    notes: notes(r, rawSegments, fmt, errors),
    libraries,
    // Symbols in .symtab and .dynsym (symbol_tables lists the first MAX_SYMBOLS of them).
    symbols: sections
      .filter((s) => s.type === 2 || s.type === 11)
      .reduce((n, s) => n + (s.entsize > 0 ? Math.floor(s.size / s.entsize) : 0), 0)
  }
  if (errors.length > 0) result.error = errors.join('; ')
  return result
}
