// The source of a document's VBA macros, as Cuckoo 2.0.7 shows it (`static.office.macros`, read
// by its web interface: module, stream, original and deobfuscated code). A VBA project is an OLE
// storage (a .doc's Macros/VBA, an .xls's _VBA_PROJECT_CUR/VBA, an OOXML's vbaProject.bin) whose
// `dir` stream lists the modules, and whose module streams hold each module's source, compressed,
// after its p-code ([MS-OVBA] 2.3.4 and 2.4.1). `cfb` reads the storage.
//
// Written here because no maintained npm package reads VBA source (oletools' olevba is Python;
// SheetJS keeps vbaProject.bin whole, compressed). The format is small: a run-length decompressor
// and one list of records. Everything comes from the sample, so every size is bounded: the number
// of modules, each module's source and the whole output, and a malformed part ends that part with
// an error, never the analysis.
import CFB from 'cfb'

export interface Macro {
  /** The module's stream in the document: its OLE path (Macros/VBA/ThisDocument). */
  stream: string
  /** The module's name with the extension VBA editors export it with (.bas, .cls). */
  filename: string
  orig_code: string
  /** String building undone: Chr(n) as the character, "a" & "b" as one literal. */
  deobf: string
}

export const MAX_MODULES = 256
/** Source kept per module; longer modules are cut there. */
export const MAX_MODULE_CODE = 1 << 20
/** Decompressed bytes of all modules of one document together. */
export const MAX_TOTAL_CODE = 16 << 20
const MAX_DIR = 1 << 20
const CHUNK = 4096

export class VbaFormatError extends Error {}

/**
 * [MS-OVBA] 2.4.1: a compressed container (signature byte 1, then chunks of at most 4096 bytes
 * each, raw or as literal and copy tokens) decompressed, stopping at `max` bytes.
 */
export function decompressVba(data: Buffer, max: number): Buffer {
  if (data.length === 0 || data[0] !== 0x01) throw new VbaFormatError('not a compressed VBA container')
  const out = Buffer.allocUnsafe(Math.min(max, Math.max(CHUNK, data.length * 8)))
  let o = 0
  let i = 1
  let room = out
  const ensure = (n: number): boolean => {
    if (o + n <= room.length) return true
    if (room.length >= max) return false
    const bigger = Buffer.allocUnsafe(Math.min(max, Math.max(room.length * 2, o + n)))
    room.copy(bigger, 0, 0, o)
    room = bigger
    return o + n <= room.length
  }
  while (i + 2 <= data.length && o < max) {
    const header = data.readUInt16LE(i)
    if (((header >> 12) & 0x7) !== 0x3) throw new VbaFormatError(`bad chunk signature at ${i}`)
    const end = Math.min(data.length, i + (header & 0x0fff) + 3)
    i += 2
    const chunkStart = o
    if ((header & 0x8000) === 0) {
      // A raw chunk: 4096 bytes as they are.
      const n = Math.min(CHUNK, end - i, max - o)
      if (!ensure(n)) break
      data.copy(room, o, i, i + n)
      o += n
      i = end
      continue
    }
    while (i < end && o < max) {
      const flags = data[i++]!
      for (let bit = 0; bit < 8 && i < end && o < max; bit++) {
        if ((flags & (1 << bit)) === 0) {
          if (!ensure(1)) break
          room[o++] = data[i++]!
          continue
        }
        if (i + 2 > end) throw new VbaFormatError(`copy token cut at ${i}`)
        const token = data.readUInt16LE(i)
        i += 2
        const done = o - chunkStart
        if (done === 0) throw new VbaFormatError(`copy token before any byte of its chunk at ${i - 2}`)
        let bits = 4
        while ((1 << bits) < done) bits++
        const lengthMask = 0xffff >> bits
        const length = (token & lengthMask) + 3
        const offset = (token >> (16 - bits)) + 1
        if (offset > done) throw new VbaFormatError(`copy token reaches before its chunk at ${i - 2}`)
        const n = Math.min(length, CHUNK - done, max - o)
        if (!ensure(n)) break
        // Byte by byte: a copy may overlap what it is writing (a run).
        for (let k = 0; k < n; k++, o++) room[o] = room[o - offset]!
      }
    }
    i = end
  }
  return room.subarray(0, o)
}

interface ModuleEntry {
  name: string
  stream: string
  offset: number
  procedural: boolean
}

/** [MS-OVBA] 2.3.4.2: the project's code page and its modules, from the decompressed `dir` stream. */
export function readDir(dir: Buffer): { codePage: number; modules: ModuleEntry[] } {
  let codePage = 1252
  const modules: ModuleEntry[] = []
  let current: Partial<ModuleEntry> | null = null
  let i = 0
  while (i + 6 <= dir.length) {
    const id = dir.readUInt16LE(i)
    const size = dir.readUInt32LE(i + 2)
    // PROJECTVERSION's size field says 4, but 6 bytes follow (its major and minor version).
    const length = id === 0x0009 ? 6 : size
    const body = dir.subarray(i + 6, i + 6 + length)
    if (body.length < length) break
    i += 6 + length
    switch (id) {
      case 0x0003: if (body.length >= 2) codePage = body.readUInt16LE(0); break // PROJECTCODEPAGE
      case 0x0019: current = { name: decode(body, codePage), procedural: true }; break // MODULENAME
      case 0x001a: if (current) current.stream = decode(body, codePage); break // MODULESTREAMNAME
      case 0x0031: if (current && body.length >= 4) current.offset = body.readUInt32LE(0); break // MODULEOFFSET
      case 0x0022: if (current) current.procedural = false; break // MODULETYPE: document, class or designer module
      case 0x002b: // the module's terminator
        if (current?.name !== undefined && current.offset !== undefined) {
          modules.push({ name: current.name, stream: current.stream ?? current.name, offset: current.offset, procedural: current.procedural ?? true })
          if (modules.length >= MAX_MODULES) return { codePage, modules }
        }
        current = null
        break
      case 0x0010: return { codePage, modules } // the end of the dir stream
    }
  }
  return { codePage, modules }
}

/** Text in the project's code page (a code page this Node cannot decode is read as Windows-1252). */
function decode(bytes: Buffer, codePage: number): string {
  const label = codePage === 65001 ? 'utf-8' : codePage === 1200 ? 'utf-16le' : `windows-${codePage}`
  try {
    return new TextDecoder(label).decode(bytes)
  } catch {
    return new TextDecoder('windows-1252').decode(bytes)
  }
}

/** Chr(72) & "i" → "Hi": the string building macros hide their words with, undone where it is literal. */
export function deobfuscateVba(code: string): string {
  let out = code.replace(/\bChr[WB]?\$?\(\s*(\d{1,5})\s*\)/gi, (m, n: string) => {
    const c = Number(n)
    if (c > 0xffff) return m
    const ch = String.fromCharCode(c)
    return ch === '"' ? '""""' : /[\p{Cc}]/u.test(ch) ? m : `"${ch}"`
  })
  // Adjacent literals joined by & or +, until none is left (bounded: each pass shortens the text).
  for (let pass = 0; pass < 1000; pass++) {
    const next = out.replace(/"((?:[^"\r\n]|"")*)"\s*[&+]\s*"((?:[^"\r\n]|"")*)"/g, '"$1$2"')
    if (next === out) break
    out = next
  }
  return out
}

/**
 * Every module of every VBA project in an OLE compound file: its source, decompressed from the
 * module stream. Returns what was read and the first problems met (a module that cannot be read
 * is left out, the others are kept).
 */
export function extractMacros(ole: Buffer | CFB.CFB$Container): { macros: Macro[]; errors: string[] } {
  const container = Buffer.isBuffer(ole) ? CFB.read(ole, { type: 'buffer' }) : ole
  const macros: Macro[] = []
  const errors: string[] = []
  const note = (m: string) => { if (errors.length < 8) errors.push(m) }
  // Paths without the root entry's name, upper-cased: storage and stream names are case-insensitive.
  const byPath = new Map<string, CFB.CFB$Entry>()
  const shown = new Map<string, string>()
  container.FullPaths.forEach((full, k) => {
    const rel = full.slice(full.indexOf('/') + 1)
    byPath.set(rel.toUpperCase(), container.FileIndex[k]!)
    shown.set(rel.toUpperCase(), rel)
  })
  let total = 0
  for (const [p, entry] of byPath) {
    if (!/(^|\/)VBA\/DIR$/.test(p) || entry.type !== 2) continue
    const storage = p.slice(0, -'DIR'.length)
    let dir
    try {
      dir = readDir(decompressVba(Buffer.from(entry.content as Uint8Array), MAX_DIR))
    } catch (err) {
      note(`${shown.get(p)}: ${(err as Error).message}`)
      continue
    }
    for (const m of dir.modules) {
      if (macros.length >= MAX_MODULES || total >= MAX_TOTAL_CODE) {
        note(`more modules than read: the first ${macros.length} kept`)
        return { macros, errors }
      }
      const streamPath = storage + m.stream.toUpperCase()
      const stream = byPath.get(streamPath)
      if (stream === undefined || stream.type !== 2) {
        note(`module ${m.name}: no stream ${m.stream}`)
        continue
      }
      const content = Buffer.from(stream.content as Uint8Array)
      try {
        if (m.offset >= content.length) throw new VbaFormatError(`source offset ${m.offset} past the stream's ${content.length} bytes`)
        const code = decode(decompressVba(content.subarray(m.offset), Math.min(MAX_MODULE_CODE, MAX_TOTAL_CODE - total)), dir.codePage)
        total += code.length
        macros.push({
          stream: shown.get(streamPath) ?? m.stream,
          filename: `${m.name}.${m.procedural ? 'bas' : 'cls'}`,
          orig_code: code,
          deobf: deobfuscateVba(code)
        })
      } catch (err) {
        note(`module ${m.name}: ${(err as Error).message}`)
      }
    }
  }
  return { macros, errors }
}
