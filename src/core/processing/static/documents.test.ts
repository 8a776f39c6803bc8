// Documents and archives built in the test: PDFs with JavaScript in the open and hidden in a
// compressed object stream, OOXML documents with and without a VBA project (made with yazl), an
// OLE compound file with a VBA storage (checked by `file`), zips and tars listed as unzip and tar
// list them.
import { execFileSync } from 'node:child_process'
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deflateSync } from 'node:zlib'
import { ZipFile } from 'yazl'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { staticAnalysis } from './index'
import { analyzeOle, type OfficeFacts } from './documents'
import type { PdfFacts } from './pdf'
import type { ArchiveListing } from './archives'
import { mutated } from '../../../../test/mutated'

let tmp = ''
beforeAll(() => { tmp = mkdtempSync(join(tmpdir(), 'aviary-static-doc-')) })
afterAll(() => { if (tmp !== '') rmSync(tmp, { recursive: true, force: true }) })

/** A PDF with a cross-reference table computed from the objects' real offsets. */
function pdf (objects: Array<string | Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')]
  const offsets: number[] = []
  let at = parts[0]?.length ?? 0
  objects.forEach((o, i) => {
    const body = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), typeof o === 'string' ? Buffer.from(o, 'latin1') : o, Buffer.from('\nendobj\n')])
    offsets.push(at)
    parts.push(body)
    at += body.length
  })
  const xref = [`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`, ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`)].join('')
  parts.push(Buffer.from(`${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`))
  return Buffer.concat(parts)
}

async function zip (file: string, entries: Record<string, string | Buffer>): Promise<void> {
  const z = new ZipFile()
  for (const [name, data] of Object.entries(entries)) z.addBuffer(Buffer.isBuffer(data) ? data : Buffer.from(data), name)
  z.end()
  await new Promise<void>((resolve, reject) => {
    z.outputStream.pipe(createWriteStream(file)).on('close', resolve).on('error', reject)
  })
}

describe('PDF', () => {
  it('counts objects, JavaScript, OpenAction, Launch and embedded files, and reads them as Cuckoo 2.0.7 shows them', async () => {
    const f = join(tmp, 'js.pdf')
    writeFileSync(f, pdf([
      '<< /Type /Catalog /Pages 2 0 R /OpenAction 4 0 R /Names << /EmbeddedFiles 6 0 R >> >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /AA << /O 5 0 R >> >>',
      '<< /Type /Action /S /JavaScript /JS (app.alert\\("hi"\\);) >>',
      '<< /Type /Action /S /Launch /F (cmd.exe) >>',
      '<< /Names [(a.exe) 7 0 R] >>',
      '<< /Type /Filespec /F (a.exe) /EF << /F 8 0 R >> >>',
      '<< /Type /EmbeddedFile /Length 2 >>\nstream\nMZ\nendstream',
      '<< /Type /Annot /Subtype /Link /A << /S /URI /URI (http://example.test/x) >> >>'
    ]))
    expect(execFileSync('file', ['-b', f]).toString()).toMatch(/^PDF document, version 1\.7/)
    const { static: s } = await staticAnalysis(f, null)
    const [p, ...more] = s.pdf as PdfFacts
    expect(more).toEqual([])
    // Counts are of name tokens, as pdfid's: `/S /URI /URI (...)` has two.
    expect(p!.counts).toEqual({
      objects: 9, streams: 1, javascript: 2, openaction: 1, aa: 1, launch: 1, embedded_files: 2, uri: 2, object_streams: 0, encrypt: 0, acroform: 0, xfa: 0
    })
    expect(p).toMatchObject({
      version: 0, pdf_version: '1.7', urls: ['http://example.test/x'], attachments: [{ filename: 'a.exe' }],
      openaction: '<< /Type /Action /S /JavaScript /JS (app.alert\\("hi"\\);) >>'
    })
    expect(p!.javascript).toEqual([{ orig_code: 'app.alert("hi");', beautified: 'app.alert("hi");', urls: [] }])
    expect(p!.error).toBeUndefined()
  })

  it('finds JavaScript behind #-escaped names and inside a Flate object stream', async () => {
    const obj10 = '<< /S /JavaScript /JS (this.exportDataObject\\(\\)) >>'
    const head = `10 0 11 ${obj10.length + 1} `
    const packed = deflateSync(Buffer.from(`${head}${obj10} << /OpenAction 10 0 R >>`))
    const f = join(tmp, 'hidden.pdf')
    writeFileSync(f, pdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [] /Count 0 >>',
      Buffer.concat([Buffer.from(`<< /Type /ObjStm /N 2 /First ${head.length} /Filter /FlateDecode /Length ${packed.length} >>\nstream\n`), packed, Buffer.from('\nendstream')]),
      '<< /S /J#61vaScript /J#53 (1) >>'
    ]))
    const [p] = (await staticAnalysis(f, null)).static.pdf as PdfFacts
    expect(p!.counts.object_streams).toBe(1)
    expect(p!.counts.javascript).toBe(4) // /JavaScript + /JS in the object stream, /J#61vaScript + /J#53 outside
    expect(p!.counts.openaction).toBe(1)
    expect(p!.counts.objects).toBe(4 + 2)
    expect(p!.javascript.map((j) => j.orig_code).sort()).toEqual(['1', 'this.exportDataObject()'])
    expect(p!.openaction).toBe('<< /S /JavaScript /JS (this.exportDataObject\\(\\)) >>')
    expect(p!.error).toBeUndefined()
  })
})

describe('Office', () => {
  const base = {
    '[Content_Types].xml': '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
    'word/document.xml': '<w:document/>',
    'word/_rels/settings.xml.rels': '<Relationships><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/attachedTemplate" Target="http://evil.test/t.dotm" TargetMode="External"/><Relationship Id="rId2" Target="styles.xml"/></Relationships>'
  }

  it('OOXML: a vbaProject.bin is listed (one that is not a compound file says so); external relationships are listed', async () => {
    const docx = join(tmp, 'a.docx')
    const docm = join(tmp, 'a.docm')
    await zip(docx, base)
    await zip(docm, { ...base, 'word/vbaProject.bin': Buffer.from('d0cf11e0a1b11ae1', 'hex') })
    const x = (await staticAnalysis(docx, null)).static.office as OfficeFacts
    const m = (await staticAnalysis(docm, null)).static.office as OfficeFacts
    expect(x).toEqual({ format: 'ooxml', macros: [], vba: [], external_targets: ['http://evil.test/t.dotm'] })
    expect(m.macros).toEqual([])
    expect(m.vba).toEqual(['word/vbaProject.bin'])
    expect(m.error).toMatch(/^word\/vbaProject\.bin: ./)
  })

  it('OLE: a VBA storage is listed; a plain compound file has none', async () => {
    const withVba = join(tmp, 'm.doc')
    const plain = join(tmp, 'p.doc')
    writeFileSync(withVba, ole(['Root Entry', 'WordDocument', 'Macros', 'VBA', '_VBA_PROJECT']))
    writeFileSync(plain, ole(['Root Entry', 'WordDocument', '\x01CompObj']))
    // libmagic reads the builder's output as a compound file holding a Word document.
    expect(execFileSync('file', ['-b', withVba]).toString()).toMatch(/^CDFV2 Microsoft Word/)
    const a = (await staticAnalysis(withVba, null)).static.office as OfficeFacts
    const b = (await staticAnalysis(plain, null)).static.office as OfficeFacts
    expect(a).toMatchObject({ format: 'ole', macros: [] }) // no dir stream here: vba.test.ts reads real projects
    expect(a.vba.sort()).toEqual(['Macros', 'VBA', '_VBA_PROJECT'])
    expect(b).toMatchObject({ format: 'ole', macros: [], vba: [] })
    expect(a.error).toBeUndefined()
  })

  it('OLE: 400 mutated copies never throw, and a damaged directory still finds a VBA project by its name', () => {
    const base = ole(['Root Entry', 'WordDocument', 'Macros', 'VBA', '_VBA_PROJECT'])
    for (const b of mutated(base, 400, 16, 7)) {
      const facts = analyzeOle(b)
      expect(facts.format).toBe('ole')
      expect(Array.isArray(facts.macros)).toBe(true)
    }
    const broken = Buffer.from(base)
    broken.writeUInt32LE(0x12345678, 48) // the directory's first sector, far past the end
    expect(analyzeOle(broken)).toMatchObject({ format: 'ole', macros: [], vba: ['_VBA_PROJECT'], error: expect.any(String) })
  })
})

/** A minimal MS-CFB v3 file: header, one FAT sector, a directory chain of two sectors (8 names). */
function ole (names: string[]): Buffer {
  const b = Buffer.alloc(512 * 4)
  Buffer.from('d0cf11e0a1b11ae1', 'hex').copy(b, 0)
  b.writeUInt16LE(0x3e, 24); b.writeUInt16LE(3, 26); b.writeUInt16LE(0xfffe, 28); b.writeUInt16LE(9, 30); b.writeUInt16LE(6, 32)
  b.writeUInt32LE(1, 44) // one FAT sector
  b.writeUInt32LE(1, 48) // directory at sector 1
  b.writeUInt32LE(4096, 56)
  b.writeUInt32LE(0xfffffffe, 60); b.writeUInt32LE(0xfffffffe, 68)
  for (let i = 0; i < 109; i++) b.writeUInt32LE(i === 0 ? 0 : 0xffffffff, 76 + i * 4)
  const fat = 512
  for (let i = 0; i < 128; i++) b.writeUInt32LE(0xffffffff, fat + i * 4)
  b.writeUInt32LE(0xfffffffd, fat) // sector 0 is the FAT
  b.writeUInt32LE(2, fat + 4) // sector 1: the directory, continued in sector 2
  b.writeUInt32LE(0xfffffffe, fat + 8)
  names.slice(0, 8).forEach((name, i) => {
    const e = 1024 + i * 128
    const n = Buffer.from(`${name}\0`, 'utf16le')
    n.copy(b, e)
    b.writeUInt16LE(n.length, e + 64)
    b[e + 66] = i === 0 ? 5 : name === '_VBA_PROJECT' || name === 'WordDocument' ? 2 : 1
    b.writeUInt32LE(0xffffffff, e + 68); b.writeUInt32LE(0xffffffff, e + 72)
    b.writeUInt32LE(i === 0 ? 1 : 0xffffffff, e + 76)
    b.writeUInt32LE(0xfffffffe, e + 116)
  })
  return b
}

describe('archives', () => {
  it('zip: names and sizes as unzip -l lists them, capped at 1000', async () => {
    const f = join(tmp, 'a.zip')
    const entries: Record<string, string> = {}
    for (let i = 0; i < 1200; i++) entries[`dir/file-${i}.txt`] = 'x'.repeat(i)
    await zip(f, entries)
    const a = (await staticAnalysis(f, null)).static.archive as ArchiveListing
    const listed = [...execFileSync('unzip', ['-l', f], { maxBuffer: 16 << 20 }).toString().matchAll(/^\s*(\d+)\s+\S+\s+\S+\s+(\S+)$/gm)]
      .map((m) => ({ name: m[2], size: Number(m[1]) }))
    expect(a.type).toBe('zip')
    expect(a.count).toBe(1200)
    expect(a.truncated).toBe(true)
    expect(a.entries.map((e) => ({ name: e.name, size: e.size }))).toEqual(listed.slice(0, 1000))
  })

  it('tar and tar.gz: names and sizes as tar -tv lists them', async () => {
    const src = join(tmp, 'src')
    execFileSync('mkdir', ['-p', join(src, 'sub')])
    writeFileSync(join(src, 'a.bin'), Buffer.alloc(12345, 1))
    writeFileSync(join(src, 'sub', 'b.txt'), 'hello')
    for (const [name, flag] of [['t.tar', '-cf'], ['t.tgz', '-czf']] as const) {
      const f = join(tmp, name)
      execFileSync('tar', [flag, f, '-C', src, '.'])
      const a = (await staticAnalysis(f, null)).static.archive as ArchiveListing
      const listed = execFileSync('tar', ['-tvf', f]).toString().trim().split('\n')
        .map((l) => /^\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(.+)$/.exec(l)).map((m) => ({ name: m?.[2], size: Number(m?.[1]) }))
      expect(a.type).toBe('tar')
      expect(a.entries.map((e) => ({ name: e.name, size: e.size }))).toEqual(listed)
      expect(a.entries.some((e) => e.name === './a.bin' && e.size === 12345)).toBe(true)
    }
  })

  it('random bytes and a broken zip give no throw', async () => {
    const f = join(tmp, 'broken.zip')
    writeFileSync(f, Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(100, 7)]))
    const r = await staticAnalysis(f, null)
    expect(String(r.static.error)).not.toBe('')
    const g = join(tmp, 'rand')
    writeFileSync(g, Buffer.from(Array.from({ length: 4096 }, (_v, i) => (i * 7919) & 0xff)))
    const r2 = await staticAnalysis(g, null)
    expect(r2.static).toEqual({})
  })
})
