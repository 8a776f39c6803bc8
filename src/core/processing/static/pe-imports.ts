// Imports, delay-load imports and exports of a PE, and its imphash. pe-library has no import or
// export parsing (it is a resource editor), and no maintained JavaScript package reads these
// tables from an untrusted file with bounds checks, so they are read here by hand from the
// documented structures (IMAGE_IMPORT_DESCRIPTOR, ImgDelayDescr, IMAGE_EXPORT_DIRECTORY), every
// read going through PeImage's bounds checks and every loop capped, so a hostile file cannot make
// this loop forever or allocate without bound.
import { createHash } from 'node:crypto'
import { DIR, PeFormatError, type PeImage } from './pe-image.js'
import { OLEAUT32_ORDINALS, WS2_32_ORDINALS } from './pe-ordinals.js'
import { Closed, Nullable, Type, type Static } from '../schema.js'

export const PeImportedSymbolSchema = Closed({ address: Type.String(), name: Nullable(Type.String()), ordinal: Type.Optional(Type.Integer()) })
export type PeImportedSymbol = Static<typeof PeImportedSymbolSchema>
export const PeImportedDllSchema = Closed({ dll: Type.String(), imports: Type.Array(PeImportedSymbolSchema) })
export type PeImportedDll = Static<typeof PeImportedDllSchema>
export const PeExportSchema = Closed({ address: Type.String(), name: Nullable(Type.String()), ordinal: Type.Integer() })
export type PeExport = Static<typeof PeExportSchema>

const MAX_DLLS = 4096
const MAX_SYMBOLS_PER_DLL = 65536
const MAX_EXPORTS = 65536
/** All DLLs together: descriptors can all point at one long thunk array. */
const MAX_SYMBOLS_TOTAL = 200_000

/** Python's hex(): lowercase, no padding. */
function hex (v: bigint): string { return `0x${v.toString(16)}` }

/** Reads one thunk array (import name table) into symbols; `iat` is the RVA of the address table. */
function readThunks (pe: PeImage, nameTable: number, iat: number, budget: { left: number }): PeImportedSymbol[] {
  const size = pe.is64 ? 8 : 4
  const symbols: PeImportedSymbol[] = []
  for (let i = 0; i < MAX_SYMBOLS_PER_DLL && budget.left > 0; i++, budget.left--) {
    const raw = pe.is64 ? pe.u64(nameTable + i * size) : BigInt(pe.u32(nameTable + i * size))
    if (raw === 0n) break
    const address = hex(pe.imageBase + BigInt(iat + i * size))
    const ordinalFlag = pe.is64 ? 1n << 63n : 1n << 31n
    if ((raw & ordinalFlag) !== 0n) {
      symbols.push({ address, name: null, ordinal: Number(raw & 0xffffn) })
    } else {
      // IMAGE_IMPORT_BY_NAME: a 16-bit hint, then the name.
      const hintName = Number(raw & 0x7fffffffn)
      symbols.push({ address, name: pe.cstring(hintName + 2) })
    }
  }
  return symbols
}

/**
 * pe_imports as Cuckoo 2 writes it: [{dll, imports: [{address, name}]}], address being the IAT slot
 * (ImageBase + FirstThunk + index * thunk size) as Python's hex(). An import by ordinal has name
 * null and an extra `ordinal`. On a broken table, the DLLs read so far are returned and the error
 * is pushed to `errors`.
 */
export function readImports (pe: PeImage, errors: string[]): PeImportedDll[] {
  const dir = pe.directories[DIR.import]
  const out: PeImportedDll[] = []
  if (dir === undefined || dir.virtualAddress === 0) return out
  const budget = { left: MAX_SYMBOLS_TOTAL }
  try {
    for (let i = 0; i < MAX_DLLS; i++) {
      const d = dir.virtualAddress + i * 20
      const oft = pe.u32(d)
      const name = pe.u32(d + 12)
      const ft = pe.u32(d + 16)
      if (oft === 0 && name === 0 && ft === 0) break
      const entry: PeImportedDll = { dll: pe.cstring(name, 256), imports: [] }
      out.push(entry)
      // Bound or packed files may have no OriginalFirstThunk: the IAT then holds the names.
      entry.imports = readThunks(pe, oft !== 0 ? oft : ft, ft, budget)
    }
  } catch (err) {
    errors.push(`imports: ${(err as Error).message}`)
  }
  return out
}

/** Delay-load imports (pefile's DIRECTORY_ENTRY_DELAY_IMPORT), same shape as pe_imports. */
export function readDelayImports (pe: PeImage, errors: string[]): PeImportedDll[] {
  const dir = pe.directories[DIR.delayImport]
  const out: PeImportedDll[] = []
  if (dir === undefined || dir.virtualAddress === 0) return out
  const budget = { left: MAX_SYMBOLS_TOTAL }
  try {
    for (let i = 0; i < MAX_DLLS; i++) {
      const d = dir.virtualAddress + i * 32
      const attributes = pe.u32(d)
      let name = pe.u32(d + 4)
      let iat = pe.u32(d + 12)
      let int = pe.u32(d + 16)
      if (name === 0 && iat === 0 && int === 0) break
      // Attribute bit 0 clear (Visual C++ 6 era): the fields are VAs, not RVAs.
      if ((attributes & 1) === 0) {
        const base = Number(pe.imageBase)
        name -= base; iat -= base; int -= base
      }
      const entry: PeImportedDll = { dll: pe.cstring(name, 256), imports: [] }
      out.push(entry)
      entry.imports = readThunks(pe, int, iat, budget)
    }
  } catch (err) {
    errors.push(`delay imports: ${(err as Error).message}`)
  }
  return out
}

/** pe_exports as Cuckoo 2 writes it: [{address: hex(ImageBase + RVA), name, ordinal}]. */
export function readExports (pe: PeImage, errors: string[]): { dll: string | null; exports: PeExport[] } {
  const dir = pe.directories[DIR.export]
  const exports: PeExport[] = []
  if (dir === undefined || dir.virtualAddress === 0) return { dll: null, exports }
  let dll: string | null = null
  try {
    const d = dir.virtualAddress
    const nameRva = pe.u32(d + 12)
    const base = pe.u32(d + 16)
    const nFunctions = pe.u32(d + 20)
    const nNames = pe.u32(d + 24)
    const functions = pe.u32(d + 28)
    const names = pe.u32(d + 32)
    const ordinals = pe.u32(d + 36)
    try { dll = pe.cstring(nameRva, 256) } catch { dll = null }
    if (nFunctions > MAX_EXPORTS || nNames > MAX_EXPORTS) throw new PeFormatError(`implausible export counts ${nFunctions}/${nNames}`)
    const named = new Map<number, string>()
    for (let i = 0; i < nNames; i++) named.set(pe.u16(ordinals + i * 2), pe.cstring(pe.u32(names + i * 4)))
    for (let i = 0; i < nFunctions; i++) {
      const rva = pe.u32(functions + i * 4)
      if (rva === 0) continue
      exports.push({ address: hex(pe.imageBase + BigInt(rva)), name: named.get(i) ?? null, ordinal: base + i })
    }
  } catch (err) {
    errors.push(`exports: ${(err as Error).message}`)
  }
  return { dll, exports }
}

/**
 * The imphash as pefile's get_imphash and YARA's pe.imphash() compute it: for every import of the
 * import directory (not delay-load), `dll.function` with the DLL name lowercased and its .dll, .ocx
 * or .sys extension removed, an ordinal import resolved through the ws2_32/wsock32/oleaut32 tables
 * or written `ord<N>`; the md5 of these joined by commas. Empty string when there are no imports.
 */
export function imphash (imports: PeImportedDll[]): string {
  const parts: string[] = []
  for (const entry of imports) {
    const dllLower = entry.dll.toLowerCase()
    const dot = dllLower.lastIndexOf('.')
    const ext = dot >= 0 ? dllLower.slice(dot + 1) : ''
    const lib = ext === 'dll' || ext === 'ocx' || ext === 'sys' ? dllLower.slice(0, dot) : dllLower
    const table = dllLower === 'ws2_32.dll' || dllLower === 'wsock32.dll'
      ? WS2_32_ORDINALS
      : dllLower === 'oleaut32.dll' ? OLEAUT32_ORDINALS : null
    for (const sym of entry.imports) {
      let fn = sym.name
      if (fn === null) {
        const ord = sym.ordinal ?? 0
        fn = table?.[ord] ?? `ord${ord}`
      }
      if (fn === '') continue
      parts.push(`${lib}.${fn.toLowerCase()}`)
    }
  }
  if (parts.length === 0) return ''
  return createHash('md5').update(parts.join(','), 'latin1').digest('hex')
}
