// Static analysis of a PE file: the keys Cuckoo 2's processing/static.py puts into `static` for an
// executable (Cuckoo 2.0.7's cuckoo/processing/static.py), with the same value formats (hex strings as Python writes
// them), so report consumers and signatures written for Cuckoo read them unchanged. Each part is
// read on its own: a corrupt import table still leaves sections, resources and the signature, and
// what went wrong is listed in `error`.
import { PeFormatError, PeImage, DIR, type PeSection } from './pe-image.js'
import { imphash, PeExportSchema, PeImportedDllSchema, readDelayImports, readExports, readImports } from './pe-imports.js'
import { PeResourceSchema, PeVersionEntrySchema, readResources, type BufferTyper } from './pe-resources.js'
import { PeSignerSchema, readSignature } from './pe-signature.js'
import { Closed, Hex, Nullable, Type, type Static } from '../schema.js'

export const PeSectionInfoSchema = Closed({
  name: Type.String(),
  virtual_address: Hex,
  virtual_size: Hex,
  size_of_data: Hex,
  entropy: Type.Number()
})
export type PeSectionInfo = Static<typeof PeSectionInfoSchema>

/** The PE keys of `static` (Cuckoo 2's, then Aviary's additions). */
export const peStaticProperties = {
  peid_signatures: Type.Null({ description: 'Cuckoo\'s PEiD matches: Aviary does not run PEiD' }),
  pe_imports: Type.Array(PeImportedDllSchema),
  pe_exports: Type.Array(PeExportSchema),
  pe_sections: Type.Array(PeSectionInfoSchema),
  pe_resources: Type.Array(PeResourceSchema),
  pe_versioninfo: Type.Array(PeVersionEntrySchema),
  pe_imphash: Type.String(),
  pe_timestamp: Type.String({ description: 'the header\'s link time, YYYY-MM-DD HH:MM:SS (UTC)' }),
  pdb_path: Nullable(Type.String()),
  signature: Type.Array(PeSignerSchema),
  imported_dll_count: Type.Integer(),
  pe_delay_imports: Type.Array(PeImportedDllSchema),
  pe_export_dll: Nullable(Type.String()),
  pe_signed: Type.Boolean(),
  pe_machine: Hex,
  pe_is64: Type.Boolean(),
  pe_entrypoint: Hex,
  pe_overlay: Nullable(Closed({ offset: Hex, size: Type.Integer() }))
}
export const PeStaticSchema = Closed({ ...peStaticProperties, error: Type.Optional(Type.String()) })
export type PeStatic = Static<typeof PeStaticSchema>

const MAX_KEY_TRIES = 4096

function hex8 (n: number): string { return `0x${n.toString(16).padStart(8, '0')}` }

/** Shannon entropy in bits per byte, as pefile's SectionStructure.get_entropy. */
export function entropy (data: Uint8Array): number {
  if (data.length === 0) return 0
  // Four interleaved histograms: a hot loop with one counter array stalls on store-to-load
  // dependencies when the same byte repeats (zero padding), which is most of a PE.
  // A plain Uint8Array view: indexing a Buffer subclass is slower in V8's hot loops.
  const d = new Uint8Array(data.buffer, data.byteOffset, data.length)
  const c0 = new Uint32Array(256)
  const c1 = new Uint32Array(256)
  const c2 = new Uint32Array(256)
  const c3 = new Uint32Array(256)
  const n4 = data.length & ~3
  for (let i = 0; i < n4; i += 4) {
    const a = d[i] as number
    const b = d[i + 1] as number
    const c = d[i + 2] as number
    const e = d[i + 3] as number
    c0[a] = (c0[a] as number) + 1
    c1[b] = (c1[b] as number) + 1
    c2[c] = (c2[c] as number) + 1
    c3[e] = (c3[e] as number) + 1
  }
  for (let i = n4; i < d.length; i++) {
    const a = d[i] as number
    c0[a] = (c0[a] as number) + 1
  }
  const counts = new Float64Array(256)
  for (let k = 0; k < 256; k++) counts[k] = (c0[k] as number) + (c1[k] as number) + (c2[k] as number) + (c3[k] as number)
  let h = 0
  for (const c of counts) {
    if (c === 0) continue
    const p = c / data.length
    h -= p * Math.log2(p)
  }
  return h
}

/** "YYYY-MM-DD HH:MM:SS" of a PE TimeDateStamp, in UTC (Cuckoo used the host's local time). */
export function peTimestamp (t: number): string {
  return new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19)
}

function sectionInfo (pe: PeImage, s: PeSection): PeSectionInfo {
  return {
    name: s.name.replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`),
    virtual_address: hex8(s.virtualAddress),
    virtual_size: hex8(s.virtualSize),
    size_of_data: hex8(s.sizeOfRawData),
    entropy: entropy(pe.sectionData(s))
  }
}

/** The PDB path of the first CodeView debug entry (RSDS or NB10), or null. */
function pdbPath (pe: PeImage, errors: string[]): string | null {
  const dir = pe.directories[DIR.debug]
  if (dir === undefined || dir.virtualAddress === 0) return null
  try {
    const n = Math.min(Math.floor(dir.size / 28), 64)
    for (let i = 0; i < n; i++) {
      const e = dir.virtualAddress + i * 28
      if (pe.u32(e + 12) !== 2) continue // IMAGE_DEBUG_TYPE_CODEVIEW
      const size = pe.u32(e + 16)
      const off = pe.u32(e + 24)
      const data = pe.buf.subarray(off, Math.min(off + size, pe.buf.length))
      const magic = data.subarray(0, 4).toString('latin1')
      const at = magic === 'RSDS' ? 24 : magic === 'NB10' ? 16 : -1
      if (at < 0 || data.length <= at) continue
      const end = data.indexOf(0, at)
      return data.subarray(at, end < 0 ? data.length : end).toString('utf8')
    }
  } catch (err) {
    errors.push(`debug directory: ${(err as Error).message}`)
  }
  return null
}

/**
 * PEM public and RSA private keys embedded in the file (Cuckoo's File.get_keys), found by scanning
 * for the BEGIN marker first so that a large file costs one indexOf pass.
 */
export function findKeys (buf: Buffer): string[] {
  const keys = new Set<string>()
  const re = /^-----BEGIN (PUBLIC KEY|RSA PRIVATE KEY)-----[a-zA-Z0-9\n+/]+={0,2}\n-----END \1-----/
  // Bounded: a file made of BEGIN markers costs at most MAX_KEY_TRIES windows.
  let tries = 0
  for (let p = buf.indexOf('-----BEGIN '); p >= 0 && keys.size < 64 && tries < MAX_KEY_TRIES; p = buf.indexOf('-----BEGIN ', p + 11)) {
    const kind = buf.subarray(p + 11, p + 31).toString('latin1')
    if (!kind.startsWith('PUBLIC KEY-----') && !kind.startsWith('RSA PRIVATE KEY-----')) continue
    tries++
    const m = re.exec(buf.subarray(p, p + 16384).toString('latin1'))
    if (m !== null) keys.add(m[0])
  }
  return [...keys]
}

/**
 * Data after the end of the last section's raw data (installers, droppers and self-extracting
 * archives keep their payload there), not counting an Authenticode signature at the very end.
 */
function overlay (pe: PeImage): { offset: string; size: number } | null {
  let end = 0
  for (const s of pe.sections) if (s.sizeOfRawData > 0) end = Math.max(end, (s.pointerToRawData & ~0x1ff) + s.sizeOfRawData)
  let fileEnd = pe.fileSize
  const sec = pe.directories[DIR.security]
  if (sec !== undefined && sec.virtualAddress >= end && sec.virtualAddress + sec.size >= fileEnd) fileEnd = sec.virtualAddress
  if (end === 0 || end >= fileEnd) return null
  return { offset: hex8(end), size: fileEnd - end }
}

/** PE keys of `static`. Throws PeFormatError only when the headers themselves cannot be read. */
export function analyzePe (buf: Buffer, typer: BufferTyper | null, fileSize = buf.length): PeStatic {
  const pe = new PeImage(buf, fileSize)
  const errors: string[] = []
  if (pe.truncatedSections > 0) errors.push(`section table: ${pe.truncatedSections} sections past the end of the file`)
  if (buf.length < fileSize) errors.push(`only the first ${buf.length} of ${fileSize} bytes were read`)
  const imports = readImports(pe, errors)
  const { dll, exports } = readExports(pe, errors)
  const { resources, versionInfo } = readResources(pe, errors, typer)
  const signature = readSignature(pe, errors)
  const result: PeStatic = {
    peid_signatures: null,
    pe_imports: imports,
    pe_exports: exports,
    pe_sections: pe.sections.map((s) => sectionInfo(pe, s)),
    pe_resources: resources,
    pe_versioninfo: versionInfo,
    pe_imphash: imphash(imports),
    pe_timestamp: peTimestamp(pe.timeDateStamp),
    pdb_path: pdbPath(pe, errors),
    signature: signature.signers,
    imported_dll_count: imports.filter((x) => x.dll !== '').length,
    // Aviary additions: delay-load imports, the export DLL name, whether a signature is present
    // even when its certificates could not be read, machine, entry point and overlay.
    pe_delay_imports: readDelayImports(pe, errors),
    pe_export_dll: dll,
    pe_signed: signature.signed,
    pe_machine: hex8(pe.machine).replace(/^0x0000/, '0x'),
    pe_is64: pe.is64,
    pe_entrypoint: hex8(pe.entryPoint),
    pe_overlay: overlay(pe)
  }
  if (errors.length > 0) result.error = errors.join('; ')
  return result
}

export { PeFormatError }
