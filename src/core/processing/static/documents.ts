// Cheap facts about documents, the ones that make a document worth a closer look: for a PDF the
// pdfid-style counts of objects, streams, JavaScript, automatic actions, launch actions and
// embedded files (names are read with their #xx escapes undone, and Flate object streams are
// inflated so that objects hidden in them are counted too); for Office files the source of their
// VBA macros (vbaProject.bin in an OOXML zip, a _VBA_PROJECT / VBA storage in an OLE compound file;
// vba.ts) and the external targets of OOXML relationships (remote templates). Cuckoo 2 ran peepdf
// and oletools here. The OLE directory is read by SheetJS's maintained `cfb`; the PDF counts are token
// counts written below, since no maintained JavaScript PDF reader is made for hostile files and
// counting names needs no parser.
import { inflateSync } from 'node:zlib'
import CFB from 'cfb'
import { listZip, type ZipEntryText } from './archives.js'
import { extractMacros } from './vba.js'
import { Closed, Nullable, Type, type Static } from '../schema.js'

const PDF_MAX_BYTES = 64 * 1024 * 1024
const INFLATE_MAX = 16 * 1024 * 1024
const MAX_URLS = 256
const MAX_STREAMS_EXAMINED = 4096

export const PdfSchema = Closed({
  version: Nullable(Type.String()),
  objects: Type.Integer(),
  streams: Type.Integer(),
  object_streams: Type.Integer(),
  javascript: Type.Integer(),
  openaction: Type.Integer(),
  aa: Type.Integer(),
  launch: Type.Integer(),
  embedded_files: Type.Integer(),
  uri: Type.Integer(),
  acroform: Type.Integer(),
  xfa: Type.Integer(),
  encrypt: Type.Integer(),
  urls: Type.Array(Type.String()),
  error: Type.Optional(Type.String())
})
export type PdfFacts = Static<typeof PdfSchema>

/** Undoes #xx escapes in a PDF name (/J#61vaScript is /JavaScript). */
function pdfName (raw: string): string {
  return raw.replace(/#([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
}

const COUNTED: Record<string, keyof PdfFacts> = {
  '/JS': 'javascript', '/JavaScript': 'javascript', '/OpenAction': 'openaction', '/AA': 'aa', '/Launch': 'launch',
  '/EmbeddedFile': 'embedded_files', '/EmbeddedFiles': 'embedded_files', '/URI': 'uri', '/AcroForm': 'acroform',
  '/XFA': 'xfa', '/Encrypt': 'encrypt', '/ObjStm': 'object_streams'
}

const isWordChar = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95

/** Counts `n g obj` headers: each "obj" keyword (not "endobj") preceded by two numbers. */
function countObjects (text: string): number {
  let n = 0
  for (let p = text.indexOf('obj'); p >= 0; p = text.indexOf('obj', p + 3)) {
    if (isWordChar(text.charCodeAt(p + 3)) || isWordChar(text.charCodeAt(p - 1))) continue
    if (/\d{1,10}\s{1,8}\d{1,5}\s{1,8}$/.test(text.slice(Math.max(0, p - 32), p))) n++
  }
  return n
}

/** Counts `stream` keywords that start stream data (followed by an end of line). */
function countStreams (text: string): number {
  let n = 0
  for (let p = text.indexOf('stream'); p >= 0; p = text.indexOf('stream', p + 6)) {
    const next = text.charCodeAt(p + 6)
    if (!isWordChar(text.charCodeAt(p - 1)) && (next === 10 || (next === 13 && text.charCodeAt(p + 7) === 10))) n++
  }
  return n
}

// Scans are index loops and bounded expressions: a hostile PDF of 64 MiB made of one repeated
// token costs a linear pass, not a backtracking one.
function scanPdfText (text: string, facts: PdfFacts, urls: Set<string>): void {
  facts.objects += countObjects(text)
  facts.streams += countStreams(text)
  for (const m of text.matchAll(/\/[^\s/<>[\]()%{}]+/g)) {
    const key = COUNTED[m[0].includes('#') ? pdfName(m[0]) : m[0]]
    if (key !== undefined) (facts[key] as number)++
  }
  for (const m of text.matchAll(/\/URI\s{0,16}\(([^)]{1,2048})\)/g)) {
    if (urls.size < MAX_URLS && m[1] !== undefined) urls.add(m[1])
  }
}

/** `static.pdf` of a PDF's bytes (the first 64 MiB). */
export function analyzePdf (buf: Buffer): PdfFacts {
  const data = buf.subarray(0, PDF_MAX_BYTES)
  const text = data.toString('latin1')
  const version = /%PDF-(\d\.\d)/.exec(text.slice(0, 1024))?.[1] ?? null
  const facts: PdfFacts = {
    version, objects: 0, streams: 0, object_streams: 0, javascript: 0, openaction: 0, aa: 0, launch: 0,
    embedded_files: 0, uri: 0, acroform: 0, xfa: 0, encrypt: 0, urls: []
  }
  const urls = new Set<string>()
  scanPdfText(text, facts, urls)
  // Objects inside compressed object streams (PDF 1.5+) are invisible to a byte scan: inflate each
  // Flate-encoded /ObjStm and scan its content as well.
  const errors: string[] = []
  let examined = 0
  let inflated = 0
  if (text.includes('Obj')) {
    for (const m of text.matchAll(/\bstream\r?\n/g)) {
      if (++examined > MAX_STREAMS_EXAMINED || inflated > INFLATE_MAX) break
      // The stream's dictionary: what precedes the keyword since the object's "obj".
      const at = m.index ?? 0
      const window = text.slice(Math.max(0, at - 2048), at)
      const dict = pdfName(window.slice(window.lastIndexOf('obj') + 1))
      if (!dict.includes('/ObjStm') || !dict.includes('/FlateDecode')) continue
      const start = at + m[0].length
      const end = text.indexOf('endstream', start)
      if (end < 0) break // no stream after this one can end either
      try {
        const out = inflateSync(data.subarray(start, end), { maxOutputLength: INFLATE_MAX })
        inflated += out.length
        const before = facts.objects
        scanPdfText(out.toString('latin1'), facts, urls)
        // Objects of an object stream are listed by number pairs, not "n g obj": count /N.
        const n = /\/N\s{0,8}(\d{1,7})/.exec(dict)
        facts.objects = before + (n?.[1] !== undefined ? Number(n[1]) : 0)
      } catch (err) {
        if (errors.length < 8) errors.push(`object stream at ${start}: ${(err as Error).message}`)
      }
    }
  }
  facts.urls = [...urls]
  if (errors.length > 0) facts.error = errors.join('; ')
  return facts
}

export const MacroSchema = Closed({
  /** The module's stream in the document (Macros/VBA/ThisDocument; in an OOXML, within vbaProject.bin). */
  stream: Type.String(),
  /** The module's name and the extension a VBA editor exports it with (ThisDocument.cls, Module1.bas). */
  filename: Type.String(),
  orig_code: Type.String(),
  /** The source with Chr(n) and concatenated literals folded into plain strings. */
  deobf: Type.String()
})

export const OfficeSchema = Closed({
  format: Type.Union([Type.Literal('ooxml'), Type.Literal('ole')]),
  /** Every VBA module's source (Cuckoo 2.0.7's shape); empty when the document has no VBA project. */
  macros: Type.Array(MacroSchema),
  /** Where the VBA project is: zip entry names, or the OLE storages/streams that hold it. */
  vba: Type.Array(Type.String()),
  /** OOXML relationships with TargetMode="External" (remote templates, OLE links). */
  external_targets: Type.Array(Type.String()),
  error: Type.Optional(Type.String())
})
export type OfficeFacts = Static<typeof OfficeSchema>

/** `static.office` of an OOXML (zip) document, or null when the zip is not an Office document. */
export async function analyzeOoxml (file: string): Promise<OfficeFacts | null> {
  const texts: ZipEntryText[] = []
  const bytes: { name: string; data: Buffer }[] = []
  const isVba = (n: string): boolean => /(^|\/)vbaProject\.bin$/i.test(n)
  const listing = await listZip(file, { readText: (name) => /\.rels$/i.test(name), texts, readBytes: isVba, bytes })
  const names = listing.entries.map((e) => e.name)
  if (!names.includes('[Content_Types].xml')) return null
  const vba = names.filter(isVba)
  const external: string[] = []
  for (const t of texts) {
    for (const m of t.text.matchAll(/<Relationship\b[^>]*>/g)) {
      if (!/TargetMode\s*=\s*"External"/i.test(m[0])) continue
      const target = /Target\s*=\s*"([^"]*)"/.exec(m[0])?.[1]
      if (target !== undefined && external.length < MAX_URLS) external.push(target)
    }
  }
  const facts: OfficeFacts = { format: 'ooxml', macros: [], vba, external_targets: external }
  const errors = listing.error !== undefined ? [listing.error] : []
  for (const b of bytes) {
    try {
      const found = extractMacros(b.data)
      for (const m of found.macros) facts.macros.push({ ...m, stream: `${b.name}/${m.stream}` })
      errors.push(...found.errors.map((e) => `${b.name}: ${e}`))
    } catch (err) {
      errors.push(`${b.name}: ${(err as Error).message}`)
    }
  }
  if (errors.length > 0) facts.error = errors.join('; ')
  return facts
}

/** Names in the directory of an OLE compound file (MS-CFB), as SheetJS's `cfb` reads them. */
export function oleDirectoryNames (container: CFB.CFB$Container): string[] {
  return container.FileIndex.map((e) => e.name).filter((n) => n !== '').slice(0, 65536)
}

/** `static.office` of an OLE compound file (doc, xls, ppt, msg). */
export function analyzeOle (buf: Buffer): OfficeFacts {
  let container: CFB.CFB$Container
  try {
    container = CFB.read(buf, { type: 'buffer' })
  } catch (err) {
    // A damaged directory: the VBA project stream's name anywhere still says there is one.
    const found = buf.includes(Buffer.from('_VBA_PROJECT', 'utf16le'))
    return { format: 'ole', macros: [], vba: found ? ['_VBA_PROJECT'] : [], external_targets: [], error: (err as Error).message }
  }
  const names = oleDirectoryNames(container)
  const vba = [...new Set(names.filter((n) => n === '_VBA_PROJECT' || n === 'VBA' || n === 'Macros' || n === '_VBA_PROJECT_CUR'))]
  const facts: OfficeFacts = { format: 'ole', macros: [], vba, external_targets: [] }
  if (vba.length === 0) return facts
  try {
    const found = extractMacros(container)
    facts.macros = found.macros
    if (found.errors.length > 0) facts.error = found.errors.join('; ')
  } catch (err) {
    facts.error = (err as Error).message
  }
  return facts
}
