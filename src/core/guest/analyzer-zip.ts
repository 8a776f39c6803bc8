// The analyzer zip pushed to the guest with POST /extract (Cuckoo 2.0.7's cuckoo/core/guest.py, analyzer_zipfile): every
// file of the analyzer folder under its relative path (forward slashes, no leading "/"), plus,
// for Cuckoo's Windows analyzer, the monitor's files (monitor-x86.dll, inject-x64.exe, ...)
// under bin/. Entries are STORED like Cuckoo's: the payload is mostly DLLs and .pyc, and the
// guest extracts faster. Built with yazl; the result is cached per folder contents (paths,
// sizes, mtimes), since every task of a platform sends the same zip.
import { readdir, readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import yazl from 'yazl'

interface Entry {
  abs: string
  rel: string
  size: number
  mtimeMs: number
}

const cache = new Map<string, { key: string; zip: Buffer }>()
const FIXED_MTIME = new Date('2020-01-01T00:00:00Z')

async function walk(root: string, prefix: string, out: Entry[]): Promise<void> {
  const items = await readdir(root, { withFileTypes: true })
  items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const it of items) {
    const abs = path.join(root, it.name)
    const rel = prefix === '' ? it.name : `${prefix}/${it.name}`
    // Follow symlinks (Cuckoo's monitor/latest setups often link), skip anything that is neither.
    const st = await stat(abs).catch(() => null)
    if (!st) continue
    if (st.isDirectory()) await walk(abs, rel, out)
    else if (st.isFile()) out.push({ abs, rel, size: st.size, mtimeMs: st.mtimeMs })
  }
}

/**
 * Cuckoo's `monitor/latest` is a text file naming the real folder (a hash); a folder is used
 * as it is.
 */
async function monitorFolder(monitor: string): Promise<string> {
  const st = await stat(monitor)
  if (st.isDirectory()) return monitor
  const name = (await readFile(monitor, 'utf8')).trim()
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) throw new Error(`${monitor} does not name a monitor folder`)
  return path.join(path.dirname(monitor), name)
}

/** The analyzer zip for a folder (and a Cuckoo monitor folder, or null) as one Buffer. */
export async function buildAnalyzerZip(dir: string, monitor: string | null): Promise<Buffer> {
  const entries: Entry[] = []
  await walk(dir, '', entries)
  if (entries.length === 0) throw new Error(`the analyzer folder ${dir} is empty or missing`)
  if (monitor !== null) {
    const mon: Entry[] = []
    await walk(await monitorFolder(monitor), '', mon)
    // Only the monitor folder's top-level files, as Cuckoo copies them (no sub-folders).
    const names = new Set(entries.map((e) => e.rel))
    for (const e of mon) {
      if (e.rel.includes('/')) continue
      const rel = `bin/${e.rel}`
      if (!names.has(rel)) entries.push({ ...e, rel })
      else entries[entries.findIndex((x) => x.rel === rel)] = { ...e, rel }
    }
  }
  const cacheKey = `${dir}\0${monitor ?? ''}`
  const key = entries.map((e) => `${e.rel}:${e.size}:${e.mtimeMs}`).join('\n')
  const hit = cache.get(cacheKey)
  if (hit && hit.key === key) return hit.zip

  const zip = new yazl.ZipFile()
  for (const e of entries) zip.addFile(e.abs, e.rel, { compress: false, mtime: FIXED_MTIME })
  zip.end()
  const chunks: Buffer[] = []
  for await (const c of zip.outputStream) chunks.push(c as Buffer)
  const buf = Buffer.concat(chunks)
  cache.set(cacheKey, { key, zip: buf })
  return buf
}

/**
 * True for Aviary's analyzer: a folder with analyzer.cjs and no analyzer.py (which the host would
 * start first). It carries the run's id (src/guest-protocol/run-identity.ts); Cuckoo's does not.
 */
export async function analyzerTagsRun(dir: string): Promise<boolean> {
  const has = (name: string): Promise<boolean> => stat(path.join(dir, name)).then((s) => s.isFile(), () => false)
  return !(await has('analyzer.py')) && (await has('analyzer.cjs'))
}
