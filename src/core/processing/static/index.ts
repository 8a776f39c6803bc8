// The `static` and `strings` keys of report.json for a file task (Cuckoo 2.0.7's cuckoo/processing/static.py and strings.py; docs/reports.md). The
// kind of file is decided from its first bytes (the libmagic description the caller passes only
// breaks ties), and the matching reader runs: PE, ELF, PDF, Office (OOXML or OLE), zip or tar.
// Nothing here throws to the pipeline: a file that cannot be read, or a reader that fails, gives
// what was found plus `static.error`.
import { stat } from 'node:fs/promises'
import { analyzeElf, ElfSchema } from './elf.js'
import { analyzePe, findKeys, peStaticProperties } from './pe.js'
import type { BufferTyper } from './pe-resources.js'
import { analyzeOle, analyzeOoxml, OfficeSchema } from './documents.js'
import { analyzePdf, PdfSchema } from './pdf.js'
import { analyzeLnk, isLnk, LnkSchema } from './lnk.js'
import { ArchiveListingSchema, listTar, listZip } from './archives.js'
import { Closed, Type, type Static } from '../schema.js'
import type { TProperties, TOptional, TSchema } from 'typebox'

/** The same properties, each optional. */
function partial<P extends TProperties>(p: P): { [K in keyof P]: TOptional<P[K]> } {
  return Object.fromEntries(Object.entries(p).map(([k, v]) => [k, Type.Optional(v as TSchema)])) as { [K in keyof P]: TOptional<P[K]> }
}
import { extractStrings, readHead } from './strings.js'

/** PEs and ELFs are read whole up to this size (the rest is reported as not read). */
const EXECUTABLE_MAX_BYTES = 512 * 1024 * 1024
const DOCUMENT_MAX_BYTES = 64 * 1024 * 1024
/** Shortcuts are a few KiB; a larger one is read this far. */
const LNK_MAX_BYTES = 16 * 1024 * 1024

export type FileKind = 'pe' | 'elf' | 'pdf' | 'zip' | 'ole' | 'tar' | 'gzip' | 'lnk' | 'other'

/** The kind of a file from its first bytes; `fileType` (libmagic's words) as a fallback. */
export function detectKind (head: Buffer, fileType: string | null): FileKind {
  if (head.length >= 2 && head.readUInt16LE(0) === 0x5a4d) return 'pe'
  if (head.length >= 4 && head.readUInt32BE(0) === 0x7f454c46) return 'elf'
  if (head.subarray(0, 1024).includes('%PDF-')) return 'pdf'
  if (head.length >= 4 && head.readUInt32LE(0) === 0x04034b50) return 'zip'
  if (head.length >= 8 && head.readBigUInt64BE(0) === 0xd0cf11e0a1b11ae1n) return 'ole'
  if (head.length >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar'
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip'
  if (isLnk(head)) return 'lnk'
  const t = fileType ?? ''
  if (/^PE32/.test(t)) return 'pe'
  if (/^Zip archive|^Microsoft (Word|Excel|PowerPoint) 2007/.test(t)) return 'zip'
  return 'other'
}

let typerPromise: Promise<BufferTyper | null> | null = null

/** libmagic (wasmagic) for the types of resources inside a PE; null where it cannot load. */
function resourceTyper (): Promise<BufferTyper | null> {
  typerPromise ??= import('wasmagic')
    .then(async ({ WASMagic, WASMagicFlags }) => {
      const magic = await WASMagic.create({ flags: WASMagicFlags.NONE })
      return (data: Buffer): string | null => magic.detect(data)
    })
    .catch(() => null)
  return typerPromise
}

async function readAll (file: string, head: Buffer, size: number, max: number): Promise<Buffer> {
  return head.length >= Math.min(size, max) ? head : await readHead(file, max)
}

/**
 * `static` (Cuckoo 2's keys for the kind of file) and `strings` of a sample. `fileType` is
 * libmagic's description of it, when known. `static` holds, by kind:
 *   PE   peid_signatures (null), pe_imports, pe_exports, pe_sections, pe_resources,
 *        pe_versioninfo, pe_imphash, pe_timestamp, pdb_path, signature, imported_dll_count, keys,
 *        and Aviary's pe_delay_imports, pe_export_dll, pe_signed, pe_machine, pe_is64,
 *        pe_entrypoint, pe_overlay
 *   ELF  elf {file_header, section_headers, program_headers, dynamic_tags, libraries, symbols}, keys
 *   PDF  pdf [one row per version: {version, creator, creation, title, subject, producer, author,
 *        modification, javascript[{orig_code, beautified, urls}], urls, attachments[{filename}],
 *        openaction, pdf_version, counts{objects, streams, javascript, openaction, …}}]
 *   Office  office {format: ooxml|ole, macros[{stream, filename, orig_code, deobf}], vba[], external_targets[]}
 *   LNK  lnk {flags{…}, attrs[], basepath | net_share, network_drive, remaining_path, description,
 *        relapath, workingdir, cmdline, icon, environment_target, show_window, created, accessed, modified}
 *   zip, tar, tar.gz  archive {type, entries[{name, size, ...}], count, truncated}
 * plus `error` (a string) when something could not be read; nothing else for other files.
 */
/**
 * The report's `static`: empty for files it does not know, the PE keys for a PE, or one of `elf`,
 * `pdf`, `office`, `lnk`, `archive`; `keys` (key-like strings of executables) and `error` as they apply.
 */
export const StaticSchema = Closed({
  ...partial(peStaticProperties),
  elf: Type.Optional(ElfSchema),
  pdf: Type.Optional(PdfSchema),
  lnk: Type.Optional(LnkSchema),
  office: Type.Optional(OfficeSchema),
  archive: Type.Optional(ArchiveListingSchema),
  keys: Type.Optional(Type.Array(Type.String())),
  error: Type.Optional(Type.String())
})
export type StaticReport = Static<typeof StaticSchema>

export async function staticAnalysis (file: string, fileType: string | null): Promise<{ static: StaticReport; strings: string[] }> {
  const result: StaticReport = {}
  const errors: string[] = []
  let strings: string[] = []
  try {
    const size = (await stat(file)).size
    let head: Buffer | null = await readHead(file)
    try {
      strings = extractStrings(head)
    } catch (err) {
      errors.push(`strings: ${(err as Error).message}`)
    }
    const kind = detectKind(head, fileType)
    // Executables and documents are read whole (up to a cap); the head is then let go so that a
    // 50 MiB sample is not held twice.
    const whole = async (max: number): Promise<Buffer> => {
      const buf = await readAll(file, head ?? Buffer.alloc(0), size, max)
      head = null
      return buf
    }
    switch (kind) {
      case 'pe': {
        const buf = await whole(EXECUTABLE_MAX_BYTES)
        try {
          Object.assign(result, analyzePe(buf, await resourceTyper(), size))
        } catch (err) {
          errors.push(`PE: ${(err as Error).message}`)
        }
        result.keys = findKeys(buf)
        break
      }
      case 'elf': {
        const buf = await whole(EXECUTABLE_MAX_BYTES)
        try {
          result.elf = analyzeElf(buf)
        } catch (err) {
          errors.push(`ELF: ${(err as Error).message}`)
        }
        result.keys = findKeys(buf)
        break
      }
      case 'pdf':
        result.pdf = analyzePdf(await whole(DOCUMENT_MAX_BYTES))
        break
      case 'lnk':
        result.lnk = analyzeLnk(await whole(LNK_MAX_BYTES))
        break
      case 'ole':
        result.office = analyzeOle(await whole(DOCUMENT_MAX_BYTES))
        break
      case 'zip': {
        head = null
        const office = await analyzeOoxml(file).catch(() => null)
        if (office !== null) result.office = office
        else result.archive = await listZip(file)
        break
      }
      case 'tar':
        head = null
        result.archive = await listTar(file, false)
        break
      case 'gzip': {
        head = null
        // Only a gzip that holds a tar is listed; a lone gzip stream has no members to show.
        const listing = await listTar(file, true)
        if (listing.entries.length > 0) result.archive = listing
        break
      }
      case 'other':
        break
    }
  } catch (err) {
    errors.push((err as Error).message)
  }
  // A PE's own partial-read errors come first (set by analyzePe), then the others.
  if (errors.length > 0) result.error = [result.error, ...errors].filter((e) => e !== undefined).join('; ')
  return { static: result, strings }
}
