// ELF analysis of real binaries against readelf, and strings extraction against binutils' strings,
// on the same files.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ElfStatic } from './elf'
import { MAX_SYMBOLS } from './elf-tables'
import { staticAnalysis } from './index'
import { extractStrings } from './strings'
import { analyzeElf, ElfFormatError } from './elf'

let tmp = ''
beforeAll(() => { tmp = mkdtempSync(join(tmpdir(), 'aviary-static-elf-')) })
afterAll(() => { if (tmp !== '') rmSync(tmp, { recursive: true, force: true }) })

const readelf = (args: string[], file: string): string => execFileSync('readelf', ['-W', ...args, file], { maxBuffer: 64 << 20 }).toString()

describe.each(['/bin/ls', '/usr/bin/node'])('ELF %s', (file) => {
  it('matches readelf: header, sections, needed libraries, symbol count', async () => {
    const { static: s } = await staticAnalysis(file, null)
    const elf = s.elf as {
      file_header: Record<string, unknown>
      section_headers: Array<{ name: string; type: string; addr: string; size: number }>
      program_headers: Array<{ type: string }>
      libraries: string[]
      symbols: number
    }
    const h = readelf(['-h'], file)
    const field = (name: string): string => new RegExp(`${name}:\\s+(.+)`).exec(h)?.[1]?.trim() ?? ''
    expect(elf.file_header.class).toBe(field('Class'))
    expect(elf.file_header.machine).toBe(field('Machine'))
    expect(BigInt(String(elf.file_header.entry_point_address))).toBe(BigInt(field('Entry point address')))
    expect(elf.file_header.number_of_section_headers).toBe(Number(field('Number of section headers')))
    expect(String(elf.file_header.type).split(' ')[0]).toBe(field('Type').split(' ')[0])
    // Sections: name, type, address, size per readelf -S.
    const rows = [...readelf(['-S'], file).matchAll(/^\s+\[\s*\d+\]\s+(\S*)\s+(\S+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)/gm)]
      .map((m) => [m[1] === 'NULL' ? '' : m[1], m[1] === 'NULL' ? 'NULL' : m[2], BigInt(`0x${m[3] ?? ''}`), parseInt(m[4] ?? '', 16)])
    expect(elf.section_headers.map((x) => [x.name, x.type, BigInt(x.addr), x.size])).toEqual(rows)
    // Program headers: same count and types.
    const ph = [...readelf(['-l'], file).matchAll(/^\s{2}([A-Z_]+)\s+0x/gm)].map((m) => m[1])
    expect(elf.program_headers.map((p) => p.type)).toEqual(ph)
    // DT_NEEDED.
    const needed = [...readelf(['-d'], file).matchAll(/\(NEEDED\)\s+Shared library: \[(.+)\]/g)].map((m) => m[1])
    expect(elf.libraries).toEqual(needed)
    expect(needed.length).toBeGreaterThan(0)
    // Symbols: readelf -s prints "Symbol table '.dynsym' contains N entries".
    const counts = [...readelf(['-s'], file).matchAll(/contains (\d+) entries/g)].reduce((n, m) => n + Number(m[1]), 0)
    expect(elf.symbols).toBe(counts)
  })

  it('matches readelf: symbol tables, relocations and notes, as Cuckoo 2.0.7 writes them', async () => {
    const { static: s } = await staticAnalysis(file, null)
    const elf = s.elf as ElfStatic
    // Symbols: value, type, bind and name (readelf adds @VERSION to dynamic names; Cuckoo does not).
    const syms = [...readelf(['-s'], file).matchAll(/^\s+\d+: ([0-9a-f]+)\s+\d+ (\S+)\s+(\S+)\s+\S+\s+\S+ ?(\S*)/gm)]
      .map((m) => [BigInt(`0x${m[1]}`), m[2], m[3], (m[4] ?? '').replace(/@.*$/, '')])
    expect(elf.symbol_tables.length).toBe(Math.min(syms.length, MAX_SYMBOLS))
    expect(elf.symbol_tables.map((x) => [BigInt(x.value), x.type, x.bind, x.ndx_name.replace(/@.*$/, '')])).toEqual(syms.slice(0, MAX_SYMBOLS))
    // Relocations: one block per section, offsets, types and names as readelf -r.
    const blocks = [...readelf(['-r'], file).matchAll(/Relocation section '([^']+)' at offset 0x[0-9a-f]+ contains (\d+) entr/g)].map((m) => [m[1], Number(m[2])])
    expect(elf.relocations.map((b) => b.name)).toEqual(blocks.map((b) => b[0]))
    const rows = [...readelf(['-r'], file).matchAll(/^([0-9a-f]{8,16})\s+([0-9a-f]{8,16})\s+(R_\S+)[ \t]*(?:([0-9a-f]+)[ \t]+(\S+))?/gm)]
    const ours = elf.relocations.flatMap((b) => b.entries)
    expect(ours.length).toBeGreaterThan(0)
    const first = rows.slice(0, Math.min(ours.length, 300))
    expect(ours.slice(0, first.length).map((e) => [BigInt(e.offset), BigInt(e.info), e.type])).toEqual(first.map((m) => [BigInt(`0x${m[1]}`), BigInt(`0x${m[2]}`), m[3]]))
    for (const [i, m] of first.entries()) if (m[5] !== undefined && !m[5].startsWith('+')) expect(ours[i]!.name).toBe(m[5].replace(/@.*$/, ''))
    // Notes: owner, size, type and the words readelf uses for the ABI tag and the build id.
    const noteText = readelf(['-n'], file)
    for (const n of elf.notes) expect(noteText).toContain(n.name)
    const build = /Build ID: ([0-9a-f]+)/.exec(noteText)?.[1]
    expect(elf.notes.find((n) => n.name === 'NT_GNU_BUILD_ID')?.note).toBe(`Build ID: ${build}`)
    const abi = /OS: (\S+), ABI: ([\d.]+)/.exec(noteText)
    if (abi !== null) expect(elf.notes.find((n) => n.name === 'NT_GNU_ABI_TAG')?.note).toBe(`OS: ${abi[1]}, ABI: ${abi[2]}`)
  })
})

describe('ELF corrupt', () => {
  it('never throws anything but ElfFormatError on 400 mutated copies of /bin/ls', () => {
    const original = readFileSync('/bin/ls')
    const shoff = Number(original.readBigUInt64LE(40))
    let seed = 99
    const rand = (n: number): number => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n }
    let partial = 0
    for (let round = 0; round < 400; round++) {
      const buf = Buffer.from(original)
      // The ELF header and the section header table are where a reader trusts numbers.
      for (let k = 0; k < 1 + rand(8); k++) {
        const r = rand(3)
        buf[r === 0 ? rand(64) : r === 1 ? shoff + rand(original.length - shoff) : rand(buf.length)] = rand(256)
      }
      try {
        const r = analyzeElf(buf.subarray(0, rand(3) === 0 ? rand(buf.length) : buf.length))
        JSON.stringify(r)
        if (r.error !== undefined) partial++
      } catch (err) {
        expect(err).toBeInstanceOf(ElfFormatError)
      }
    }
    expect(partial).toBeGreaterThan(0)
  })

  it('a cut ELF gives the header and an error', async () => {
    const f = join(tmp, 'cut-ls')
    writeFileSync(f, readFileSync('/bin/ls').subarray(0, 4096))
    const { static: s } = await staticAnalysis(f, null)
    const elf = s.elf as { file_header: { class: string }; error: string }
    expect(elf.file_header.class).toBe('ELF64')
    expect(elf.error).toMatch(/section headers: offset .* outside the file/)
  })
})

/** strings(1) output as a multiset of runs, normalised to Cuckoo's character class. */
function oracle (args: string[], file: string): string[] {
  const out = execFileSync('strings', ['-a', '-n', '6', ...args, file], { maxBuffer: 256 << 20 }).toString('latin1')
  // strings prints tab as part of a run and never 0x1f; Cuckoo (and Aviary) the other way round:
  // split both on the characters only one side accepts, and keep runs of 6 or more.
  return out.split('\n').flatMap((l) => l.split('\t')).filter((s) => s.length >= 6)
}

function normalise (list: string[]): string[] {
  return list.flatMap((s) => s.split('\x1f')).filter((s) => s.length >= 6).sort()
}

describe('strings', () => {
  it('ASCII and UTF-16LE runs equal binutils strings on /bin/ls and a built file', () => {
    const uncapped = { maxCount: Number.MAX_SAFE_INTEGER, maxLength: Number.MAX_SAFE_INTEGER }
    const built = Buffer.concat([
      Buffer.from('\x00\x01short\x00exactly6\x00abcde\x00\x00'),
      Buffer.from('wide string here\0', 'utf16le'),
      Buffer.from('\x00\x00'),
      Buffer.from('tab\tinside runs\x1fand unit sep\xff\xfehigh bytes cut here'),
      Buffer.from('x\0y\0', 'latin1'),
      Buffer.from('ümlaut wide', 'utf16le')
    ])
    const builtFile = join(tmp, 'built.bin')
    writeFileSync(builtFile, built)
    for (const file of ['/bin/ls', builtFile]) {
      const buf = readFileSync(file)
      const all = extractStrings(buf, uncapped)
      // eslint-disable-next-line no-control-regex -- 0x1f is part of Cuckoo's character class
      const asciiCount = [...buf.toString('latin1').matchAll(/[\x1f-\x7e]{6,}/g)].length
      expect(normalise(all.slice(0, asciiCount))).toEqual(normalise(oracle([], file)))
      expect(normalise(all.slice(asciiCount))).toEqual(normalise(oracle(['-e', 'l'], file)))
    }
    const mine = extractStrings(built, uncapped)
    expect(mine).toContain('exactly6')
    expect(mine).not.toContain('short')
    expect(mine).toContain('wide string here')
    expect(mine).toContain('mlaut wide')
  })

  it("applies Cuckoo's caps: 2048 strings, 1024 characters, first 16 MiB", async () => {
    const long = 'A'.repeat(5000)
    const many = Array.from({ length: 3000 }, (_v, i) => `string-${String(i).padStart(6, '0')}`).join('\0')
    const f = join(tmp, 'caps.bin')
    const tail = Buffer.from('\0after-sixteen-mebibytes\0')
    const pad = Buffer.alloc(16 * 1024 * 1024 - long.length - many.length - 2)
    writeFileSync(f, Buffer.concat([Buffer.from(`${long}\0`), Buffer.from(`${many}\0`), pad, tail]))
    const { strings } = await staticAnalysis(f, null)
    expect(strings.length).toBe(2048)
    expect(strings[0]).toBe('A'.repeat(1024))
    expect(strings[1]).toBe('string-000000')
    expect(strings).not.toContain('after-sixteen-mebibytes')
    // One run of 16 MiB: V8 overflows its regexp stack on X{6,} over such a run; X{6}X* does not.
    const run = join(tmp, 'run.bin')
    writeFileSync(run, Buffer.alloc(16 * 1024 * 1024, 'a'))
    const r = await staticAnalysis(run, null)
    expect(r.strings).toEqual(['a'.repeat(1024)])
    expect(r.static.error).toBeUndefined()
    const small = join(tmp, 'small.bin')
    // The UTF-16LE expression, like strings -el, takes a printable byte followed by NUL as a wide
    // character: the last letter of an ASCII string ending in one NUL starts the wide run.
    writeFileSync(small, Buffer.concat([Buffer.from('plain ascii\0'), Buffer.from('wide text', 'utf16le'), Buffer.from('\0\0wide two', 'utf16le')]))
    expect((await staticAnalysis(small, null)).strings).toEqual(['plain ascii', 'iwide text', 'wide two'])
  })
})
