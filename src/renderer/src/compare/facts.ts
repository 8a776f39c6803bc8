// What the Compare page compares of one report: a small, bounded digest of report.json (Aviary's,
// an older Aviary's or Cuckoo 2's), read defensively. The report comes from a hostile guest and
// from servers we do not control: every key may be missing or of another type, every list may be
// huge (a 100,000-process tree), every string long. So each list keeps at most MAX_ITEMS distinct
// entries (counting the rest), every string is cut, the process tree is walked with a stack, and
// the digest is all the page keeps: the report itself is let go once it is read (in a worker,
// facts.worker.ts, where the platform has one). Domains, addresses, HTTP requests, dropped files,
// and the files, command lines, mutexes and registry keys of the behavior summary are read by the
// one reader of indicators the task search uses (shared/report-indicators.ts), with its caps.
import { isObj, num, obj, objs, str, strs, textOf, type Obj } from '../report/model'
import { techniques, type Technique } from '../report/attack'
import { readIndicators, type Capped, type Indicators } from '../../../shared/report-indicators'

/** Distinct entries kept per list and side of the lists read here (the rest are counted, and the page says so). */
export const MAX_ITEMS = 20_000
/** Nodes of behavior.processtree walked (a guest can fork without end; the walk stops here). */
export const MAX_TREE_NODES = 1_000_000
const MAX_TEXT = 2000
const MAX_DETAILS = 20
/** Names shown of a process's ancestry (the first and the last ones of a deeper chain). */
const PATH_HEAD = 2
const PATH_TAIL = 6

export interface Signature { key: string; name: string; description: string; severity: number; ttps: Technique[]; marks: number }
export interface ProcessName { key: string; name: string; count: number }
export interface ProcessLine { key: string; name: string; commandLine: string; count: number; pids: number[] }
export interface ProcessPath { key: string; names: string[]; count: number }
export interface Domain { key: string; ips: string[] }
export interface Address { key: string; ports: string[] }
/** An IDS rule that alerted (report.suricata.alerts), by sid: how often, and on which destinations. */
export interface IdsAlert { key: string; sid: number; signature: string; severity: number; count: number; destinations: string[] }
export interface HttpRequest { key: string; method: string; url: string; statuses: string[]; sources: string[]; userAgent: string }
export interface DroppedFile { key: string; sha256: string; names: string[]; paths: string[]; size: number | null; type: string; count: number }
/** A file path, command line, mutex or registry key the run touched: compared by itself. */
export interface Touched { key: string }
/** A file's name (the last part of its path, or a dropped file's name), with the paths it was seen at. */
export interface FileName { key: string; paths: string[] }
/** One labelled value (a file's type, an imphash, an ELF header field). */
export interface Fact { key: string; value: string }
/** An entry of a set of static facts (a PE section, an import, a library), with what it holds. */
export interface SetItem { key: string; detail: string }
export interface FactSet { title: string; items: SetItem[]; dropped: number }

export interface ReportFacts {
  title: string
  score: number | null
  overview: Fact[]
  signatures: Signature[]
  techniques: Technique[]
  processCount: number
  processNames: ProcessName[]
  processLines: ProcessLine[]
  processPaths: ProcessPath[]
  domains: Domain[]
  addresses: Address[]
  http: HttpRequest[]
  idsAlerts: IdsAlert[]
  dropped: DroppedFile[]
  /** Paths the run opened, wrote, read, deleted, moved or loaded (with the dropped files' paths). */
  files: Touched[]
  fileNames: FileName[]
  /** Command lines the behavior summary names (and the flat process lists, where a report has them). */
  commands: Touched[]
  mutexes: Touched[]
  registryKeys: Touched[]
  staticFacts: Fact[]
  staticSets: FactSet[]
  /** What was left out to keep the digest bounded, in words. */
  capped: string[]
}

const cut = (s: string, max = MAX_TEXT): string => (s.length > max ? `${s.slice(0, max)}…` : s)

/** A map of distinct entries that keeps at most MAX_ITEMS and counts what it turned away. */
class Bag<T> {
  readonly map = new Map<string, T>()
  dropped = 0
  constructor(private readonly max = MAX_ITEMS) {}
  /** The entry for `key`: the existing one, a new one from `make`, or undefined when full. */
  at(key: string, make: () => T): T | undefined {
    const known = this.map.get(key)
    if (known !== undefined) return known
    if (this.map.size >= this.max) { this.dropped++; return undefined }
    const made = make()
    this.map.set(key, made)
    return made
  }
  values(): T[] { return [...this.map.values()] }
}

function noteCap(capped: string[], what: string, bag: Bag<unknown>): void {
  if (bag.dropped > 0) capped.push(`${what}: the first ${MAX_ITEMS.toLocaleString('en-US')} distinct entries are compared (${bag.dropped.toLocaleString('en-US')} more left out)`)
}

const scalar = (v: unknown, max = 300): string => (v === null || v === undefined ? '' : cut(textOf(v, max), max))

// ---- signatures

function signatureFacts(report: unknown, capped: string[]): { signatures: Signature[]; techniques: Technique[] } {
  const sigs = new Bag<Signature>()
  const ttps = new Bag<Technique>(1000)
  for (const s of objs(report, 'signatures')) {
    const name = cut(str(s, 'name'), 300)
    const description = cut(str(s, 'description'), 1000)
    const key = name || description
    if (key === '') continue
    const list = techniques(s.ttp)
    const severity = Math.min(3, Math.max(1, Math.round(num(s, 'severity') ?? 1)))
    const marks = num(s, 'markcount') ?? objs(s, 'marks').length
    const known = sigs.at(key, () => ({ key, name, description, severity, ttps: list, marks }))
    if (known !== undefined && known.severity < severity) known.severity = severity
    for (const t of list) {
      const seen = ttps.at(t.id, () => t)
      if (seen !== undefined && seen.name === '' && t.name !== '') ttps.map.set(t.id, t)
    }
  }
  noteCap(capped, 'Signatures', sigs)
  return { signatures: sigs.values(), techniques: ttps.values() }
}

// ---- processes

function children(n: Obj): Obj[] {
  return Array.isArray(n.children) ? n.children.filter(isObj) : []
}

const processName = (p: Obj): string => cut(str(p, 'process_name') || str(p, 'process_path').split(/[\\/]/).pop() || '(unknown)', 300)

interface ProcessBags { names: Bag<ProcessName>; lines: Bag<ProcessLine>; paths: Bag<ProcessPath> }

/** A process's ancestors as shown: the first names, how many are hidden, the last names. */
interface Ancestry { head: string[]; hidden: number; tail: string[] }
const NO_ANCESTRY: Ancestry = { head: [], hidden: 0, tail: [] }

function withName(a: Ancestry, name: string): Ancestry {
  if (a.head.length < PATH_HEAD) return { head: [...a.head, name], hidden: 0, tail: [] }
  const tail = [...a.tail, name]
  return tail.length > PATH_TAIL ? { head: a.head, hidden: a.hidden + 1, tail: tail.slice(1) } : { head: a.head, hidden: a.hidden, tail }
}

const pathNames = (a: Ancestry): string[] => [...a.head, ...(a.hidden > 0 ? [`… ${a.hidden} more …`] : []), ...a.tail]

function countProcess(b: ProcessBags, p: Obj, ancestry: Ancestry | null): void {
  const name = processName(p)
  const commandLine = cut(str(p, 'command_line'))
  const n = b.names.at(name, () => ({ key: name, name, count: 0 }))
  if (n !== undefined) n.count++
  const lineKey = `${name}\n${commandLine}`
  const l = b.lines.at(lineKey, () => ({ key: lineKey, name, commandLine, count: 0, pids: [] }))
  if (l !== undefined) {
    l.count++
    const pid = num(p, 'pid')
    if (pid !== null && l.pids.length < MAX_DETAILS) l.pids.push(pid)
  }
  if (ancestry !== null) {
    const names = pathNames(withName(ancestry, name))
    // The hidden count is part of the key: the same names at another depth are another place in the tree.
    const key = `${ancestry.hidden}\n${names.join('\n')}`
    const path = b.paths.at(key, () => ({ key, names, count: 0 }))
    if (path !== undefined) path.count++
  }
}

function processFacts(report: unknown, capped: string[]): Pick<ReportFacts, 'processCount' | 'processNames' | 'processLines' | 'processPaths'> {
  const b: ProcessBags = { names: new Bag(), lines: new Bag(), paths: new Bag() }
  const roots = objs(report, 'behavior', 'processtree')
  let count = 0
  if (roots.length > 0) {
    // Depth first with an explicit stack; siblings share their parent's ancestry, kept short (a
    // 5,000-deep chain must not make 5,000 arrays of 5,000 names).
    const stack: { node: Obj; ancestry: Ancestry }[] = roots.map((node) => ({ node, ancestry: NO_ANCESTRY })).reverse()
    while (stack.length > 0 && count < MAX_TREE_NODES) {
      const { node, ancestry } = stack.pop() as { node: Obj; ancestry: Ancestry }
      count++
      countProcess(b, node, ancestry)
      const kids = children(node)
      if (kids.length === 0) continue
      const next = withName(ancestry, processName(node))
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ node: kids[i] as Obj, ancestry: next })
    }
    if (stack.length > 0) capped.push(`Processes: the first ${MAX_TREE_NODES.toLocaleString('en-US')} of the tree are read`)
  } else {
    // No tree (an older or partial report): the flat lists, with no ancestry to compare.
    const list = objs(report, 'behavior', 'processes').length > 0 ? objs(report, 'behavior', 'processes') : objs(report, 'behavior', 'generic')
    for (const p of list.slice(0, MAX_TREE_NODES)) { count++; countProcess(b, p, null) }
  }
  noteCap(capped, 'Process names', b.names)
  noteCap(capped, 'Command lines', b.lines)
  noteCap(capped, 'Process tree', b.paths)
  return { processCount: count, processNames: b.names.values(), processLines: b.lines.values(), processPaths: b.paths.values() }
}

// ---- network and dropped files: the one reader of indicators (shared/report-indicators.ts), which the task search reads too

function noteList(capped: string[], what: string, list: Capped<unknown>): void {
  if (list.leftOut.size > 0) {
    capped.push(`${what}: the first ${list.cap.toLocaleString('en-US')} distinct entries are compared (${list.over ? 'over ' : ''}${list.leftOut.size.toLocaleString('en-US')} more left out)`)
  }
}

function networkFacts(ind: Indicators, capped: string[]): Pick<ReportFacts, 'domains' | 'addresses' | 'http'> {
  noteList(capped, 'Domains', ind.domains)
  noteList(capped, 'IP addresses', ind.addresses)
  noteList(capped, 'HTTP requests', ind.http)
  return {
    domains: ind.domains.values().map((d) => ({ key: cut(d.name, 300), ips: d.ips })),
    // Addresses a flow went to (an address only named in a DNS answer is the domain's).
    addresses: ind.addresses.values().filter((a) => a.contacted).map((a) => ({ key: cut(a.ip, 100), ports: a.ports })),
    http: ind.http.values().map((h) => ({ key: `${h.method} ${h.url}`, method: h.method, url: h.url, statuses: h.statuses, sources: h.sources, userAgent: h.userAgent }))
  }
}

function droppedFacts(ind: Indicators, capped: string[]): DroppedFile[] {
  noteList(capped, 'Dropped files', ind.dropped)
  return ind.dropped.values().map((d) => ({
    key: d.sha256 || `md5 ${d.md5}`, sha256: d.sha256, names: d.names, paths: d.paths, size: d.size, type: d.type, count: d.count
  }))
}

/** "C:\\Temp\\a.exe" → "a.exe", "/tmp/x/" → "x". */
const fileName = (p: string): string => p.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? ''

function touchedFacts(ind: Indicators, capped: string[]): Pick<ReportFacts, 'files' | 'fileNames' | 'commands' | 'mutexes' | 'registryKeys'> {
  noteList(capped, 'Files', ind.files)
  noteList(capped, 'Command lines run', ind.commands)
  noteList(capped, 'Mutexes', ind.mutexes)
  noteList(capped, 'Registry keys', ind.keys)
  const names = new Bag<FileName>()
  const named = (name: string, path: string): void => {
    const key = cut(name, 300)
    if (key.trim() === '') return
    const e = names.at(key, () => ({ key, paths: [] }))
    if (e !== undefined && path !== '') addTo(e.paths, path)
  }
  const files = ind.files.values()
  for (const f of files) named(fileName(f), f)
  for (const d of ind.dropped.values()) for (const n of d.names) named(n, d.paths[0] ?? '')
  noteCap(capped, 'File names', names)
  const touched = (list: Capped<string>): Touched[] => list.values().map((key) => ({ key }))
  return {
    files: files.map((key) => ({ key })), fileNames: names.values(),
    commands: touched(ind.commands), mutexes: touched(ind.mutexes), registryKeys: touched(ind.keys)
  }
}

// ---- static

const ELF_LABELS: Record<string, string> = {
  class: 'Class', data: 'Data encoding', os_abi: 'OS/ABI', abi_version: 'ABI version', type: 'Type', machine: 'Machine',
  version: 'Version', entry_point_address: 'Entry point', flags: 'Flags', number_of_program_headers: 'Program headers',
  number_of_section_headers: 'Section headers', start_of_section_headers: 'Section headers offset',
  start_of_program_headers: 'Program headers offset', size_of_this_header: 'Header size', magic: 'Magic', ei_version: 'Ident version',
  size_of_program_headers: 'Program header size', size_of_section_headers: 'Section header size',
  section_header_string_table_index: 'Section name table index'
}

/** "pe_imphash" → "imphash", "embedded_files" → "embedded files". */
const words = (k: string): string => k.replace(/^pe_/, '').replace(/_/g, ' ')

class StaticDigest {
  readonly facts: Fact[] = []
  readonly sets = new Map<string, Bag<SetItem>>()
  fact(key: string, v: unknown): void {
    const value = scalar(v)
    if (value !== '' && this.facts.length < 500) this.facts.push({ key, value })
  }
  item(title: string, key: string, detail = ''): void {
    if (key === '') return
    let bag = this.sets.get(title)
    if (bag === undefined) { bag = new Bag(); this.sets.set(title, bag) }
    const e = bag.at(cut(key, 1000), () => ({ key: cut(key, 1000), detail: cut(detail, 300) }))
    if (e && e.detail !== detail && detail !== '' && !e.detail.includes('…')) e.detail = cut(`${e.detail}; ${detail}`, 300)
  }
  /** A loosely shaped object (Cuckoo's and Aviary's pdf and office): scalars as facts, string lists as sets, other lists counted. */
  loose(prefix: string, o: Obj): void {
    for (const [k, v] of Object.entries(o).slice(0, 100)) {
      if (Array.isArray(v)) {
        if (v.every((x) => typeof x === 'string')) for (const x of v.slice(0, MAX_ITEMS)) this.item(`${prefix} ${words(k)}`, x as string)
        else this.fact(`${prefix} ${words(k)}`, `${v.length} entr${v.length === 1 ? 'y' : 'ies'}`)
      } else if (!isObj(v)) this.fact(`${prefix} ${words(k)}`, v)
    }
  }
}

function peFacts(s: Obj, d: StaticDigest): void {
  for (const k of ['pe_imphash', 'pe_timestamp', 'pe_machine', 'pe_is64', 'pe_entrypoint', 'pdb_path', 'pe_signed', 'imported_dll_count', 'pe_export_dll']) {
    if (s[k] !== undefined && s[k] !== null) d.fact(`PE ${words(k)}`, s[k])
  }
  if (isObj(s.pe_overlay)) d.fact('PE overlay', `${scalar(s.pe_overlay.size)} ${s.pe_overlay.size === 1 ? 'byte' : 'bytes'} at ${scalar(s.pe_overlay.offset)}`)
  const sig = s.signature
  if (Array.isArray(sig)) d.fact('PE signature', sig.length > 0 ? `present (${sig.length})` : 'none')
  else if (sig !== undefined && sig !== null && !isObj(sig)) d.fact('PE signature', sig)
  for (const x of objs(s, 'pe_sections')) {
    const e = num(x, 'entropy')
    d.item('PE sections', str(x, 'name') || '(no name)', `virtual ${scalar(x.virtual_size, 40)}, raw ${scalar(x.size_of_data, 40)}${e !== null ? `, entropy ${e.toFixed(2)}` : ''}`)
  }
  for (const [key, title] of [['pe_imports', 'PE imports'], ['pe_delay_imports', 'PE delay-load imports']] as const) {
    for (const lib of objs(s, key)) {
      const dll = str(lib, 'dll').toLowerCase()
      const fns = objs(lib, 'imports')
      if (fns.length === 0) d.item(title, dll)
      for (const f of fns) d.item(title, `${dll}!${str(f, 'name') || `#${scalar(f.ordinal, 20) || '?'}`}`)
    }
  }
  for (const x of objs(s, 'pe_exports')) d.item('PE exports', str(x, 'name') || `#${scalar(x.ordinal, 20) || '?'}`)
  for (const r of objs(s, 'pe_resources')) d.item('PE resources', `${str(r, 'name')} ${str(r, 'filetype')}`.trim(), scalar(r.language, 100))
  for (const v of objs(s, 'pe_versioninfo')) if (str(v, 'name')) d.fact(`Version ${cut(str(v, 'name'), 100)}`, v.value)
  for (const p of strs(s, 'peid_signatures')) d.item('PEiD signatures', p)
}

function elfFacts(elf: Obj, d: StaticDigest): void {
  const header = Object.keys(obj(elf, 'file_header')).length > 0 ? obj(elf, 'file_header') : obj(elf, 'header')
  for (const [k, v] of Object.entries(header).slice(0, 60)) if (!isObj(v) && !Array.isArray(v)) d.fact(`ELF ${ELF_LABELS[k] ?? words(k)}`, v)
  for (const lib of [...strs(elf, 'libraries'), ...strs(elf, 'needed')]) d.item('ELF libraries', lib)
  // Cuckoo 2.0.7 has no `libraries`: its DT_NEEDED entries read "Shared library: [libc.so.6]".
  for (const t of objs(elf, 'dynamic_tags')) {
    if (!/NEEDED/i.test(str(t, 'type'))) continue
    const m = /\[([^\]]*)\]/.exec(str(t, 'value'))
    d.item('ELF libraries', m?.[1] ?? str(t, 'value'))
  }
  for (const x of objs(elf, 'section_headers')) d.item('ELF sections', str(x, 'name') || '(no name)', `${str(x, 'type')} ${scalar(x.size, 40)}`.trim())
  if (num(elf, 'symbols') !== null) d.fact('ELF symbols', num(elf, 'symbols'))
}

function staticFacts(report: unknown, capped: string[]): Pick<ReportFacts, 'staticFacts' | 'staticSets'> {
  const d = new StaticDigest()
  const target = obj(report, 'target')
  const file = obj(target, 'file')
  d.fact('Category', target.category)
  d.fact('URL', target.url)
  d.fact('File name', file.name)
  d.fact('File type', file.type)
  d.fact('Size', file.size)
  for (const h of ['md5', 'sha1', 'sha256', 'sha512', 'ssdeep', 'crc32']) d.fact(h === 'ssdeep' ? 'ssdeep' : h.toUpperCase(), file[h])
  for (const y of objs(file, 'yara')) d.item('YARA rules', str(y, 'name'), str(obj(y, 'meta'), 'description'))
  const s = obj(report, 'static')
  if (Object.keys(s).some((k) => k.startsWith('pe_'))) peFacts(s, d)
  if (isObj(s.elf)) elfFacts(s.elf, d)
  const pdf = Array.isArray(s.pdf) ? s.pdf.filter(isObj) : isObj(s.pdf) ? [s.pdf] : []
  pdf.slice(0, 10).forEach((p, i) => {
    const prefix = pdf.length > 1 ? `PDF (${i + 1})` : 'PDF'
    d.loose(prefix, p)
    if (isObj(p.counts)) d.loose(`${prefix} count of`, p.counts)
    for (const js of objs(p, 'javascript').slice(0, MAX_ITEMS)) {
      const code = str(js, 'orig_code')
      d.item(`${prefix} JavaScript`, cut(code.replace(/\s+/g, ' '), 120), `${code.length} characters`)
    }
  })
  if (isObj(s.office)) {
    d.loose('Office', s.office)
    // The VBA modules by name, with their size: the same module changed shows as a different size.
    for (const m of objs(s.office, 'macros').slice(0, MAX_ITEMS)) {
      const code = str(m, 'orig_code')
      const lines = code === '' ? 0 : code.split(/\r\n|\r|\n/).length
      d.item('Office macro modules', str(m, 'filename'), `${lines} line${lines === 1 ? '' : 's'}, ${code.length} characters`)
    }
  }
  for (const k of ['lnk', 'wsf']) if (isObj(s[k])) d.loose(k.toUpperCase(), s[k])
  if (isObj(s.archive)) {
    d.fact('Archive type', s.archive.type)
    d.fact('Archive members', s.archive.count)
    for (const e of objs(s.archive, 'entries')) d.item('Archive members', str(e, 'name'), num(e, 'size') !== null ? `${num(e, 'size')} ${num(e, 'size') === 1 ? 'byte' : 'bytes'}` : '')
  }
  d.fact('Static analysis error', s.error)
  for (const x of strs(report, 'strings').slice(0, 5000)) d.item('Strings', cut(x, 1024))
  const sets: FactSet[] = []
  for (const [title, bag] of d.sets) {
    sets.push({ title, items: bag.values(), dropped: bag.dropped })
    noteCap(capped, title, bag)
  }
  return { staticFacts: d.facts, staticSets: sets }
}

// ---- the IDS

/** Adds a detail to a short list once (at most MAX_DETAILS). */
const addTo = (list: string[], v: string): void => { if (v !== '' && list.length < MAX_DETAILS && !list.includes(v)) list.push(v) }

function idsFacts(report: unknown, capped: string[]): IdsAlert[] {
  const bag = new Bag<IdsAlert>()
  for (const a of objs(obj(report, 'suricata'), 'alerts')) {
    const sid = num(a, 'sid')
    if (sid === null) continue
    const e = bag.at(String(sid), () => ({ key: String(sid), sid, signature: cut(str(a, 'signature'), 300), severity: num(a, 'severity') ?? 3, count: 0, destinations: [] }))
    if (e === undefined) continue
    e.count++
    const port = num(a, 'dst_port')
    addTo(e.destinations, `${str(a, 'dst_ip')}${port !== null ? `:${port}` : ''}`)
  }
  noteCap(capped, 'IDS alerts', bag)
  return bag.values()
}

// ---- the whole digest

function overviewFacts(report: unknown, f: Pick<ReportFacts, 'signatures' | 'processCount' | 'dropped'>): Fact[] {
  const info = obj(report, 'info')
  const out: Fact[] = []
  const add = (key: string, v: unknown) => { const value = scalar(v); if (value !== '') out.push({ key, value }) }
  add('Score', num(info, 'score'))
  add('Signatures', f.signatures.length)
  add('Processes', f.processCount)
  add('Dropped files', f.dropped.length)
  const m = info.machine
  add('Machine', isObj(m) ? str(m, 'name') || str(m, 'label') : m)
  add('Platform', info.platform)
  add('Package', info.package)
  add('Route', info.route)
  add('Duration (s)', num(info, 'duration'))
  add('Sandbox version', info.version)
  return out
}

export function reportTitle(report: unknown): string {
  const target = obj(report, 'target')
  return cut(str(obj(target, 'file'), 'name') || str(target, 'human') || str(target, 'url') || '', 500)
}

/** The digest of one report.json (any origin, any shape). Never throws. */
export function reportFacts(report: unknown): ReportFacts {
  const capped: string[] = []
  const sig = signatureFacts(report, capped)
  const proc = processFacts(report, capped)
  const ind = readIndicators(report)
  const net = networkFacts(ind, capped)
  const dropped = droppedFacts(ind, capped)
  const touched = touchedFacts(ind, capped)
  const stat = staticFacts(report, capped)
  return {
    title: reportTitle(report),
    score: num(obj(report, 'info'), 'score'),
    overview: overviewFacts(report, { signatures: sig.signatures, processCount: proc.processCount, dropped }),
    ...sig, ...proc, ...net, idsAlerts: idsFacts(report, capped), dropped, ...touched, ...stat, capped
  }
}
