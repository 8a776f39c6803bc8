// `static.pdf` as Cuckoo 2.0.7 writes it (peepdf's view, read by its web template): one row per
// version of the document (the original and each incremental update, ended by %%EOF), with the
// version's metadata (the trailer's /Info), its JavaScript (/JS strings and streams, as written and
// beautified, with the URLs written in it), the URLs of its /URI actions, its embedded files' names and its /OpenAction. Aviary
// adds, per version, pdfid-style counts of the names that make a PDF worth a closer look (objects,
// streams, /JS, /OpenAction, /AA, /Launch, embedded files, …), also counted inside compressed
// object streams, with #xx escapes in names undone (/J#61vaScript is /JavaScript).
//
// Read here, from the bytes: the maintained JavaScript PDF reader, pdf.js (pdfjs-dist), is made to
// render, so it merges the incremental updates into one document and repairs what is broken, where
// this must show each version as written, broken parts included. What is read is small: objects by their `n g obj` headers, values by their first bytes,
// strings and streams with their escapes and filters (Flate, ASCIIHex, ASCII85). Every scan is an
// index loop or a bounded expression, every size is capped: a hostile PDF costs a linear pass.
import { constants, inflateSync } from 'node:zlib'
import beautify from 'js-beautify'
import { Closed, Nullable, Type, type Static } from '../schema.js'
import { UrlScanner } from '../file-info.js'

export const PDF_MAX_BYTES = 64 * 1024 * 1024
const INFLATE_MAX = 16 * 1024 * 1024
const MAX_URLS = 256
const MAX_STREAMS_EXAMINED = 4096
const MAX_OBJECTS = 200_000
const MAX_VERSIONS = 64
const MAX_SCRIPTS = 256
const MAX_SCRIPT = 1024 * 1024
const MAX_SCRIPTS_TOTAL = 8 * 1024 * 1024
const MAX_ATTACHMENTS = 256
const MAX_FIELD = 2048
/** Bytes all of a PDF's streams may decode to, together. */
const DECODE_BUDGET = 64 * 1024 * 1024

const COUNT_KEYS = ['objects', 'streams', 'object_streams', 'javascript', 'openaction', 'aa', 'launch', 'embedded_files', 'uri', 'acroform', 'xfa', 'encrypt'] as const
type CountKey = (typeof COUNT_KEYS)[number]

export const PdfCountsSchema = Closed(Object.fromEntries(COUNT_KEYS.map((k) => [k, Type.Integer()])) as Record<CountKey, ReturnType<typeof Type.Integer>>)
export type PdfCounts = Static<typeof PdfCountsSchema>

export const PdfVersionSchema = Closed({
  /** The version's number: 0 the original document, 1 its first incremental update, … */
  version: Type.Integer(),
  creator: Type.String(),
  creation: Type.String(),
  title: Type.String(),
  subject: Type.String(),
  producer: Type.String(),
  author: Type.String(),
  modification: Type.String(),
  javascript: Type.Array(Closed({ orig_code: Type.String(), beautified: Type.String(), urls: Type.Array(Type.String()) })),
  urls: Type.Array(Type.String()),
  attachments: Type.Array(Closed({ filename: Type.String() })),
  /** The /OpenAction dictionary, as written (null: none, or a destination rather than an action). */
  openaction: Nullable(Type.String()),
  /** The header's version (%PDF-1.7), the same in every row. */
  pdf_version: Nullable(Type.String()),
  counts: PdfCountsSchema,
  error: Type.Optional(Type.String())
})
export type PdfVersion = Static<typeof PdfVersionSchema>
export const PdfSchema = Type.Array(PdfVersionSchema)
export type PdfFacts = Static<typeof PdfSchema>

/** Undoes #xx escapes in a PDF name (/J#61vaScript is /JavaScript). */
function pdfName(raw: string): string {
  return raw.includes('#') ? raw.replace(/#([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))) : raw
}

const COUNTED: Record<string, CountKey> = {
  '/JS': 'javascript', '/JavaScript': 'javascript', '/OpenAction': 'openaction', '/AA': 'aa', '/Launch': 'launch',
  '/EmbeddedFile': 'embedded_files', '/EmbeddedFiles': 'embedded_files', '/URI': 'uri', '/AcroForm': 'acroform',
  '/XFA': 'xfa', '/Encrypt': 'encrypt', '/ObjStm': 'object_streams'
}

const isWordChar = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95
const isSpace = (c: number): boolean => c === 32 || c === 10 || c === 13 || c === 9 || c === 12 || c === 0

function countStreams(text: string): number {
  let n = 0
  for (let p = text.indexOf('stream'); p >= 0; p = text.indexOf('stream', p + 6)) {
    const next = text.charCodeAt(p + 6)
    if (!isWordChar(text.charCodeAt(p - 1)) && (next === 10 || (next === 13 && text.charCodeAt(p + 7) === 10))) n++
  }
  return n
}

function countNames(text: string, counts: PdfCounts): void {
  counts.streams += countStreams(text)
  for (const m of text.matchAll(/\/[^\s/<>[\]()%{}]+/g)) {
    const key = COUNTED[pdfName(m[0])]
    if (key !== undefined) counts[key]++
  }
}

// ---- values -------------------------------------------------------------------------------------

/** A PDF literal string starting at `at` ('('): its bytes with escapes undone, and where it ends. */
function literalString(text: string, at: number): { bytes: string; end: number } {
  let depth = 0
  let out = ''
  let i = at
  for (; i < text.length && out.length <= MAX_SCRIPT; i++) {
    const c = text[i]!
    if (c === '\\') {
      const n = text[++i] ?? ''
      if (n === 'n') out += '\n'
      else if (n === 'r') out += '\r'
      else if (n === 't') out += '\t'
      else if (n === 'b') out += '\b'
      else if (n === 'f') out += '\f'
      else if (n === '\r') { if (text[i + 1] === '\n') i++ } // a line continued
      else if (n === '\n') { /* a line continued */ }
      else if (n >= '0' && n <= '7') {
        let oct = n
        while (oct.length < 3 && text[i + 1]! >= '0' && text[i + 1]! <= '7') oct += text[++i]
        out += String.fromCharCode(parseInt(oct, 8) & 0xff)
      } else out += n
      continue
    }
    if (c === '(') { if (depth++ === 0) continue }
    else if (c === ')') { if (--depth === 0) return { bytes: out, end: i + 1 } }
    out += c
  }
  return { bytes: out, end: i }
}

function hexString(text: string, at: number): { bytes: string; end: number } {
  const close = text.indexOf('>', at)
  const end = close < 0 ? Math.min(text.length, at + 2 * MAX_SCRIPT) : close
  let digits = text.slice(at + 1, end).replace(/[^0-9A-Fa-f]/g, '')
  if (digits.length % 2 === 1) digits += '0'
  return { bytes: Buffer.from(digits, 'hex').toString('latin1'), end: end + 1 }
}

/** The end of a balanced `open` … `close` run (dictionaries, arrays), skipping strings in it. */
function balancedEnd(text: string, at: number, open: string, close: string): number {
  let depth = 0
  for (let i = at; i < text.length && i < at + 4 * MAX_SCRIPT; i++) {
    const c = text[i]
    if (c === '(') { i = literalString(text, i).end - 1; continue }
    if (text.startsWith(open, i)) { depth++; i += open.length - 1; continue }
    if (text.startsWith(close, i)) { if (--depth === 0) return i + close.length; i += close.length - 1 }
  }
  return Math.min(text.length, at + 4 * MAX_SCRIPT)
}

type Value =
  | { kind: 'string'; bytes: string }
  | { kind: 'ref'; id: string }
  | { kind: 'dict' | 'array' | 'other'; raw: string }

/** The value that starts at `at` (after a key). */
function valueAt(text: string, at: number): Value {
  let i = at
  while (i < text.length && isSpace(text.charCodeAt(i))) i++
  const c = text[i]
  if (c === '(') return { kind: 'string', bytes: literalString(text, i).bytes }
  if (c === '<' && text[i + 1] === '<') return { kind: 'dict', raw: text.slice(i, balancedEnd(text, i, '<<', '>>')) }
  if (c === '<') return { kind: 'string', bytes: hexString(text, i).bytes }
  if (c === '[') return { kind: 'array', raw: text.slice(i, balancedEnd(text, i, '[', ']')) }
  if (c === '/') return { kind: 'other', raw: /^\/[^\s/<>[\]()%{}]*/.exec(text.slice(i, i + 256))![0] }
  const ref = /^(\d{1,10})\s+(\d{1,5})\s+R\b/.exec(text.slice(i, i + 32))
  if (ref !== null) return { kind: 'ref', id: `${ref[1]} ${ref[2]}` }
  return { kind: 'other', raw: text.slice(i, i + 64).split(/[\s/<>[\]()]/)[0] ?? '' }
}

/** Every value of name `key` in a dictionary's text (any depth), names' #xx escapes undone. */
function valuesOf(dict: string, key: string): Value[] {
  const out: Value[] = []
  for (const m of dict.matchAll(/\/[^\s/<>[\]()%{}]+/g)) {
    if (pdfName(m[0]) === key) out.push(valueAt(dict, (m.index ?? 0) + m[0].length))
    if (out.length >= MAX_SCRIPTS) break
  }
  return out
}

/** A PDF text string as text: UTF-16 with a byte order mark, UTF-8 with one, else PDFDocEncoding (as Latin-1). */
function textString(bytes: string): string {
  const b = Buffer.from(bytes, 'latin1')
  if (b[0] === 0xfe && b[1] === 0xff) return Buffer.from(b.subarray(2, 2 + ((b.length - 2) & ~1))).swap16().toString('utf16le')
  if (b[0] === 0xff && b[1] === 0xfe) return b.subarray(2).toString('utf16le')
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return b.subarray(3).toString('utf8')
  return bytes
}

// ---- objects ------------------------------------------------------------------------------------

interface PdfObject {
  /** The dictionary (or other value) before any stream. */
  dict: string
  /** The stream's raw bytes (latin1), if it has one. */
  stream: string | null
  version: number
}

/** Undoes a stream's filters (Flate, ASCIIHex, ASCII85, in the order listed); throws on another. */
function decodeStream(o: PdfObject): string {
  if (o.stream === null) return ''
  const filters: string[] = []
  for (const v of valuesOf(o.dict, '/Filter').slice(0, 1)) {
    const raw = v.kind === 'array' ? v.raw : v.kind === 'other' ? v.raw : ''
    for (const m of raw.matchAll(/\/[^\s/<>[\]()%{}]+/g)) filters.push(pdfName(m[0]))
  }
  let data: Buffer = Buffer.from(o.stream, 'latin1')
  for (const f of filters.slice(0, 8)) {
    if (f === '/FlateDecode' || f === '/Fl') data = inflateSync(data, { maxOutputLength: INFLATE_MAX, finishFlush: constants.Z_SYNC_FLUSH /* a truncated stream gives what it has */ })
    else if (f === '/ASCIIHexDecode' || f === '/AHx') data = Buffer.from(hexString(`<${data.toString('latin1').split('>')[0]}>`, 0).bytes, 'latin1')
    else if (f === '/ASCII85Decode' || f === '/A85') data = ascii85(data.toString('latin1'))
    else throw new Error(`stream filter ${f} is not read`)
  }
  return data.toString('latin1')
}

function ascii85(text: string): Buffer {
  const body = text.replace(/^<~/, '').split('~>')[0]!.replace(/\s/g, '')
  const out: number[] = []
  let group: number[] = []
  for (const ch of body) {
    if (ch === 'z' && group.length === 0) { out.push(0, 0, 0, 0); continue }
    const d = ch.charCodeAt(0) - 33
    if (d < 0 || d > 84) throw new Error('bad ASCII85 character')
    group.push(d)
    if (group.length === 5) {
      let v = 0
      for (const x of group) v = v * 85 + x
      out.push((v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255)
      group = []
    }
    if (out.length > INFLATE_MAX) break
  }
  if (group.length > 1) {
    const n = group.length
    while (group.length < 5) group.push(84)
    let v = 0
    for (const x of group) v = v * 85 + x
    out.push(...[(v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].slice(0, n - 1))
  }
  return Buffer.from(out)
}

/** The ends of the document's versions: just past each %%EOF (and the end of the file). */
function versionEnds(text: string): number[] {
  const ends: number[] = []
  for (let p = text.indexOf('%%EOF'); p >= 0 && ends.length < MAX_VERSIONS - 1; p = text.indexOf('%%EOF', p + 5)) ends.push(p + 5)
  // Bytes after the last %%EOF that hold an object belong to a version of their own (an update without its marker).
  const last = ends.at(-1) ?? 0
  if (ends.length === 0 || /\d\s+\d+\s+obj\b/.test(text.slice(last, last + 1024 * 1024))) ends.push(text.length)
  else ends[ends.length - 1] = text.length
  return ends
}

// ---- the document -------------------------------------------------------------------------------

/** `static.pdf` of a PDF's bytes (the first 64 MiB): one row per version. */
export function analyzePdf(buf: Buffer): PdfFacts {
  const data = buf.subarray(0, PDF_MAX_BYTES)
  const text = data.toString('latin1')
  const header = /%PDF-(\d\.\d)/.exec(text.slice(0, 1024))?.[1] ?? null
  const ends = versionEnds(text)
  const versionOf = (at: number): number => { let v = 0; while (v < ends.length - 1 && at >= ends[v]!) v++; return v }
  const errors: string[][] = ends.map(() => [])
  const counts: PdfCounts[] = ends.map(() => Object.fromEntries(COUNT_KEYS.map((k) => [k, 0])) as PdfCounts)
  ends.forEach((end, v) => countNames(text.slice(v === 0 ? 0 : ends[v - 1]!, end), counts[v]!))

  // Objects by their headers, in file order (a later version's object replaces an earlier one's).
  // An object ends at its endobj, or at the next header when that comes first; one forward pointer
  // to the next endobj keeps this linear, whatever is missing.
  const objects = new Map<string, PdfObject>()
  const order: [string, PdfObject][] = []
  const headers: { at: number; bodyStart: number; id: string }[] = []
  for (const m of text.matchAll(/(\d{1,10})[ \t\r\n\f\0]{1,8}(\d{1,5})[ \t\r\n\f\0]{1,8}obj\b/g)) {
    if (headers.length >= MAX_OBJECTS) break
    const at = m.index ?? 0
    if (at > 0 && isWordChar(text.charCodeAt(at - 1))) continue
    headers.push({ at, bodyStart: at + m[0].length, id: `${Number(m[1])} ${Number(m[2])}` })
  }
  let nextEnd = -1
  headers.forEach(({ at, bodyStart, id }, k) => {
    if (nextEnd < bodyStart && nextEnd !== text.length) { nextEnd = text.indexOf('endobj', bodyStart); if (nextEnd < 0) nextEnd = text.length }
    const body = text.slice(bodyStart, Math.min(nextEnd, headers[k + 1]?.at ?? text.length))
    const s = /\bstream\r?\n/.exec(body)
    let dict = body
    let stream: string | null = null
    const streamEnd = s === null ? -1 : body.lastIndexOf('endstream')
    if (s !== null && streamEnd > s.index) {
      dict = body.slice(0, s.index)
      stream = body.slice(s.index + s[0].length, streamEnd).replace(/\r?\n$/, '')
    }
    const o: PdfObject = { dict, stream, version: versionOf(at) }
    objects.set(id, o)
    order.push([id, o])
  })
  counts.forEach((c, v) => { c.objects = order.filter(([, o]) => o.version === v).length })

  // Streams are decoded once each, and all of them together to at most DECODE_BUDGET bytes: many
  // references to large streams cost one pass, not one per reference.
  const decoded = new Map<PdfObject, string>()
  let budget = DECODE_BUDGET
  const decode = (o: PdfObject): string => {
    const known = decoded.get(o)
    if (known !== undefined) return known
    if (budget <= 0) throw new Error('the decoding budget of this PDF is spent')
    const out = decodeStream(o)
    budget -= out.length
    decoded.set(o, out)
    return out
  }

  // Objects inside compressed object streams (PDF 1.5+), invisible to a byte scan: counted in the
  // version of their stream, and read like the others.
  let examined = 0
  let inflated = 0
  for (const [id, o] of order) {
    if (o.stream === null || !/\/ObjStm\b/.test(pdfName(o.dict))) continue
    if (++examined > MAX_STREAMS_EXAMINED || inflated > INFLATE_MAX) break
    try {
      const content = decode(o)
      inflated += content.length
      countNames(content, counts[o.version]!)
      const first = valuesOf(o.dict, '/First')[0]
      const start = first?.kind === 'other' ? Number(first.raw) : NaN
      const head = Number.isFinite(start) ? content.slice(0, start) : ''
      const pairs = [...head.matchAll(/(\d{1,10})\s+(\d{1,10})/g)].slice(0, MAX_OBJECTS).map((p) => [Number(p[1]), Number(p[2])] as const)
      pairs.forEach(([num, off], k) => {
        if (order.length >= 2 * MAX_OBJECTS) return
        const from = start + off
        const to = k + 1 < pairs.length ? start + pairs[k + 1]![1] : content.length
        if (from >= to || from > content.length) return
        const inner: PdfObject = { dict: content.slice(from, to), stream: null, version: o.version }
        objects.set(`${num} 0`, inner)
        order.push([`${num} 0`, inner])
      })
      counts[o.version]!.objects += pairs.length
    } catch (err) {
      if (errors[o.version]!.length < 8) errors[o.version]!.push(`object stream ${id}: ${(err as Error).message}`)
    }
  }

  /** A string value, or the string or decoded stream of the object it refers to. */
  const str = (v: Value | undefined): string | null => {
    if (v === undefined) return null
    if (v.kind === 'string') return v.bytes
    if (v.kind === 'ref') {
      const target = objects.get(v.id)
      if (target === undefined) return null
      if (target.stream !== null) return decode(target)
      const inner = valueAt(target.dict, 0)
      return inner.kind === 'string' ? inner.bytes : null
    }
    return null
  }

  let scriptBytes = 0
  const rows: PdfFacts = ends.map((_, v) => {
    const row: PdfVersion = {
      version: v, creator: '', creation: '', title: '', subject: '', producer: '', author: '', modification: '',
      javascript: [], urls: [], attachments: [], openaction: null, pdf_version: header, counts: counts[v]!
    }
    const urls = new Set<string>()
    const note = (m: string) => { if (errors[v]!.length < 8) errors[v]!.push(m) }
    const slice = text.slice(v === 0 ? 0 : ends[v - 1]!, ends[v]!)
    // The version's metadata: its trailer's (or cross-reference stream's) /Info.
    const info = [...slice.matchAll(/\/Info\s+(\d{1,10})\s+(\d{1,5})\s+R\b/g)].at(-1)
    const infoObj = info === undefined ? undefined : objects.get(`${Number(info[1])} ${Number(info[2])}`)
    if (infoObj !== undefined) {
      const fields: [keyof PdfVersion, string][] = [['creator', '/Creator'], ['creation', '/CreationDate'], ['title', '/Title'], ['subject', '/Subject'], ['producer', '/Producer'], ['author', '/Author'], ['modification', '/ModDate']]
      for (const [key, name] of fields) {
        try {
          const s = str(valuesOf(infoObj.dict, name)[0])
          if (s !== null) (row[key] as string) = textString(s).slice(0, MAX_FIELD)
        } catch (err) { note(`/Info ${name}: ${(err as Error).message}`) }
      }
    }
    for (const [id, o] of order) {
      if (o.version !== v) continue
      for (const js of valuesOf(o.dict, '/JS')) {
        if (row.javascript.length >= MAX_SCRIPTS || scriptBytes >= MAX_SCRIPTS_TOTAL) break
        try {
          const code = str(js)
          if (code === null) continue
          const orig = textString(code).slice(0, MAX_SCRIPT)
          scriptBytes += orig.length
          // The http(s) URLs written in the script (Cuckoo 2.0.7 left this list empty).
          const found = new UrlScanner()
          found.update(Buffer.from(orig, 'utf8'))
          row.javascript.push({ orig_code: orig, beautified: beautify.js(orig, { indent_size: 2 }), urls: found.result().slice(0, MAX_URLS) })
        } catch (err) { note(`/JS of ${id}: ${(err as Error).message}`) }
      }
      for (const u of valuesOf(o.dict, '/URI')) {
        const s = u.kind === 'string' ? u.bytes : null
        if (s !== null && s !== '' && urls.size < MAX_URLS) urls.add(textString(s).slice(0, MAX_FIELD))
      }
      if (valuesOf(o.dict, '/EF').length > 0 && row.attachments.length < MAX_ATTACHMENTS) {
        const name = [...valuesOf(o.dict, '/UF'), ...valuesOf(o.dict, '/F')].find((x) => x.kind === 'string')
        if (name?.kind === 'string') row.attachments.push({ filename: textString(name.bytes).slice(0, MAX_FIELD) })
      }
      const action = valuesOf(o.dict, '/OpenAction')[0]
      if (action !== undefined) {
        const dict = action.kind === 'dict' ? action.raw : action.kind === 'ref' ? objects.get(action.id)?.dict.trim() : undefined
        if (dict !== undefined && dict.startsWith('<<')) row.openaction = dict.slice(0, MAX_FIELD)
      }
    }
    row.urls = [...urls].sort()
    if (errors[v]!.length > 0) row.error = errors[v]!.join('; ')
    return row
  })
  return rows
}
