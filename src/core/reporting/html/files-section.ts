// The file parts of report.html: dropped files (with YARA), the sample's static analysis (PE
// headers, sections, imports; ELF header, sections, libraries; anything else laid out generically),
// and the screenshots as inline thumbnails (data: URIs — the page loads nothing from anywhere).
import { readFile, readdir, stat } from 'node:fs/promises'
import path from 'node:path'
import sharp from 'sharp'
import { size, text, when } from './escape'
import { MAX_LIST, generic, kv, moreLine, table, tags, type Obj } from './blocks'
import type { PageWriter } from './page-writer'
import { isObj, num, obj, objs, str, strs } from '../report-view'
import { ARTIFACTS, artifactPath } from '../../storage/layout'

export const MAX_SHOTS = 24
const MAX_THUMB_BYTES = 2 * 1024 * 1024

function yaraNames(o: Obj): string {
  const names = objs(o, 'yara').map((m) => str(m, 'name')).filter((n) => n !== '')
  return names.length > 0 ? tags(names, 20) : ''
}

export async function droppedSection(w: PageWriter, report: Obj): Promise<void> {
  const dropped = objs(report, 'dropped')
  w.put(`<section id="dropped"><h2>Dropped files (${dropped.length})</h2>`)
  await table(w, dropped, [
    { title: 'name', cell: (d) => `<code>${text(str(d, 'name'), 300)}</code>` },
    { title: 'path in guest', cell: (d) => `<code>${text(str(d, 'filepath'), 1000)}</code>` },
    { title: 'size', cell: (d) => size(d.size) },
    { title: 'type', cell: (d) => text(str(d, 'type'), 300) },
    { title: 'sha256', cell: (d) => `<code>${text(str(d, 'sha256'), 64)}</code>` },
    { title: 'YARA', cell: yaraNames }
  ], 'dropped files')
  w.put('</section>')
}

/** `buffer`: what Cuckoo's monitor captured of memory and I/O buffers (only with its analyzer). */
export async function bufferSection(w: PageWriter, report: Obj): Promise<void> {
  const buffers = objs(report, 'buffer')
  if (buffers.length === 0) return
  w.put(`<section id="buffer"><h2>Buffers (${buffers.length})</h2>`)
  await table(w, buffers, [
    { title: 'sha1', cell: (d) => `<code>${text(str(d, 'name'), 64)}</code>` },
    { title: 'size', cell: (d) => size(d.size) },
    { title: 'type', cell: (d) => text(str(d, 'type'), 300) },
    { title: 'YARA', cell: yaraNames }
  ], 'buffers')
  w.put('</section>')
}

async function peSection(w: PageWriter, s: Obj): Promise<void> {
  const sig = s.signature
  w.put(kv([
    ['Compile time', when(s.pe_timestamp)],
    ['Imphash', str(s, 'pe_imphash') ? `<code>${text(str(s, 'pe_imphash'))}</code>` : ''],
    ['PDB path', text(str(s, 'pdb_path'))],
    ['Signature', sig === undefined ? '' : Array.isArray(sig) ? (sig.length > 0 ? `present (${sig.length})` : 'none') : text(sig, 300)],
    ['Imported DLLs', text(num(s, 'imported_dll_count') ?? '')],
    ['PEiD', tags(strs(s, 'peid_signatures'), 20)]
  ]))
  const sections = objs(s, 'pe_sections')
  if (sections.length > 0) {
    w.put('<h3>Sections</h3>')
    await table(w, sections, [
      { title: 'name', cell: (x) => `<code>${text(str(x, 'name'), 40)}</code>` },
      { title: 'virtual address', cell: (x) => `<code>${text(x.virtual_address, 40)}</code>` },
      { title: 'virtual size', cell: (x) => `<code>${text(x.virtual_size, 40)}</code>` },
      { title: 'raw size', cell: (x) => `<code>${text(x.size_of_data, 40)}</code>` },
      { title: 'entropy', cell: (x) => text(num(x, 'entropy') !== null ? (num(x, 'entropy') as number).toFixed(2) : '') }
    ], 'sections', 100)
  }
  const imports = objs(s, 'pe_imports')
  if (imports.length > 0) {
    w.put(`<h3>Imports (${imports.length} libraries)</h3>`)
    await table(w, imports, [
      { title: 'library', cell: (d) => `<code>${text(str(d, 'dll'), 200)}</code>` },
      { title: 'functions', cell: (d) => {
        const fns = objs(d, 'imports').map((f) => str(f, 'name') || `#${text(f.ordinal ?? '?')}`)
        return `${fns.length} · ${tags(fns, 12)}`
      } }
    ], 'libraries', 200)
  }
  const exports = objs(s, 'pe_exports')
  if (exports.length > 0) w.put(`<h3>Exports (${exports.length})</h3><p>${tags(exports.map((e) => str(e, 'name') || `#${String(e.ordinal ?? '?')}`), MAX_LIST)}</p>`)
  const versioninfo = objs(s, 'pe_versioninfo')
  if (versioninfo.length > 0) w.put('<h3>Version information</h3>' + kv(versioninfo.slice(0, 50).map((v) => [str(v, 'name'), text(v.value, 500)])))
}

async function elfSection(w: PageWriter, elf: Obj): Promise<void> {
  const header = Object.keys(obj(elf, 'file_header')).length > 0 ? obj(elf, 'file_header') : obj(elf, 'header')
  if (Object.keys(header).length > 0) { w.put('<h3>ELF header</h3>'); await generic(w, header, 2) }
  const libs = [...strs(elf, 'libraries'), ...strs(elf, 'needed'), ...strs(elf, 'dynamic_libraries')]
  if (libs.length > 0) w.put(`<h3>Libraries (${libs.length})</h3><p>${tags(libs)}</p>`)
  for (const [key, value] of Object.entries(elf)) {
    if (['file_header', 'header', 'libraries', 'needed', 'dynamic_libraries'].includes(key)) continue
    w.put(`<h3>${text(key, 100)}</h3>`)
    await generic(w, value, 1)
  }
}

/** Source shown per macro module in the page (report.json has all of it). */
const MACRO_CODE_SHOWN = 200_000

/** Source code as escaped lines: its line breaks kept as lines, any other invisible character marked. */
function codeLines(code: string): string {
  const shown = code.length > MACRO_CODE_SHOWN ? code.slice(0, MACRO_CODE_SHOWN) : code
  const lines = shown.split(/\r\n|\r|\n/).map((line) => text(line, MACRO_CODE_SHOWN)).join('\n')
  return code.length > shown.length ? `${lines}\n… (${code.length - shown.length} more characters)` : lines
}

/** A PDF's versions (Cuckoo 2.0.7's rows): each one's facts and counts, then its JavaScript, beautified. */
async function pdfSection(w: PageWriter, rows: Obj[]): Promise<void> {
  for (const [i, r] of rows.slice(0, 64).entries()) {
    w.put(`<h3>PDF${rows.length > 1 ? `, version ${i}${i === 0 ? ' (original)' : ' (update)'}` : ''}</h3>`)
    await generic(w, Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'javascript')), 1)
    const scripts = objs(r, 'javascript')
    w.put(`<p><b>JavaScript (${scripts.length})</b></p>`)
    if (scripts.length === 0) w.put('<p class="muted">No JavaScript.</p>')
    for (const js of scripts.slice(0, MAX_LIST)) {
      w.put(`<pre>${codeLines(str(js, 'beautified') || str(js, 'orig_code'))}</pre>`)
      await w.tick()
    }
  }
}

/** An Office document's facts, then each VBA module's source as written (report.json also has it folded). */
async function officeSection(w: PageWriter, office: Obj): Promise<void> {
  await generic(w, Object.fromEntries(Object.entries(office).filter(([k]) => k !== 'macros')), 1)
  const macros = objs(office, 'macros')
  w.put(`<p><b>Macros (${macros.length})</b></p>`)
  if (macros.length === 0) w.put('<p class="muted">No VBA macros.</p>')
  for (const m of macros.slice(0, MAX_LIST)) {
    w.put(`<details><summary><code>${text(str(m, 'filename'), 300)}</code> ${text(str(m, 'stream'), 500)}</summary>` +
      `<pre>${codeLines(str(m, 'orig_code'))}</pre></details>`)
    await w.tick()
  }
  w.put(moreLine(macros.length, Math.min(macros.length, MAX_LIST), 'macro modules'))
}

export async function staticSection(w: PageWriter, report: Obj): Promise<void> {
  const s = obj(report, 'static')
  const keys = Object.keys(s)
  w.put('<section id="static"><h2>Static analysis</h2>')
  if (keys.length === 0) w.put('<p class="muted">No static analysis.</p>')
  const isPe = keys.some((k) => k.startsWith('pe_'))
  if (isPe) await peSection(w, s)
  for (const key of keys) {
    if (isPe && (key.startsWith('pe_') || ['signature', 'pdb_path', 'imported_dll_count', 'peid_signatures', 'keys'].includes(key))) continue
    const v = s[key]
    if (key === 'elf' && isObj(v)) { w.put('<h3>ELF</h3>'); await elfSection(w, v); continue }
    if (key === 'office' && isObj(v)) { w.put('<h3>Office</h3>'); await officeSection(w, v); continue }
    if (key === 'pdf' && Array.isArray(v)) { await pdfSection(w, v.filter(isObj)); continue }
    w.put(`<h3>${text(key, 100)}</h3>`)
    await generic(w, v, 1)
  }
  const urls = strs(obj(obj(report, 'target'), 'file'), 'urls')
  if (urls.length > 0) w.put(`<h3>URLs in the file (${urls.length})</h3><p>${tags(urls, 1000)}</p>`)
  const strings = strs(report, 'strings')
  if (strings.length > 0) {
    w.put(`<details><summary>Strings (${strings.length})</summary><p>${tags(strings, 500)}</p></details>`)
  }
  w.put('</section>')
}

/** Screenshot file names to show: from report.screenshots[].path, else the shots/ folder. */
async function shotNames(report: Obj, dir: string): Promise<string[]> {
  const valid = (n: string): boolean => /^\d{1,8}\.(jpg|jpeg|png)$/i.test(n)
  const fromReport = objs(report, 'screenshots').map((s) => path.basename(str(s, 'path'))).filter(valid)
  if (fromReport.length > 0) return fromReport
  try {
    return (await readdir(artifactPath(dir, ARTIFACTS.shots))).filter(valid).sort()
  } catch {
    return []
  }
}

/** The thumbnail of a shot as a data: URI: shots/NNNN_small.jpg, else made from the shot with sharp. */
async function thumbnail(dir: string, name: string): Promise<string | null> {
  const stem = name.replace(/\.[^.]+$/, '')
  const small = artifactPath(dir, ARTIFACTS.shots, `${stem}_small.jpg`)
  try {
    if ((await stat(small)).size <= MAX_THUMB_BYTES) return `data:image/jpeg;base64,${(await readFile(small)).toString('base64')}`
  } catch { /* no thumbnail yet: make one */ }
  try {
    const jpeg = await sharp(artifactPath(dir, ARTIFACTS.shots, name)).resize(320, 320, { fit: 'inside' }).jpeg({ quality: 70 }).toBuffer()
    return `data:image/jpeg;base64,${jpeg.toString('base64')}`
  } catch {
    return null
  }
}

export async function screenshotsSection(w: PageWriter, report: Obj, dir: string): Promise<void> {
  const names = await shotNames(report, dir)
  const shown = names.slice(0, MAX_SHOTS)
  w.put(`<section id="screenshots"><h2>Screenshots${names.length > shown.length ? ` (${shown.length} of ${names.length})` : ` (${names.length})`}</h2>`)
  if (names.length === 0) w.put('<p class="muted">No screenshots.</p>')
  w.put('<div class="shots">')
  for (const name of shown) {
    const uri = await thumbnail(dir, name)
    // The URI is built here from base64 only; the name is escaped.
    w.put(uri === null ? `<figure><p class="muted">unreadable</p><figcaption>${text(name)}</figcaption></figure>`
      : `<figure><img alt="${text(name)}" src="${uri}"><figcaption>${text(name)}</figcaption></figure>`)
    await w.tick()
  }
  w.put('</div>' + moreLine(names.length, shown.length, 'screenshots') + '</section>')
}
