// VBA macro source: the decompressor against the worked examples of [MS-OVBA] 3.2, and documents
// built here as Office writes them (cfb's writer for the compound file; the dir stream's records and
// the module streams, p-code first and the compressed source at MODULEOFFSET, as [MS-OVBA] 2.3.4
// lays them out): a .doc with a document module and a procedural one, an OOXML .docm holding a
// vbaProject.bin, and hostile variants that must end in an error, never a throw or a hang.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import CFB from 'cfb'
import { ZipFile } from 'yazl'
import { createWriteStream } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { staticAnalysis } from './index'
import { analyzeOle, type OfficeFacts } from './documents'
import { missingConsumerFields } from '../../../../test/cuckoo-report-fields'
import { decompressVba, deobfuscateVba, extractMacros, MAX_MODULE_CODE, VbaFormatError } from './vba'
import { mutated } from '../../../../test/mutated'

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')

/**
 * A compressed container decompressors accept: 4096-byte blocks as raw chunks, the rest as chunks
 * of literal tokens (at most 3640 bytes fit one chunk's 4098).
 */
function compress(data: Buffer): Buffer {
  const parts: Buffer[] = [Buffer.from([1])]
  let i = 0
  for (; data.length - i >= 4096; i += 4096) {
    const h = Buffer.alloc(2)
    h.writeUInt16LE(0x3000 | 4095) // raw: flag 0, signature 3, size 4098
    parts.push(h, data.subarray(i, i + 4096))
  }
  for (; i < data.length; i += 3640) {
    const rest = data.subarray(i, i + 3640)
    const body: Buffer[] = []
    for (let k = 0; k < rest.length; k += 8) body.push(Buffer.from([0]), rest.subarray(k, k + 8))
    const b = Buffer.concat(body)
    const h = Buffer.alloc(2)
    h.writeUInt16LE(0xb000 | (b.length + 2 - 3))
    parts.push(h, b)
  }
  return Buffer.concat(parts)
}

function record(id: number, body: Buffer | string | number, size?: number): Buffer {
  const data = typeof body === 'number' ? (() => { const b = Buffer.alloc(size ?? 4); if (b.length === 2) b.writeUInt16LE(body); else b.writeUInt32LE(body); return b })()
    : typeof body === 'string' ? Buffer.from(body, 'latin1') : body
  const h = Buffer.alloc(6)
  h.writeUInt16LE(id)
  h.writeUInt32LE(data.length, 2)
  return Buffer.concat([h, data])
}

interface Module { name: string; code: string; document: boolean; stream?: string }

/** A VBA storage's streams: dir, and each module's stream (p-code, then its compressed source). */
function vbaStreams(modules: Module[], codePage = 1252): Record<string, Buffer> {
  const version = Buffer.alloc(12)
  version.writeUInt16LE(0x0009)
  version.writeUInt32LE(4, 2) // PROJECTVERSION says 4 and carries 6
  version.writeUInt32LE(0x65be0257, 6)
  version.writeUInt16LE(0x11, 10)
  const dir: Buffer[] = [
    record(0x0001, 3), record(0x0002, 0x409), record(0x0014, 0x409), record(0x0003, codePage, 2),
    record(0x0004, 'Project'), record(0x0005, ''), record(0x0040, ''), record(0x0006, ''), record(0x003d, ''),
    record(0x0007, 0), record(0x0008, 0), version, record(0x000c, ''), record(0x003c, ''),
    record(0x000f, modules.length, 2), record(0x0013, 0xffff, 2)
  ]
  const streams: Record<string, Buffer> = {}
  modules.forEach((m, k) => {
    const stream = m.stream ?? m.name
    const pcode = Buffer.alloc(37 + k * 11, 0xcc)
    streams[stream] = Buffer.concat([pcode, compress(Buffer.from(m.code, 'latin1'))])
    dir.push(
      record(0x0019, m.name), record(0x0047, Buffer.from(m.name, 'utf16le')),
      record(0x001a, stream), record(0x0032, Buffer.from(stream, 'utf16le')),
      record(0x001c, ''), record(0x0048, Buffer.alloc(0)),
      record(0x0031, pcode.length), record(0x001e, 0), record(0x002c, 0xffff, 2),
      record(m.document ? 0x0022 : 0x0021, Buffer.alloc(0)), record(0x002b, Buffer.alloc(0))
    )
  })
  dir.push(record(0x0010, Buffer.alloc(0)))
  streams['dir'] = compress(Buffer.concat(dir))
  streams['_VBA_PROJECT'] = hex('cc61ffff000000')
  return streams
}

function compound(entries: Record<string, Buffer>): Buffer {
  const cfb = CFB.utils.cfb_new()
  for (const [p, data] of Object.entries(entries)) CFB.utils.cfb_add(cfb, p, data)
  return Buffer.from(CFB.write(cfb, { type: 'buffer' }) as Uint8Array)
}

const prefixed = (prefix: string, streams: Record<string, Buffer>): Record<string, Buffer> =>
  Object.fromEntries(Object.entries(streams).map(([k, v]) => [`${prefix}${k}`, v]))

const AUTO_OPEN = 'Attribute VB_Name = "ThisDocument"\r\nSub AutoOpen()\r\n  Shell Chr(99) & Chr(109) & Chr(100) & " /c calc", 0\r\nEnd Sub\r\n'
const LONG = `Attribute VB_Name = "Module1"\r\n' caf\xe9\r\n${Array.from({ length: 400 }, (_, i) => `Dim v${i} As String ' line ${i}\r\n`).join('')}`
const MODULES: Module[] = [{ name: 'ThisDocument', code: AUTO_OPEN, document: true }, { name: 'Module1', code: LONG, document: false }]

let tmp = ''
beforeAll(() => { tmp = mkdtempSync(join(tmpdir(), 'aviary-vba-')) })
afterAll(() => { if (tmp !== '') rmSync(tmp, { recursive: true, force: true }) })

describe('VBA decompression', () => {
  it('gives the decompressed text of the worked examples of [MS-OVBA] 3.2', () => {
    expect(decompressVba(hex('01 19 B0 00 61 62 63 64 65 66 67 68 00 69 6A 6B 6C 6D 6E 6F 70 00 71 72 73 74 75 76 2E'), 1e6).toString('latin1'))
      .toBe('abcdefghijklmnopqrstuv.')
    expect(decompressVba(hex('01 2F B0 00 23 61 61 61 62 63 64 65 82 66 00 70 61 67 68 69 6A 01 38 08 61 6B 6C 00 30 6D 6E 6F 70 06 71 02 70 04 10 72 73 74 75 76 10 77 78 79 7A 00 3C'), 1e6).toString('latin1'))
      .toBe('#aaabcdefaaaaghijaaaaaklaaamnopqaaaaaaaaaaaarstuvwxyzaaa')
    expect(decompressVba(hex('01 03 B0 02 61 45 00'), 1e6).toString('latin1')).toBe('a'.repeat(73))
  })

  it('round-trips raw and literal chunks, and stops at its limit', () => {
    const data = Buffer.from(LONG, 'latin1')
    expect(data.length).toBeGreaterThan(8192)
    expect(decompressVba(compress(data), 1e6).equals(data)).toBe(true)
    expect(decompressVba(compress(data), 5000).length).toBe(5000)
    // A run that would expand without end is cut at the limit too.
    const run = Buffer.concat([hex('01'), ...Array.from({ length: 100 }, () => hex('03 B0 02 61 45 00'))])
    expect(decompressVba(run, 1000).length).toBe(1000)
  })

  it('refuses what is not a container, and never throws anything else on mutated input', () => {
    expect(() => decompressVba(Buffer.from('plain text'), 100)).toThrow(VbaFormatError)
    expect(() => decompressVba(hex('01 03 B0 02 61 00 10'), 100)).toThrow(/reaches before its chunk/) // offset 2 after one byte
    const base = compress(Buffer.from(LONG, 'latin1'))
    for (const b of mutated(base, 500, 8, 11)) {
      try {
        expect(decompressVba(b, 64 * 1024).length).toBeLessThanOrEqual(64 * 1024)
      } catch (err) {
        expect(err).toBeInstanceOf(VbaFormatError)
      }
    }
  })
})

describe('VBA source of documents', () => {
  it('reads every module of a .doc, in the code page of its project, with Cuckoo 2.0.7\'s keys', async () => {
    const doc = join(tmp, 'invoice.doc')
    writeFileSync(doc, compound({ WordDocument: Buffer.alloc(512, 1), ...prefixed('Macros/VBA/', vbaStreams(MODULES)), 'Macros/PROJECT': Buffer.from('ID="{}"\r\n') }))
    const office = (await staticAnalysis(doc, null)).static.office as OfficeFacts
    expect(office.error).toBeUndefined()
    expect(office.format).toBe('ole')
    expect(office.macros.map((m) => [m.stream, m.filename])).toEqual([['Macros/VBA/ThisDocument', 'ThisDocument.cls'], ['Macros/VBA/Module1', 'Module1.bas']])
    expect(office.macros[0]!.orig_code).toBe(AUTO_OPEN)
    expect(office.macros[0]!.deobf).toContain('Shell "cmd /c calc", 0')
    expect(office.macros[1]!.orig_code).toBe(LONG.replace('\xe9', 'é'))
    expect(office.vba).toEqual(expect.arrayContaining(['Macros', 'VBA', '_VBA_PROJECT']))
    // The keys Cuckoo 2.0.7's _office.html reads, with the types it needs (a list it iterates).
    expect(missingConsumerFields({ static: { office } }, 'file', ['CuckooWeb']).filter((m) => m.includes('static.office'))).toEqual([])
    expect(missingConsumerFields({ static: { office: { ...office, macros: true } } }, 'file', ['CuckooWeb']).filter((m) => m.includes('static.office'))).toContain('CuckooWeb: static.office.macros (not array)')
  })

  it('reads the vbaProject.bin of an OOXML document', async () => {
    const docm = join(tmp, 'report.docm')
    const project = compound({ ...prefixed('VBA/', vbaStreams([{ name: 'NewMacros', stream: 'NEWMACROS', code: 'Sub Document_Open()\r\nEnd Sub\r\n', document: false }])) })
    const z = new ZipFile()
    z.addBuffer(Buffer.from('<Types/>'), '[Content_Types].xml')
    z.addBuffer(Buffer.from('<w:document/>'), 'word/document.xml')
    z.addBuffer(project, 'word/vbaProject.bin')
    z.end()
    await new Promise<void>((resolve, reject) => z.outputStream.pipe(createWriteStream(docm)).on('close', resolve).on('error', reject))
    const office = (await staticAnalysis(docm, null)).static.office as OfficeFacts
    expect(office).toMatchObject({ format: 'ooxml', vba: ['word/vbaProject.bin'] })
    expect(office.macros).toEqual([{ stream: 'word/vbaProject.bin/VBA/NEWMACROS', filename: 'NewMacros.bas', orig_code: 'Sub Document_Open()\r\nEnd Sub\r\n', deobf: 'Sub Document_Open()\r\nEnd Sub\r\n' }])
  })

  it('keeps the modules it can read when another is broken, and says why', () => {
    const streams = vbaStreams(MODULES)
    streams['ThisDocument'] = Buffer.alloc(10, 0xcc) // shorter than its source offset
    const facts = analyzeOle(compound(prefixed('Macros/VBA/', streams)))
    expect(facts.macros.map((m) => m.filename)).toEqual(['Module1.bas'])
    expect(facts.error).toMatch(/^module ThisDocument: source offset \d+ past the stream's 10 bytes$/)
    const noStream = vbaStreams(MODULES)
    delete noStream['Module1']
    expect(analyzeOle(compound(prefixed('Macros/VBA/', noStream))).error).toBe('module Module1: no stream Module1')
  })

  it('bounds what a hostile project can make it hold', () => {
    // A module whose source decompresses past the cap: cut there.
    const huge = Buffer.concat([hex('01'), ...Array.from({ length: 1200 }, () => hex('03 B0 02 61 45 00'))])
    const streams = vbaStreams([{ name: 'Big', code: 'x', document: false }])
    streams['Big'] = Buffer.concat([Buffer.alloc(37, 0xcc), huge])
    const { macros } = extractMacros(compound(prefixed('VBA/', streams)))
    expect(macros[0]!.orig_code.length).toBeLessThanOrEqual(MAX_MODULE_CODE)
    // 400 mutated projects: an error or macros, never a throw.
    const base = compound(prefixed('Macros/VBA/', vbaStreams(MODULES)))
    for (const b of mutated(base, 400, 12, 3)) {
      const facts = analyzeOle(b)
      expect(Array.isArray(facts.macros)).toBe(true)
    }
  })

  it('folds Chr() and concatenated literals, and leaves the rest alone', () => {
    expect(deobfuscateVba('x = Chr(72) & ChrW(105) & "!" + Chr$(34)')).toBe('x = "Hi!"""')
    expect(deobfuscateVba('y = Chr(10) & "a"')).toBe('y = Chr(10) & "a"')
    expect(deobfuscateVba('z = a & "b"')).toBe('z = a & "b"')
  })
})
