// YARA over the files of an analysis (sample, dropped files, memory dumps) with the rules of a
// folder the user controls.
//
// Engine: the Debian `yara` tool (4.2.3): `yarac` compiles the folder's rules once (cached by
// the rule files' path, size and mtime), one `yara -C` process scans every file of the task
// (--scan-list). Measured against YARA-X through @litko/yara-x (bench/yara.bench.mjs, 20 rules,
// random data, best of 3, 2026-11-23 on this 2-core host):
//   100 MB: YARA-X 1.75 s total (0.45 s compile, 1.09 s scan), `yara -s -w` 0.70 s
//   1 GB:   YARA-X 11.4 s (88 MB/s), `yara` 5.65 s (177 MB/s); same rules matched by both.
// The tool scans 1.3x (common rules) to 2x (xor / wildcard-heavy rules) faster, which matters for
// multi-GB memory dumps, and @litko/yara-x 0.3.0 cannot be installed with `npm ci` (its lock
// entries name platform packages the registry does not have). Both map files into memory: a
// memory dump never enters the JS heap.
//
// Report shape as Cuckoo 2 (cuckoo/common/objects.py File.get_yara): `strings` are the distinct
// matched byte strings, base64-encoded and sorted; `offsets` maps each identifier (without `$`)
// to [offset, index into strings] pairs; meta gets a default description. Matched bytes are read
// back from the file (the tool prints them escaped and cut).
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { rmSync } from 'node:fs'
import { mkdtemp, open, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import type { YaraMatch } from '../types.js'

/** A rule file that does not compile: names the file and the line. */
export class YaraRulesError extends Error {
  constructor(readonly file: string, readonly line: number | null, readonly column: number | null, detail: string) {
    super(`YARA rules: ${file}${line === null ? '' : `:${line}`}${column === null ? '' : `:${column}`}: ${detail}`)
    this.name = 'YaraRulesError'
  }
}

/** Matches printed per rule and file (the tool's --max-strings-per-rule). */
export const MAX_MATCHES_PER_PATTERN = 10_000
/** Offsets and strings kept in the report per identifier. */
const REPORT_OFFSETS_PER_ID = 16
const REPORT_BYTES_PER_STRING = 1024
const SCAN_TIMEOUT_S = 600

interface RuleSet {
  key: string
  compiled: string
}

const cache = new Map<string, RuleSet>()
let workDir: Promise<string> | null = null

/**
 * The process's folder for compiled rules and scan lists (aviary-yara-<pid>-*), made on first use
 * and removed when the process exits. Each service run and each test worker made one that stayed in
 * /tmp for good; a process killed with SIGKILL still leaves its own, so the next one made removes
 * those whose process is gone.
 */
function yaraWorkDir(): Promise<string> {
  workDir ??= (async () => {
    const tmp = tmpdir()
    for (const name of await readdir(tmp).catch(() => [] as string[])) {
      const pid = Number(/^aviary-yara-(\d+)-/.exec(name)?.[1])
      if (pid > 0 && pid !== process.pid && !alive(pid)) await rm(join(tmp, name), { recursive: true, force: true }).catch(() => undefined)
    }
    const dir = await mkdtemp(join(tmp, `aviary-yara-${process.pid}-`))
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    return dir
  })()
  return workDir
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' // someone else's process
  }
}

function run(cmd: string, args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 256 * 1024 * 1024, encoding: 'latin1' }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0
      if (err && code === -1) {
        reject(new Error(`${cmd}: ${(err as Error).message}${(err as { code?: unknown }).code === 'ENOENT' ? ' (install the yara package)' : ''}`))
        return
      }
      resolve({ stdout, stderr, code })
    })
  })
}

async function ruleFiles(dir: string, depth = 0): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
  const out: string[] = []
  for (const e of entries) {
    const path = join(dir, e.name)
    if (e.isDirectory() && depth < 4) out.push(...(await ruleFiles(path, depth + 1)))
    else if (e.isFile() && /\.(yar|yara)$/i.test(e.name)) out.push(path)
  }
  return out.sort()
}

/** Compiles every .yar/.yara of `rulesDir` (cached while no rule file changes). Null when there are none. */
export async function loadRules(rulesDir: string | null): Promise<RuleSet | null> {
  if (rulesDir === null) return null
  const files = await ruleFiles(rulesDir)
  if (files.length === 0) return null
  const stamps = await Promise.all(files.map(async (f) => {
    const s = await stat(f)
    return `${f}\0${s.size}\0${s.mtimeMs}`
  }))
  const key = stamps.join('\n')
  const cached = cache.get(rulesDir)
  if (cached?.key === key) return cached
  const compiled = join(await yaraWorkDir(), `${createHash('sha256').update(key).digest('hex').slice(0, 16)}.yarc`)
  const r = await run('yarac', ['-w', ...files, compiled])
  if (r.code !== 0) {
    // yarac: `error: rule "x" in <file>(<line>): <message>` or `error: <file>(<line>): <message>`
    const m = /^error: (?:rule "[^"]*" in )?(.*)\((\d+)\): (.*)$/m.exec(r.stderr)
    if (m) throw new YaraRulesError(relative(rulesDir, m[1] ?? ''), Number(m[2]), null, m[3] ?? 'error')
    throw new YaraRulesError('.', null, null, r.stderr.trim().split('\n')[0] ?? `yarac exited with ${r.code}`)
  }
  const set: RuleSet = { key, compiled }
  cache.set(rulesDir, set)
  return set
}

/** `key="text",n=3,flag=true` as the tool prints meta (strings with C escapes). */
export function parseMeta(text: string): Record<string, string | number | boolean> {
  const meta: Record<string, string | number | boolean> = {}
  // yara 4.2 prints integers as `key =7`, with a space.
  const re = /([A-Za-z_][A-Za-z0-9_]*)\s*=(?:"((?:[^"\\]|\\.)*)"|(-?\d+)|(true|false))(?:,|$)/g
  for (const m of text.matchAll(re)) {
    const k = m[1] ?? ''
    if (m[2] !== undefined) meta[k] = m[2].replace(/\\x([0-9a-fA-F]{2})|\\(.)/g, (_, hex: string | undefined, c: string | undefined) =>
      hex !== undefined ? String.fromCharCode(parseInt(hex, 16)) : c === 'n' ? '\n' : c === 't' ? '\t' : (c ?? ''))
    else if (m[3] !== undefined) meta[k] = Number(m[3])
    else meta[k] = m[4] === 'true'
  }
  return meta
}

interface Hit { rule: string; meta: Record<string, string | number | boolean>; strings: { id: string; offset: number; length: number }[] }

/** The tool's output for many files: `rule [meta] path` lines, each followed by `0xOFF:LEN:$id: data` lines. */
function parseOutput(stdout: string, files: Set<string>): Map<string, Hit[]> {
  const out = new Map<string, Hit[]>()
  let current: Hit | null = null
  for (const line of stdout.split('\n')) {
    const s = /^0x([0-9a-f]+):(\d+):\$([A-Za-z0-9_]*): /.exec(line)
    if (s && current) {
      current.strings.push({ id: s[3] ?? '', offset: parseInt(s[1] ?? '0', 16), length: Number(s[2]) })
      continue
    }
    const h = /^([A-Za-z_][A-Za-z0-9_]*) \[(.*)\] (.+)$/.exec(line)
    // The path is the part after the meta; meta may hold "] " itself, so the known paths decide.
    if (!h) continue
    const path = [...files].find((f) => line.endsWith(` ${f}`))
    if (path === undefined) continue
    const metaText = line.slice((h[1] ?? '').length + 2, line.length - path.length - 2)
    current = { rule: h[1] ?? '', meta: parseMeta(metaText), strings: [] }
    let list = out.get(path)
    if (!list) out.set(path, (list = []))
    list.push(current)
  }
  return out
}

async function toReport(path: string, hits: Hit[]): Promise<YaraMatch[]> {
  const fh = await open(path, 'r')
  try {
    const out: YaraMatch[] = []
    for (const m of hits) {
      const kept = new Map<string, { offset: number; b64: string }[]>()
      for (const hit of m.strings) {
        let list = kept.get(hit.id)
        if (list === undefined) kept.set(hit.id, (list = []))
        if (list.length >= REPORT_OFFSETS_PER_ID) continue
        const bytes = Buffer.alloc(Math.min(hit.length, REPORT_BYTES_PER_STRING))
        const { bytesRead } = await fh.read(bytes, 0, bytes.length, hit.offset)
        list.push({ offset: hit.offset, b64: bytes.subarray(0, bytesRead).toString('base64') })
      }
      const strings = [...new Set([...kept.values()].flat().map((k) => k.b64))].sort()
      const offsets: Record<string, [number, number][]> = {}
      for (const [id, list] of kept) offsets[id] = list.map((k): [number, number] => [k.offset, strings.indexOf(k.b64)])
      out.push({ name: m.rule, meta: { description: '(no description)', ...m.meta }, strings, offsets })
    }
    return out
  } finally {
    await fh.close()
  }
}

/**
 * Scans each file with the rules of `rulesDir`. Every input path gets an entry: [] when nothing
 * matched, the file is empty or cannot be read. No rules folder (or no rule files) → all empty.
 * A rule file that does not compile → YaraRulesError naming the file and line.
 */
export async function yaraScan(files: string[], rulesDir: string | null): Promise<Map<string, YaraMatch[]>> {
  const result = new Map<string, YaraMatch[]>(files.map((f) => [f, []]))
  const rules = await loadRules(rulesDir)
  if (rules === null) return result
  const scan: string[] = []
  for (const file of new Set(files)) {
    const size = await stat(file).then((s) => (s.isFile() ? s.size : 0), () => 0)
    if (size > 0) scan.push(file)
  }
  // One process for every file with a listable name; a name with a line break is scanned alone.
  const listable = scan.filter((f) => !/[\r\n]/.test(f))
  const batches: string[][] = [listable, ...scan.filter((f) => /[\r\n]/.test(f)).map((f) => [f])]
  for (const batch of batches) {
    if (batch.length === 0) continue
    const args = ['-C', '-w', '-m', '-s', '-L', '-N', '-a', String(SCAN_TIMEOUT_S), `--max-strings-per-rule=${MAX_MATCHES_PER_PATTERN}`, rules.compiled]
    let list: string | null = null
    if (batch.length === 1) {
      args.push(batch[0]!)
    } else {
      list = join(await yaraWorkDir(), `scan-${process.pid}-${Date.now()}.txt`)
      await writeFile(list, batch.join('\n') + '\n')
      args.push('--scan-list', list)
    }
    try {
      const r = await run('yara', args)
      const hits = parseOutput(Buffer.from(r.stdout, 'latin1').toString('utf8'), new Set(batch))
      for (const [file, h] of hits) result.set(file, await toReport(file, h))
    } finally {
      if (list) await rm(list, { force: true })
    }
  }
  return result
}
