// The report keys that list what a run left in the analysis folder, as Cuckoo 2's processing
// modules do: `dropped` (files/ and package_files/, with the guest path and pids from files.json),
// `buffer` (buffer/<sha1>, what Cuckoo's monitor captured), `extracted` (Cuckoo's extractor's
// scripts and configs: Aviary has none, so always empty), `screenshots` (shots/NNNN.jpg, thumbnails
// left out), `procmemory` (memory/<pid>-<n>.dmp), the full memory dump, and `debug` (analysis.log
// and the task's errors). Everything here was written by the guest: names are only listed, never
// used to reach outside the folder.
import { createReadStream } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import path from 'node:path'
import { createInterface } from 'node:readline'
import type { FileTypeDetector } from '../hashing/magic'
import type { FileHashing } from '../hashing/file-digest'
import { filesInfo, type DroppedFile, type FileInfo } from './file-info'
import { Closed, Type, type Static } from './schema'
import { YaraMatchSchema } from './types'
import { boundedLines } from './behavior/bounded-lines'
import { ARTIFACTS, artifactPath } from '../storage/layout'
import { MemoryRegionSchema, readProcessDump } from './procmemory'
import { MemoryTriageSchema } from './memory-triage'
import { VolatilitySchema } from './volatility'

const YaraList = Type.Array(YaraMatchSchema)

/** Cuckoo lists every dropped file; a hostile guest can drop millions. */
export const MAX_DROPPED = 10_000
export const MAX_LOG_LINES = 100_000

export type { DroppedFile } from './file-info'

async function regularFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[])
  const out: string[] = []
  for (const name of names.sort()) {
    const st = await lstat(path.join(dir, name)).catch(() => null)
    if (st?.isFile()) out.push(name)
  }
  return out
}

/** files.json: one `{"path","filepath","pids"}` line per FILE 2 upload (the result server writes it). */
async function uploadsIndex(dir: string): Promise<Map<string, { filepath: string | null; pids: number[] }>> {
  const index = new Map<string, { filepath: string | null; pids: number[] }>()
  const stream = createReadStream(artifactPath(dir, ARTIFACTS.filesJson), 'utf8')
  try {
    for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
      let e: { path?: unknown; filepath?: unknown; pids?: unknown }
      try {
        e = JSON.parse(line) as typeof e
      } catch {
        continue
      }
      if (typeof e.path !== 'string') continue
      const pids = Array.isArray(e.pids) ? e.pids.filter((p): p is number => Number.isInteger(p)) : []
      index.set(e.path, { filepath: typeof e.filepath === 'string' ? e.filepath : null, pids })
    }
  } catch {
    /* no files.json: no FILE 2 uploads */
  }
  return index
}

/** Caps on reading the guest's file records for the other paths of a dropped content. */
const MAX_RECORD_LINE = 64 * 1024
const MAX_RECORD_LINES = 1_000_000
const MAX_PATHS_PER_CONTENT = 100

/**
 * Aviary's analyzer uploads a content once however many paths it was written to, and records each
 * path with its sha256 in logs/behavior.jsonl: sha256 → the paths (in order) with their writers.
 * Read with a bound on each line and on the count; a record of any other shape is skipped.
 */
async function pathsByContent(dir: string): Promise<Map<string, Map<string, number[]>>> {
  const out = new Map<string, Map<string, number[]>>()
  let n = 0
  try {
    for await (const raw of boundedLines(artifactPath(dir, ARTIFACTS.behaviorLog), MAX_RECORD_LINE, () => undefined)) {
      if (++n > MAX_RECORD_LINES) break
      let r: { type?: unknown; op?: unknown; path?: unknown; sha256?: unknown; pid?: unknown }
      try {
        r = JSON.parse(Buffer.from(raw, 'latin1').toString('utf8')) as typeof r
      } catch {
        continue
      }
      if (r === null || typeof r !== 'object' || r.type !== 'file' || r.op === 'deleted') continue
      if (typeof r.path !== 'string' || r.path === '' || typeof r.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(r.sha256)) continue
      let paths = out.get(r.sha256)
      if (paths === undefined) out.set(r.sha256, (paths = new Map()))
      let pids = paths.get(r.path)
      if (pids === undefined) {
        if (paths.size >= MAX_PATHS_PER_CONTENT) continue
        paths.set(r.path, (pids = []))
      }
      if (Number.isInteger(r.pid) && !pids.includes(r.pid as number)) pids.push(r.pid as number)
    }
  } catch {
    /* no behavior.jsonl (a Cuckoo analyzer): each file once, as uploaded */
  }
  return out
}

export async function droppedFiles(dir: string, detectType: FileTypeDetector, log: (m: string) => void, hashing?: FileHashing): Promise<DroppedFile[]> {
  const index = await uploadsIndex(dir)
  const others = await pathsByContent(dir)
  const names: { folder: typeof ARTIFACTS.dropped | typeof ARTIFACTS.packageFiles; name: string }[] = []
  for (const folder of [ARTIFACTS.dropped, ARTIFACTS.packageFiles]) {
    for (const name of await regularFiles(artifactPath(dir, folder))) names.push({ folder, name })
  }
  // Every file gives at least one entry, so the cap is reached within the first MAX_DROPPED files:
  // only those are read, all together (their types batched).
  const infos = await filesInfo(names.slice(0, MAX_DROPPED).map(({ folder, name }) => (
    { path: artifactPath(dir, folder, name), name: name.replace(/^[0-9a-f]{16}_/, '') })), detectType, hashing)
  const out: DroppedFile[] = []
  for (const [k, { folder, name }] of names.entries()) {
    if (out.length >= MAX_DROPPED) {
      log(`more than ${MAX_DROPPED} dropped files: the rest are not in the report`)
      return out
    }
    const relpath = `${folder}/${name}`
    const meta = index.get(relpath)
    const info = infos[k]!
    const entry: DroppedFile = { ...info, relpath, filepath: meta?.filepath ?? null, pids: meta?.pids ?? [] }
    out.push(entry)
    // The same bytes written to other paths: listed again, each with its own path and writers.
    for (const [other, pids] of others.get(info.sha256) ?? []) {
      if (other === entry.filepath) continue
      if (out.length >= MAX_DROPPED) break
      // Its name is the one at that path (the stored copy is named after the first path).
      out.push({ ...entry, name: other.slice(Math.max(other.lastIndexOf('/'), other.lastIndexOf('\\')) + 1) || entry.name, yara: [], urls: [], filepath: other, pids })
    }
  }
  return out
}

/** `buffer`: the buffers Cuckoo's monitor captured (buffer/<sha1>), described like dropped files. */
export async function bufferFiles(dir: string, detectType: FileTypeDetector, log: (m: string) => void, hashing?: FileHashing): Promise<FileInfo[]> {
  const names = await regularFiles(artifactPath(dir, ARTIFACTS.buffer))
  if (names.length > MAX_DROPPED) log(`more than ${MAX_DROPPED} buffers: the rest are not in the report`)
  return filesInfo(names.slice(0, MAX_DROPPED).map((name) => ({ path: artifactPath(dir, ARTIFACTS.buffer, name), name })), detectType, hashing)
}

export const ScreenshotSchema = Closed({ path: Type.String(), ocr: Type.String() })
export type Screenshot = Static<typeof ScreenshotSchema>

export async function screenshots(dir: string): Promise<Screenshot[]> {
  return (await regularFiles(artifactPath(dir, ARTIFACTS.shots)))
    .filter((n) => /^\d+\.(jpg|png)$/.test(n))
    .map((n) => ({ path: artifactPath(dir, ARTIFACTS.shots, n), ocr: '' }))
}

export const ProcessMemorySchema = Closed({
  file: Type.String(),
  pid: Type.Integer(),
  num: Type.Integer(),
  size: Type.Integer(),
  yara: YaraList,
  urls: Type.Array(Type.String()),
  regions: Type.Array(MemoryRegionSchema)
})
export type ProcessMemory = Static<typeof ProcessMemorySchema>

/** `memory`: the machine's full memory dump (memory=1), with its triage against the snapshot's baseline (memory-triage.ts). */
export const MemoryDumpSchema = Closed({
  file: Type.String(), size: Type.Integer(), yara: YaraList, triage: Type.Optional(MemoryTriageSchema),
  /** Volatility 3's process list and malfind, where `vol` is on PATH (volatility.ts). */
  volatility: Type.Optional(VolatilitySchema)
})
export type MemoryDump = Static<typeof MemoryDumpSchema>

/** `extracted`: Cuckoo's ExtractManager items (scripts, configs carved out). Aviary extracts none. */
export const ExtractedSchema = Type.Record(Type.String(), Type.Unknown())

export const DebugSchema = Closed({
  /** Lines of analysis.log (host and guest). */
  log: Type.Array(Type.String()),
  cuckoo: Type.Array(Type.String()),
  action: Type.Array(Type.String()),
  dbgview: Type.Array(Type.String()),
  /** The task's errors and what processing could not do. */
  errors: Type.Array(Type.String())
})
export type Debug = Static<typeof DebugSchema>

/** Process dumps described per task (the analyzer's caps keep a run far below). */
export const MAX_PROCESS_DUMPS = 1000

/**
 * memory/<pid>-<n>.dmp process dumps, sorted by (pid, num) as Cuckoo does, with their regions and
 * URLs (procmemory.ts); a dump that cannot be read is listed without them and noted.
 */
export async function processMemory(dir: string, log: (m: string) => void = () => undefined): Promise<ProcessMemory[]> {
  const found: { file: string; pid: number; num: number }[] = []
  for (const name of await regularFiles(artifactPath(dir, ARTIFACTS.processDumps))) {
    const m = /^(\d{1,9})-(\d{1,9})\.dmp$/.exec(name)
    if (m) found.push({ file: artifactPath(dir, ARTIFACTS.processDumps, name), pid: Number(m[1]), num: Number(m[2]) })
  }
  found.sort((a, b) => a.pid - b.pid || a.num - b.num)
  if (found.length > MAX_PROCESS_DUMPS) log(`more than ${MAX_PROCESS_DUMPS} process memory dumps: the rest are not in the report`)
  const out: ProcessMemory[] = []
  for (const d of found.slice(0, MAX_PROCESS_DUMPS)) {
    const st = await lstat(d.file)
    const read = await readProcessDump(d.file).catch((err: unknown) => {
      log(`process memory ${d.pid}-${d.num}: ${(err as Error).message}`)
      return { regions: [], urls: [] }
    })
    out.push({ ...d, size: st.size, yara: [], urls: read.urls, regions: read.regions })
  }
  return out
}

/** The machine's full memory dump (memory=1), if the run took one. */
export async function fullMemoryDump(dir: string): Promise<{ path: string; size: number } | null> {
  const file = artifactPath(dir, ARTIFACTS.memoryDump)
  const st = await lstat(file).catch(() => null)
  return st?.isFile() ? { path: file, size: st.size } : null
}

export async function debugInfo(dir: string, errors: string[]): Promise<Debug> {
  const log: string[] = []
  try {
    const input = createReadStream(artifactPath(dir, ARTIFACTS.analysisLog), 'utf8')
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      if (log.length >= MAX_LOG_LINES) {
        log.push(`... (${ARTIFACTS.analysisLog} has more than ${MAX_LOG_LINES} lines)`)
        input.destroy()
        break
      }
      log.push(line)
    }
  } catch {
    /* no log */
  }
  return { log, cuckoo: [], action: [], dbgview: [], errors }
}
