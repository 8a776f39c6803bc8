// The rule sets the IDS step loads, in this order: the protocol-event rules Debian's suricata
// package ships (/etc/suricata/rules), Aviary's own small file (resources/suricata/aviary.rules),
// and the sets the user imported (`aviary rules import`, the API, the UI) into
// <data>/suricata/rules/<name>/ — an ET Open or ET Pro tarball's rules/*.rules, or one .rules
// file. No rule set is fetched from the network: suricata-update's sources are not reachable from
// an analysis workstation that must not talk to the internet, so the user brings them.
//
// A tarball is read entry by entry (tar-stream), never unpacked onto the disk: only regular files
// whose name ends in .rules are kept, under their base name, so a hostile archive cannot write
// outside the set's folder.
import { closeSync, createReadStream, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createGunzip } from 'node:zlib'
import { pipeline } from 'node:stream/promises'
import { Readable } from 'node:stream'
import { extract } from 'tar-stream'
import { MAX_IMPORT_BYTES, MAX_IMPORT_FILES, RuleImportError, RULES_DIR } from './settings'

export interface RuleSet {
  /** `bundled`, `aviary`, or the imported set's name. */
  name: string
  kind: 'bundled' | 'aviary' | 'imported'
  /** The rule files, absolute paths. */
  files: string[]
  /** Enabled rules (lines that start with an action, not commented out). */
  rules: number
  /** When the set was made: its files' newest modification, or the import's time (epoch ms). */
  updated: number
  /** What it was imported from (the file's name), for imported sets. */
  source: string | null
}

const SET_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/
const RESERVED = new Set(['bundled', 'aviary'])
const ACTION = /^\s*(alert|drop|pass|reject|rejectsrc|rejectdst|rejectboth)\s/
/** An imported set's own record, next to its files. */
const SET_META = 'set.json'
export { MAX_IMPORT_BYTES, MAX_IMPORT_FILES, RuleImportError } from './settings'

/** Aviary's own rule file, next to the bundle (out/cli → resources) or the sources. */
export function aviaryRulesFile(): string {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const candidates = [path.resolve(here, '../../resources/suricata/aviary.rules'), path.resolve(here, '../../../../resources/suricata/aviary.rules'),
    path.resolve(here, '../../../resources/suricata/aviary.rules'), path.resolve('resources/suricata/aviary.rules')]
  return candidates.find((f) => existsSync(f)) ?? candidates[0]!
}

/** Enabled rules in a rule file's text. */
export function countRules(text: string): number {
  let n = 0
  for (const line of text.split('\n')) if (ACTION.test(line)) n++
  return n
}

function describeFiles(files: string[]): { rules: number; updated: number } {
  let rules = 0
  let updated = 0
  for (const f of files) {
    try {
      rules += countRules(readFileSync(f, 'utf8'))
      updated = Math.max(updated, statSync(f).mtimeMs)
    } catch { /* a file that went away counts for nothing */ }
  }
  return { rules, updated }
}

const rulesIn = (dir: string): string[] => {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith('.rules')).map((e) => path.join(dir, e.name)).sort()
  } catch {
    return []
  }
}

/** Every set the step would load now; `suricataDir` is <data>/suricata, or null for none imported. */
export function listRuleSets(suricataDir: string | null, o: { bundledRules: string | null; aviaryRules?: string }): RuleSet[] {
  const sets: RuleSet[] = []
  if (o.bundledRules !== null) {
    const files = rulesIn(o.bundledRules)
    if (files.length > 0) sets.push({ name: 'bundled', kind: 'bundled', files, ...describeFiles(files), source: null })
  }
  const own = o.aviaryRules ?? aviaryRulesFile()
  if (existsSync(own)) sets.push({ name: 'aviary', kind: 'aviary', files: [own], ...describeFiles([own]), source: null })
  if (suricataDir !== null) {
    const root = path.join(suricataDir, RULES_DIR)
    let names: string[] = []
    try {
      names = readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory() && SET_NAME.test(e.name) && !e.name.startsWith('.')).map((e) => e.name).sort()
    } catch { /* no imported set */ }
    for (const name of names) {
      const files = rulesIn(path.join(root, name))
      let meta: { imported?: unknown; source?: unknown } = {}
      try { meta = JSON.parse(readFileSync(path.join(root, name, SET_META), 'utf8')) as typeof meta } catch { /* counted from the files */ }
      const d = describeFiles(files)
      sets.push({ name, kind: 'imported', files, rules: d.rules, updated: typeof meta.imported === 'number' ? meta.imported : d.updated,
        source: typeof meta.source === 'string' ? meta.source : null })
    }
  }
  return sets
}

/** The set name an import gets by default: the file's name without its extensions (emerging.rules.tar.gz → emerging). */
export function defaultSetName(file: string): string {
  const base = path.basename(file).replace(/(\.tar)?\.(gz|tgz)$/i, '').replace(/\.(tar|rules)$/i, '').replace(/\.rules$/i, '')
  const clean = base.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64)
  return clean === '' ? 'imported' : clean
}

export function checkSetName(name: string): string {
  if (!SET_NAME.test(name)) throw new RuleImportError(`name: '${name.slice(0, 80)}' is not a rule set name (letters, digits, _ . -, at most 64)`)
  if (RESERVED.has(name)) throw new RuleImportError(`name: '${name}' is the name of a built-in set`)
  return name
}

/** Reads the .rules files of a tarball (gzip or not) or takes one .rules file: name → text. */
async function readRuleFiles(input: Buffer | string, fileName: string): Promise<Map<string, Buffer>> {
  const open = (): Readable => (typeof input === 'string' ? createReadStream(input) : Readable.from([input]))
  const head = typeof input === 'string' ? readHead(input) : input.subarray(0, 512)
  const gz = head[0] === 0x1f && head[1] === 0x8b
  const isTar = gz || (head.length >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar')
  const out = new Map<string, Buffer>()
  if (!isTar) {
    if (!/\.rules$/i.test(fileName)) throw new RuleImportError('file: neither a .tar.gz/.tar of rules nor a .rules file')
    const text = typeof input === 'string' ? readFileSync(input) : input
    if (text.length > MAX_IMPORT_BYTES) throw new RuleImportError('file: larger than 256 MiB')
    out.set(path.basename(fileName).replace(/[^A-Za-z0-9_.-]+/g, '-'), text)
    return out
  }
  const tar = extract()
  let total = 0
  const done = new Promise<void>((resolve, reject) => {
    tar.on('entry', (header, stream, next) => {
      const base = path.posix.basename(header.name)
      const keep = header.type === 'file' && base.endsWith('.rules') && !base.startsWith('.') && /^[A-Za-z0-9_.-]+$/.test(base)
      const chunks: Buffer[] = []
      stream.on('data', (chunk: unknown) => {
        const c = chunk as Buffer
        if (!keep) return
        total += c.length
        if (total > MAX_IMPORT_BYTES) { reject(new RuleImportError('file: its rule files are larger than 256 MiB together')); tar.destroy(); return }
        chunks.push(c)
      })
      stream.on('end', () => {
        if (keep) {
          if (out.size >= MAX_IMPORT_FILES && !out.has(base)) { reject(new RuleImportError(`file: more than ${MAX_IMPORT_FILES} rule files`)); tar.destroy(); return }
          out.set(base, Buffer.concat(chunks))
        }
        next()
      })
      stream.resume()
    })
    tar.on('finish', resolve)
    tar.on('error', (e: Error) => reject(new RuleImportError(`file: not a readable tar archive (${e.message})`)))
  })
  const piped = gz ? pipeline(open(), createGunzip(), tar) : pipeline(open(), tar)
  await Promise.all([
    piped.catch((e: Error) => { throw e instanceof RuleImportError ? e : new RuleImportError(`file: not a readable archive (${e.message})`) }),
    done
  ])
  return out
}

function readHead(file: string): Buffer {
  const fd = openSync(file, 'r')
  try {
    const b = Buffer.alloc(512)
    return b.subarray(0, readSync(fd, b, 0, 512, 0))
  } finally {
    closeSync(fd)
  }
}

export interface ImportResult { set: RuleSet; replaced: boolean }

/**
 * Imports a rule set into <data>/suricata/rules/<name>/, replacing a set of that name (a newer
 * download of the same set) only with `replace`. The new files are written beside and swapped in
 * by one rename, so the step never loads a half-written set.
 */
export async function importRuleSet(suricataDir: string, input: Buffer | string, o: { fileName: string; name?: string; replace?: boolean; now?: number }): Promise<ImportResult> {
  const name = checkSetName(o.name ?? defaultSetName(o.fileName))
  const files = await readRuleFiles(input, o.fileName)
  let rules = 0
  for (const text of files.values()) rules += countRules(text.toString('utf8'))
  if (files.size === 0 || rules === 0) throw new RuleImportError('file: holds no rules (an ET tarball has rules/*.rules)')
  const root = path.join(suricataDir, RULES_DIR)
  const dest = path.join(root, name)
  const exists = existsSync(dest)
  if (exists && o.replace !== true) throw new RuleImportError(`name: a rule set named '${name}' exists (replace it, or give another name)`)
  await mkdir(root, { recursive: true })
  const staging = path.join(root, `.import-${process.pid}-${Date.now()}`)
  await mkdir(staging)
  try {
    for (const [base, text] of files) await writeFile(path.join(staging, base), text)
    await writeFile(path.join(staging, SET_META), JSON.stringify({ imported: o.now ?? Date.now(), source: path.basename(o.fileName) }) + '\n')
    if (exists) await rm(dest, { recursive: true, force: true })
    await rename(staging, dest)
  } catch (err) {
    await rm(staging, { recursive: true, force: true })
    throw err
  }
  const set = listRuleSets(suricataDir, { bundledRules: null, aviaryRules: '' }).find((s) => s.name === name)
  if (set === undefined) throw new Error(`rule set ${name} vanished after its import`)
  return { set, replaced: exists }
}

/** Removes an imported set; false when there is none of that name. */
export async function removeRuleSet(suricataDir: string, name: string): Promise<boolean> {
  checkSetName(name)
  const dest = path.join(suricataDir, RULES_DIR, name)
  if (!existsSync(dest)) return false
  await rm(dest, { recursive: true, force: true })
  return true
}
