// Resources and version information of a PE, as Cuckoo 2 lists them (pe_resources, pe_versioninfo).
// pe-library's NtExecutableResource cannot be used on a sample: it needs an NtExecutable, which
// refuses signed files and files with COFF symbols, and it gives no data offsets; and no library
// parses VS_VERSIONINFO from a buffer. So the resource tree (IMAGE_RESOURCE_DIRECTORY, three levels:
// type, name, language) and the version blocks are read here, through PeImage's bounds checks,
// with every loop capped and directory offsets remembered so a cyclic tree is read once.
import { DIR, type PeImage } from './pe-image.js'
import { LANGS, RESOURCE_TYPES, sublangName } from './pe-langs.js'
import { Closed, Nullable, Type, type Static } from '../schema.js'

export const PeResourceSchema = Closed({
  name: Type.String(),
  offset: Type.String(),
  size: Type.String(),
  filetype: Nullable(Type.String()),
  language: Nullable(Type.String()),
  sublanguage: Type.String()
})
export type PeResource = Static<typeof PeResourceSchema>

export const PeVersionEntrySchema = Closed({ name: Type.String(), value: Type.String() })
export type PeVersionEntry = Static<typeof PeVersionEntrySchema>

/** Describes a resource's bytes (libmagic); null when it cannot tell. */
export type BufferTyper = (data: Buffer) => string | null

const MAX_RESOURCES = 4096
/** Directory entries read in all, whatever the shape of the tree. */
const MAX_ENTRIES_READ = 65536
const MAX_TYPED = 512
const TYPE_BYTES = 64 * 1024

interface Leaf { typeName: string; typeId: number | null; langId: number; dataRva: number; size: number }

function hex8 (n: number): string { return `0x${n.toString(16).padStart(8, '0')}` }

/** Walks the three levels of the resource tree, giving one leaf per (type, name, language). */
function walk (pe: PeImage, errors: string[]): Leaf[] {
  const dir = pe.directories[DIR.resource]
  const leaves: Leaf[] = []
  if (dir === undefined || dir.virtualAddress === 0) return leaves
  const root = dir.virtualAddress
  const seen = new Set<number>()
  let budget = MAX_ENTRIES_READ
  const entries = (off: number): Array<{ id: number; name: string | null; target: number; isDir: boolean }> => {
    if (seen.has(off)) return []
    seen.add(off)
    const n = Math.min(pe.u16(root + off + 12) + pe.u16(root + off + 14), MAX_RESOURCES, budget)
    budget -= n
    const out = []
    for (let i = 0; i < n; i++) {
      const e = root + off + 16 + i * 8
      const nameField = pe.u32(e)
      const dataField = pe.u32(e + 4)
      let name: string | null = null
      if ((nameField & 0x80000000) !== 0) {
        const s = root + (nameField & 0x7fffffff)
        name = pe.bytes(s + 2, Math.min(pe.u16(s), 256) * 2).toString('utf16le')
      }
      out.push({ id: nameField & 0xffff, name, target: dataField & 0x7fffffff, isDir: (dataField & 0x80000000) !== 0 })
    }
    return out
  }
  try {
    for (const type of entries(0)) {
      if (!type.isDir) continue
      const typeName = type.name ?? RESOURCE_TYPES[type.id] ?? String(type.id)
      for (const id of entries(type.target)) {
        if (!id.isDir) continue
        for (const lang of entries(id.target)) {
          if (lang.isDir || leaves.length >= MAX_RESOURCES) continue
          const d = root + lang.target
          leaves.push({ typeName, typeId: type.name === null ? type.id : null, langId: lang.id, dataRva: pe.u32(d), size: pe.u32(d + 4) })
        }
      }
    }
  } catch (err) {
    errors.push(`resources: ${(err as Error).message}`)
  }
  return leaves
}

export function readResources (pe: PeImage, errors: string[], typer: BufferTyper | null): { resources: PeResource[]; versionInfo: PeVersionEntry[] } {
  const leaves = walk(pe, errors)
  const resources: PeResource[] = []
  let versionInfo: PeVersionEntry[] = []
  let versionRead = false
  for (const leaf of leaves) {
    let data: Buffer | null
    try { data = pe.bytes(leaf.dataRva, leaf.size) } catch { data = null }
    let filetype: string | null = null
    if (typer !== null && data !== null && data.length > 0 && resources.length < MAX_TYPED) {
      try { filetype = typer(data.subarray(0, TYPE_BYTES)) } catch { filetype = null }
    }
    const lang = leaf.langId & 0x3ff
    const sub = leaf.langId >> 10
    resources.push({
      name: leaf.typeName,
      offset: hex8(leaf.dataRva),
      size: hex8(leaf.size),
      filetype,
      language: LANGS[lang] ?? null,
      sublanguage: sublangName(lang, sub)
    })
    // pefile (and so Cuckoo) reads the first RT_VERSION resource only.
    if (leaf.typeId === 16 && !versionRead && data !== null) {
      versionRead = true
      try { versionInfo = parseVersionInfo(data) } catch (err) { errors.push(`version info: ${(err as Error).message}`) }
    }
  }
  return { resources, versionInfo }
}

interface Block { key: string; type: number; value: Buffer; children: number; end: number }

const align4 = (n: number): number => (n + 3) & ~3

/** One VS_VERSIONINFO-style block (wLength, wValueLength, wType, szKey, Value, Children) at `off`. */
function block (buf: Buffer, off: number, limit: number): Block | null {
  if (off + 6 > limit) return null
  const length = buf.readUInt16LE(off)
  if (length < 6) return null
  const end = Math.min(off + length, limit)
  const valueLength = buf.readUInt16LE(off + 2)
  const type = buf.readUInt16LE(off + 4)
  let p = off + 6
  const keyStart = p
  while (p + 1 < end && buf.readUInt16LE(p) !== 0) p += 2
  const key = buf.subarray(keyStart, p).toString('utf16le')
  p = align4(p + 2)
  // wValueLength counts WCHARs for text values (wType 1) and bytes for binary ones.
  const valueBytes = type === 1 ? valueLength * 2 : valueLength
  const value = buf.subarray(Math.min(p, end), Math.min(p + valueBytes, end))
  return { key, type, value, children: align4(p + valueBytes), end }
}

/** pe_versioninfo: the StringFileInfo strings, then VarFileInfo's Translation as "0x0409 0x04b0". */
export function parseVersionInfo (buf: Buffer): PeVersionEntry[] {
  const out: PeVersionEntry[] = []
  const root = block(buf, 0, buf.length)
  if (root === null || root.key !== 'VS_VERSION_INFO') return out
  let guard = 0
  for (let p = root.children; p < root.end && guard++ < 64;) {
    const fileInfo = block(buf, p, root.end)
    if (fileInfo === null) break
    if (fileInfo.key === 'StringFileInfo') {
      for (let q = fileInfo.children; q < fileInfo.end && guard++ < 256;) {
        const table = block(buf, q, fileInfo.end)
        if (table === null) break
        for (let r = table.children; r < table.end && out.length < 512;) {
          const str = block(buf, r, table.end)
          if (str === null) break
          out.push({ name: str.key, value: str.value.toString('utf16le').replace(/\0+$/, '') })
          r = align4(str.end)
        }
        q = align4(table.end)
      }
    } else if (fileInfo.key === 'VarFileInfo') {
      for (let q = fileInfo.children; q < fileInfo.end && guard++ < 256;) {
        const v = block(buf, q, fileInfo.end)
        if (v === null) break
        const words: string[] = []
        for (let i = 0; i + 1 < v.value.length; i += 2) words.push(`0x${v.value.readUInt16LE(i).toString(16).padStart(4, '0')}`)
        out.push({ name: v.key, value: words.join(' ') })
        q = align4(v.end)
      }
    }
    p = align4(fileInfo.end)
  }
  return out
}
