// Static analysis of the sample: PE (headers, sections with entropy, imports, exports, resources,
// version info, signature), ELF (header, sections, libraries), PDF facts, Office facts with the
// source of each VBA macro module (as written, or with its strings folded), archive
// listings, and anything else laid out generically; then the strings, capped.
import { useState, type JSX } from 'react'
import { SafeText, Bytes, When } from '../components/text'
import { isObj, num, obj, objs, str, strs, textOf, type Obj } from './model'
import { DataTable, Empty, KeyValues, Mono, Section, Tags } from './common'

const MAX_STRINGS = 500

/** Abbreviations kept in capitals when a field name is read as words. */
const ABBREVIATIONS: Record<string, string> = {
  abi: 'ABI', os: 'OS', elf: 'ELF', pe: 'PE', pdf: 'PDF', id: 'ID', url: 'URL', urls: 'URLs', ip: 'IP', rva: 'RVA', va: 'VA', crc32: 'CRC32',
  md5: 'MD5', sha1: 'SHA1', sha256: 'SHA256', dll: 'DLL', dlls: 'DLLs', tls: 'TLS', pdb: 'PDB', vba: 'VBA', ole: 'OLE', js: 'JS', xmp: 'XMP'
}

/** A report's snake_case field name as words ("start_of_section_headers" → "Start of section headers"); other keys as they are. */
export function fieldWords(key: string): string {
  if (!/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/.test(key)) return key
  const words = key.split('_').map((w) => ABBREVIATIONS[w] ?? w)
  const first = words[0] as string
  words[0] = first === first.toLowerCase() ? first.charAt(0).toUpperCase() + first.slice(1) : first
  return words.join(' ')
}

/** A field's name in words, the report's own key on hover. */
function FieldName({ k }: { k: string }): JSX.Element {
  const words = fieldWords(k)
  return words === k ? <SafeText value={k} /> : <span title={k}>{words}</span>
}

/** What static analysis reads (src/core/processing/static): said when a file gets none. */
const READS = 'static analysis reads PE and ELF executables, PDF and Office documents, Windows shortcuts, and zip and tar archives'

function NoStatic({ report, s }: { report: unknown; s: Obj }): JSX.Element {
  const target = obj(report, 'target')
  const file = obj(target, 'file')
  const size = num(file, 'size')
  const type = str(file, 'type')
  const error = str(s, 'error')
  const isUrl = str(target, 'category') === 'url' || (str(target, 'url') !== '' && Object.keys(file).length === 0)
  return (
    <p data-testid="no-static" className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">
      {isUrl ? 'No static analysis: a URL task has no file to read.' : (
        <>No static analysis{size !== null ? <> of this <Bytes value={size} /> file</> : null}
          {error !== '' ? <>: it could not be read (<SafeText value={textOf(error, 500)} />).</>
            : type !== '' ? <>: its type is <SafeText value={textOf(type, 300)} />, and {READS}.</>
              : <>: {READS}, and the report does not say what this file is.</>}</>
      )}
    </p>
  )
}

/** Any JSON value as tables, two levels deep at most, capped everywhere. */
export function Generic({ value, depth = 0 }: { value: unknown; depth?: number }): JSX.Element {
  if (Array.isArray(value)) {
    if (value.length === 0) return <Empty>None.</Empty>
    if (value.every(isObj)) {
      const rows = value as Obj[]
      const keys: string[] = []
      for (const r of rows.slice(0, 20)) for (const k of Object.keys(r)) if (!keys.includes(k) && keys.length < 8) keys.push(k)
      return <DataTable rows={rows} label="rows" columns={keys.map((k) => ({ title: fieldWords(k), cell: (r: Obj) => <Mono value={textOf(r[k], 300)} />, sort: (r: Obj) => (typeof r[k] === 'number' ? r[k] : textOf(r[k], 100)) }))} />
    }
    return <Tags values={value.map((v) => textOf(v, 300))} />
  }
  if (isObj(value)) {
    const entries = Object.entries(value).slice(0, 500)
    return (
      <table className="text-sm"><tbody>
        {entries.map(([k, v]) => (
          <tr key={k} className="align-top">
            <th scope="row" className="py-0.5 pr-4 text-left font-medium text-zinc-600 dark:text-zinc-400"><FieldName k={k} /></th>
            <td className="py-0.5 break-all">{depth < 2 && (Array.isArray(v) || isObj(v)) ? <Generic value={v} depth={depth + 1} /> : <Mono value={textOf(v, 1000)} />}</td>
          </tr>
        ))}
      </tbody></table>
    )
  }
  return <Mono value={textOf(value, 1000)} />
}

function PeView({ s }: { s: Obj }): JSX.Element {
  const sig = s.signature
  const signature = sig === undefined ? null : Array.isArray(sig) ? (sig.length > 0 ? `present (${sig.length})` : 'none') : textOf(sig, 300)
  const imports = objs(s, 'pe_imports')
  const exports = objs(s, 'pe_exports').map((e) => str(e, 'name') || `#${textOf(e.ordinal ?? '?')}`)
  const versioninfo = objs(s, 'pe_versioninfo')
  return (
    <>
      <Section title="PE">
        <KeyValues rows={[
          ['Compile time', s.pe_timestamp !== undefined && s.pe_timestamp !== null && <When value={s.pe_timestamp} />],
          ['Imphash', str(s, 'pe_imphash') && <Mono value={str(s, 'pe_imphash')} />],
          ['Machine', str(s, 'pe_machine') && <SafeText value={str(s, 'pe_machine')} />],
          ['Entry point', s.pe_entrypoint !== undefined && <Mono value={textOf(s.pe_entrypoint)} />],
          ['PDB path', str(s, 'pdb_path') && <Mono value={str(s, 'pdb_path')} />],
          ['Signature', signature && <SafeText value={signature} />],
          ['Overlay', s.pe_overlay !== undefined && s.pe_overlay !== null && <Mono value={textOf(s.pe_overlay, 300)} />],
          ['Imported DLLs', num(s, 'imported_dll_count')]
        ]} />
      </Section>
      <Section title="Sections" count={objs(s, 'pe_sections').length}>
        <DataTable rows={objs(s, 'pe_sections')} label="sections" columns={[
          { title: 'name', cell: (x) => <Mono value={str(x, 'name')} />, sort: (x) => str(x, 'name') },
          { title: 'virtual address', cell: (x) => <Mono value={textOf(x.virtual_address, 40)} /> },
          { title: 'virtual size', cell: (x) => <Mono value={textOf(x.virtual_size, 40)} /> },
          { title: 'raw size', cell: (x) => <Mono value={textOf(x.size_of_data, 40)} /> },
          { title: 'entropy', cell: (x) => { const e = num(x, 'entropy'); return e === null ? '' : <span className={e > 7 ? 'font-semibold text-red-700 dark:text-red-400' : ''} title={e > 7 ? 'high entropy: packed or encrypted?' : undefined}>{e.toFixed(2)}</span> }, sort: (x) => num(x, 'entropy') ?? -1 }
        ]} />
      </Section>
      <Section title="Imports" count={imports.length}>
        <DataTable rows={imports} label="imported libraries" columns={[
          { title: 'library', cell: (d) => <Mono value={str(d, 'dll')} />, sort: (d) => str(d, 'dll').toLowerCase() },
          { title: 'functions', cell: (d) => { const fns = objs(d, 'imports').map((f) => str(f, 'name') || `#${textOf(f.ordinal ?? '?')}`); return <Tags values={fns} max={40} /> }, sort: (d) => objs(d, 'imports').length }
        ]} />
      </Section>
      {exports.length > 0 && <Section title="Exports" count={exports.length}><Tags values={exports} /></Section>}
      {objs(s, 'pe_resources').length > 0 && (
        <Section title="Resources" count={objs(s, 'pe_resources').length}>
          <DataTable rows={objs(s, 'pe_resources')} label="resources" columns={[
            { title: 'name', cell: (r) => <Mono value={str(r, 'name')} />, sort: (r) => str(r, 'name') },
            { title: 'offset', cell: (r) => <Mono value={textOf(r.offset)} /> },
            { title: 'size', cell: (r) => <Mono value={textOf(r.size)} /> },
            { title: 'language', cell: (r) => <SafeText value={str(r, 'language')} /> },
            { title: 'type', cell: (r) => <SafeText value={str(r, 'filetype')} /> }
          ]} />
        </Section>
      )}
      {versioninfo.length > 0 && <Section title="Version information"><KeyValues rows={versioninfo.slice(0, 50).map((v, i) => [str(v, 'name') || `#${i}`, <SafeText key={i} value={textOf(v.value, 500)} />])} /></Section>}
    </>
  )
}

function ElfView({ elf }: { elf: Obj }): JSX.Element {
  const header = Object.keys(obj(elf, 'file_header')).length > 0 ? obj(elf, 'file_header') : obj(elf, 'header')
  const libs = [...strs(elf, 'libraries'), ...strs(elf, 'needed')]
  return (
    <>
      <Section title="ELF header"><Generic value={header} depth={2} /></Section>
      {libs.length > 0 && <Section title="Libraries" count={libs.length}><Tags values={libs} /></Section>}
      {Object.entries(elf).filter(([k]) => !['file_header', 'header', 'libraries', 'needed'].includes(k)).map(([k, v]) => (
        <Section key={k} title={fieldWords(k)}><Generic value={v} depth={1} /></Section>
      ))}
    </>
  )
}

/** Source shown per macro module; a longer one says how much more there is. */
const MACRO_CODE_SHOWN = 200_000

function MacroModule({ m }: { m: Obj }): JSX.Element {
  const [deobf, setDeobf] = useState(false)
  const orig = str(m, 'orig_code')
  const folded = str(m, 'deobf')
  const differs = folded !== '' && folded !== orig
  return (
    <details className="mb-2 rounded border border-zinc-200 dark:border-zinc-700" open>
      <summary className="cursor-pointer px-2 py-1 text-sm">
        <span className="font-mono font-semibold"><SafeText value={textOf(str(m, 'filename'), 300)} /></span>
        <span className="ml-2 text-xs text-zinc-600 dark:text-zinc-400"><SafeText value={textOf(str(m, 'stream'), 500)} /></span>
      </summary>
      {differs && (
        <label className="ml-2 text-xs">
          <input type="checkbox" className="mr-1" checked={deobf} onChange={(e) => setDeobf(e.target.checked)} />
          strings folded (Chr() and concatenations)
        </label>
      )}
      <CodeBlock code={deobf && differs ? folded : orig} label={`source of ${str(m, 'filename')}`} />
    </details>
  )
}

/** A PDF's JavaScript: beautified, or as written. */
function PdfScript({ js, n }: { js: Obj; n: number }): JSX.Element {
  const [asWritten, setAsWritten] = useState(false)
  const code = asWritten || str(js, 'beautified') === '' ? str(js, 'orig_code') : str(js, 'beautified')
  return (
    <div className="mb-2 rounded border border-zinc-200 dark:border-zinc-700">
      <label className="ml-2 text-xs">
        <input type="checkbox" className="mr-1" checked={asWritten} onChange={(e) => setAsWritten(e.target.checked)} />
        script {n} as written
      </label>
      <CodeBlock code={code} label={`JavaScript ${n}`} />
    </div>
  )
}

/** Source code in a scrolling block: its lines as lines, every other invisible character marked. */
function CodeBlock({ code, label }: { code: string; label: string }): JSX.Element {
  return (
    // Scrolls: focusable, so a keyboard can scroll it (axe: scrollable-region-focusable).
    <pre tabIndex={0} className="max-h-96 overflow-auto whitespace-pre-wrap break-all px-2 py-1 font-mono text-xs focus-visible:outline-2 focus-visible:outline-sky-500" aria-label={label}>
      {textOf(code, MACRO_CODE_SHOWN).split(/\r\n|\r|\n/).map((line, i) => (
        <span key={i}>{i > 0 && '\n'}<SafeText value={line} /></span>
      ))}
    </pre>
  )
}

const PDF_META = ['title', 'author', 'subject', 'creator', 'producer', 'creation', 'modification'] as const

/** static.pdf: each version of the document (Cuckoo 2.0.7's rows), or an older report's one object of counts. */
function PdfView({ pdf }: { pdf: unknown }): JSX.Element {
  if (!Array.isArray(pdf)) return <Section title="PDF"><Generic value={pdf} depth={1} /></Section>
  const rows = pdf.filter(isObj).slice(0, 64)
  return (
    <>
      {rows.map((r, i) => {
        const scripts = objs(r, 'javascript')
        const urls = strs(r, 'urls')
        const files = objs(r, 'attachments').map((a) => str(a, 'filename'))
        const title = rows.length > 1 ? `PDF, version ${num(r, 'version') ?? i}${i === 0 ? ' (original)' : ' (update)'}` : 'PDF'
        return (
          <Section key={i} title={title}>
            <KeyValues rows={[
              ['PDF version', str(r, 'pdf_version') && <Mono value={str(r, 'pdf_version')} />],
              ...PDF_META.map((k) => [fieldWords(k), str(r, k) && <SafeText value={textOf(str(r, k), 500)} />] as [string, JSX.Element | '']),
              ['Open action', str(r, 'openaction') && <Mono value={textOf(str(r, 'openaction'), 500)} />],
              ['Error', str(r, 'error') && <SafeText value={textOf(str(r, 'error'), 500)} />]
            ]} />
            {isObj(r.counts) && <div className="mt-2"><Generic value={r.counts} depth={1} /></div>}
            {urls.length > 0 && <div className="mt-2"><Tags values={urls} /></div>}
            {files.length > 0 && <p className="mt-2 text-sm">Embedded files: <Tags values={files} /></p>}
            <h4 className="mt-2 text-xs font-semibold uppercase text-zinc-600 dark:text-zinc-400">JavaScript ({scripts.length})</h4>
            {scripts.length === 0 ? <Empty>No JavaScript.</Empty> : scripts.slice(0, 256).map((js, k) => <PdfScript key={k} js={js} n={k + 1} />)}
          </Section>
        )
      })}
    </>
  )
}

function OfficeView({ office }: { office: Obj }): JSX.Element {
  const macros = objs(office, 'macros')
  const rest = Object.fromEntries(Object.entries(office).filter(([k]) => k !== 'macros'))
  return (
    <>
      <Section title="Office"><Generic value={rest} depth={1} /></Section>
      <Section title="Macros" count={macros.length}>
        {macros.length === 0 ? <Empty>No VBA macros.</Empty> : macros.slice(0, 256).map((m, i) => <MacroModule key={i} m={m} />)}
      </Section>
    </>
  )
}

const PE_OWN = new Set(['signature', 'pdb_path', 'imported_dll_count', 'peid_signatures', 'keys'])

export function StaticView({ report }: { report: unknown }): JSX.Element {
  const s = obj(report, 'static')
  const keys = Object.keys(s)
  const isPe = keys.some((k) => k.startsWith('pe_'))
  const strings = strs(report, 'strings')
  const fileUrls = strs(obj(obj(report, 'target'), 'file'), 'urls')
  const [allStrings, setAllStrings] = useState(false)
  return (
    <>
      {(keys.length === 0 || (keys.length === 1 && keys[0] === 'error')) && <NoStatic report={report} s={s} />}
      {isPe && <PeView s={s} />}
      {keys.filter((k) => !(isPe && (k.startsWith('pe_') || PE_OWN.has(k)))).map((k) => {
        const v = s[k]
        if (k === 'elf' && isObj(v)) return <ElfView key={k} elf={v} />
        if (k === 'office' && isObj(v)) return <OfficeView key={k} office={v} />
        if (k === 'pdf') return <PdfView key={k} pdf={v} />
        if (k === 'error' && keys.length === 1) return null
        return <Section key={k} title={fieldWords(k)}><Generic value={v} depth={1} /></Section>
      })}
      {fileUrls.length > 0 && (
        <Section title="URLs in the file" count={fileUrls.length}>
          <ul tabIndex={0} aria-label="URLs in the file (scrollable)" className="max-h-64 overflow-auto font-mono text-xs focus-visible:outline-2 focus-visible:outline-sky-500">
            {fileUrls.slice(0, 1000).map((u, i) => <li key={i} className="break-all"><SafeText value={textOf(u, 2048)} /></li>)}
          </ul>
        </Section>
      )}
      <Section title="Strings" count={strings.length}>
        {strings.length === 0 ? <Empty>No strings.</Empty> : (
          <>
            <ul tabIndex={0} aria-label="Strings (scrollable)" className="max-h-96 overflow-auto font-mono text-xs focus-visible:outline-2 focus-visible:outline-sky-500">
              {(allStrings ? strings.slice(0, 5000) : strings.slice(0, MAX_STRINGS)).map((x, i) => <li key={i} className="break-all"><SafeText value={textOf(x, 1024)} /></li>)}
            </ul>
            {!allStrings && strings.length > MAX_STRINGS && <button type="button" className="text-xs text-sky-700 underline dark:text-sky-400" onClick={() => setAllStrings(true)}>show {Math.min(strings.length, 5000) - MAX_STRINGS} more</button>}
          </>
        )}
      </Section>
    </>
  )
}
