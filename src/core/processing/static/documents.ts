// Cheap facts about documents, the ones that make a document worth a closer look: for a PDF its
// versions, metadata, JavaScript, URLs and pdfid-style counts (pdf.ts); for Office files the source
// of their VBA macros (vbaProject.bin in an OOXML zip, a _VBA_PROJECT / VBA storage in an OLE
// compound file; vba.ts) and the external targets of OOXML relationships (remote templates).
// Cuckoo 2 ran peepdf and oletools here. The OLE directory is read by SheetJS's maintained `cfb`.
import CFB from 'cfb'
import { listZip, type ZipEntryText } from './archives.js'
import { extractMacros } from './vba.js'
import { Closed, Type, type Static } from '../schema.js'

const MAX_URLS = 256

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
