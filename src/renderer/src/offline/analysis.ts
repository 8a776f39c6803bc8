// An analysis opened offline: the files of an archive or a folder, keyed by their path inside the
// analysis folder (reports/report.json, shots/0001.jpg, memory/1234-1.dmp, dump.pcap, files/...),
// and the report views' sources as blob: URLs made on demand and revoked on close.
import { baseName, str, SHOT_NAME, type Obj, type ReportSources } from '../report/model'
import { cleanPath, readBlob } from './archive'

export interface OfflineAnalysis {
  /** Files by path inside the analysis folder. */
  files: Map<string, Blob>
  /** Where the analysis folder was inside the archive or folder ('' = at its top). */
  root: string
  report: unknown
  /** report.json's own size, for the raw view's guard. */
  reportBytes: number
  sources: ReportSources
  /** Revokes every blob: URL handed out. */
  close(): void
}

export class OfflineError extends Error {}

/** The largest report.json parsed in the page (JSON.parse of a bigger string fails or takes minutes). */
export const MAX_REPORT_BYTES = 400 * 1024 * 1024

/**
 * Finds the analysis folder in a set of paths: the folder that holds reports/report.json (the
 * shallowest, when a folder holds several). Without a report.json, the folder that has the
 * analysis's usual members (shots/, dump.pcap, task.json…) still opens, with an empty report.
 */
export function findRoot(paths: Iterable<string>): { root: string; hasReport: boolean } | null {
  let best: string | null = null
  let fallback: string | null = null
  for (const p of paths) {
    const m = /^(?:(.*)\/)?reports\/report\.json$/.exec(p)
    if (m) {
      const root = m[1] ?? ''
      if (best === null || root.split('/').length < best.split('/').length || root === '') best = root
      continue
    }
    const n = /^(?:(.*)\/)?(?:dump\.pcap|task\.json|analysis\.log|shots\/[^/]+|memory\/[^/]+\.dmp)$/.exec(p)
    if (n && fallback === null) fallback = n[1] ?? ''
  }
  if (best !== null) return { root: best, hasReport: true }
  return fallback !== null ? { root: fallback, hasReport: false } : null
}

export async function openAnalysis(entries: Iterable<{ name: string; blob: Blob }>): Promise<OfflineAnalysis> {
  const all = new Map<string, Blob>()
  for (const e of entries) {
    const p = cleanPath(e.name)
    if (p !== null) all.set(p, e.blob)
  }
  const found = findRoot(all.keys())
  if (!found) throw new OfflineError('No analysis here: found no reports/report.json (nor shots/, dump.pcap or task.json).')
  const prefix = found.root === '' ? '' : `${found.root}/`
  const files = new Map<string, Blob>()
  for (const [p, b] of all) if (p.startsWith(prefix)) files.set(p.slice(prefix.length), b)

  let report: unknown = {}
  const reportBlob = files.get('reports/report.json')
  if (reportBlob) {
    if (reportBlob.size > MAX_REPORT_BYTES) throw new OfflineError(`reports/report.json is ${(reportBlob.size / 1024 ** 2).toFixed(0)} MiB; the page reads reports up to ${MAX_REPORT_BYTES / 1024 ** 2} MiB.`)
    try {
      report = JSON.parse(new TextDecoder().decode(await readBlob(reportBlob))) as unknown
    } catch (err) {
      throw new OfflineError(`reports/report.json is not valid JSON: ${(err as Error).message}`)
    }
  }
  const urls = new Map<string, string>()
  const url = (p: string): string | null => {
    const blob = files.get(p)
    if (!blob) return null
    let u = urls.get(p)
    if (u === undefined) {
      const typed = p.endsWith('.jpg') || p.endsWith('.jpeg') ? new Blob([blob], { type: 'image/jpeg' }) : p.endsWith('.png') ? new Blob([blob], { type: 'image/png' }) : blob
      u = URL.createObjectURL(typed)
      urls.set(p, u)
    }
    return u
  }
  const dropped = (d: Obj): string | null => {
    const rel = str(d, 'relpath')
    if (rel && files.has(cleanPath(rel) ?? '')) return url(cleanPath(rel) as string)
    // Cuckoo's dropped[].path is the host's absolute path: match its tail under files/.
    const parts = str(d, 'path').replace(/\\/g, '/').split('/')
    for (let n = Math.min(parts.length, 4); n >= 1; n--) {
      const tail = `files/${parts.slice(-n).join('/')}`
      if (files.has(tail)) return url(tail)
    }
    return null
  }
  const shotList = [...files.keys()].filter((p) => p.startsWith('shots/') && SHOT_NAME.test(p.slice(6))).map((p) => p.slice(6))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
  const memory = [...files.entries()].filter(([p]) => /^memory\/[^/]+\.dmp$/.test(p))
    .map(([p, b]) => ({ name: p.slice(7), size: b.size })).sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }))
  const sources: ReportSources = {
    screenshot: (name, small) => (small ? url(`shots/${name.replace(/\.[^.]+$/, '')}_small.jpg`) : url(`shots/${name}`)),
    memoryDump: (name) => (name === 'memory.dmp' ? url('memory.dmp') : url(`memory/${baseName(name)}`)),
    pcap: () => url('dump.pcap'),
    flows: () => url('mitm/dump.mitm'),
    droppedFile: dropped,
    droppedArchive: () => null,
    screenshotNames: () => shotList,
    memoryNames: () => memory
  }
  return {
    files, root: found.root, report, reportBytes: reportBlob?.size ?? 0, sources,
    close: () => { for (const u of urls.values()) URL.revokeObjectURL(u); urls.clear() }
  }
}

/** The files of an <input type=file webkitdirectory> (or several picked files), by relative path. */
export function fromFileList(list: ArrayLike<File>): { name: string; blob: Blob }[] {
  return Array.from(list, (f) => ({ name: f.webkitRelativePath || f.name, blob: f }))
}

/** Every file under dropped folders (drag and drop), by path, read through the entries API. */
export async function fromDataTransfer(items: DataTransferItemList): Promise<{ files: { name: string; blob: Blob }[]; single: File | null }> {
  const roots: FileSystemEntry[] = []
  let single: File | null = null
  for (const item of Array.from(items)) {
    if (item.kind !== 'file') continue
    const entry = item.webkitGetAsEntry?.()
    if (entry?.isDirectory) roots.push(entry)
    else single ??= item.getAsFile()
  }
  const files: { name: string; blob: Blob }[] = []
  const walk = async (entry: FileSystemEntry, path: string): Promise<void> => {
    if (entry.isFile) {
      const file = await new Promise<File>((res, rej) => (entry as FileSystemFileEntry).file(res, rej))
      files.push({ name: path, blob: file })
      return
    }
    const reader = (entry as FileSystemDirectoryEntry).createReader()
    // readEntries gives at most 100 entries per call: read until it gives none.
    for (;;) {
      const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej))
      if (batch.length === 0) break
      for (const e of batch) await walk(e, `${path}/${e.name}`)
    }
  }
  for (const r of roots) await walk(r, r.name)
  return { files, single: roots.length > 0 ? null : single }
}
