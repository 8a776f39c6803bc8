// Locates what an analysis produced (reports, screenshots, memory dumps, the pcap) for the API.
// Every path is built by the storage layout from validated names and checked to resolve inside
// the data directory, so a link planted in an analysis folder cannot expose other files. Results
// exist only while their task does: for an id with no task row every lookup is the route's 404,
// whatever is left on disk (a folder a failed delete left, or one restored by hand).
import { open, readdir, realpath, stat, type FileHandle } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { ApiError, badRequest, notFound } from '../errors'
import { ErrorCodes } from '../../shared/errors'
import { summaryDrops } from '../../shared/report-sections'
import { ARTIFACTS, isInside, shotFile, type Artifact, type StorageLayout } from '../storage/layout'
import { indexJsonStream, JsonSyntaxError, type JsonIndex } from '../reporting/json-index'
import { archiveEntries, tarContentType, tarFileExtension, tarStream, zipOfFiles, type TarCompression } from '../reporting/archives'

export const FILE_FORMATS = {
  json: { file: ARTIFACTS.reportJson, type: 'application/json' },
  html: { file: ARTIFACTS.reportHtml, type: 'text/html; charset=utf-8' },
  maec: { file: ARTIFACTS.reportMaec, type: 'application/xml' },
  metadata: { file: ARTIFACTS.reportMetadata, type: 'application/xml' }
} as const
export const ARCHIVE_FORMATS = ['all', 'dropped', 'package_files'] as const
export const REPORT_FORMATS = [...Object.keys(FILE_FORMATS), ...ARCHIVE_FORMATS]

export interface FileResult {
  kind: 'file'
  path: string
  contentType: string
  downloadName?: string
}
export interface StreamResult {
  kind: 'stream'
  stream: Readable
  contentType: string
  /** Sent as an attachment under this name; inline when absent. */
  downloadName?: string
}

const reportNotFound = () => notFound('Report not found', ErrorCodes.REPORT_NOT_FOUND)
/** Indexes of recently served report.json files (a few hundred bytes each). */
const INDEX_CACHE = 64
const READ_CHUNK = 256 * 1024

/** A piece of a JSON answer: literal text, or the bytes [start, end) of the report file. */
type Piece = string | readonly [number, number]

export class ResultsService {
  /** report.json path → its key index, valid while the file's inode, size and mtime are unchanged. */
  private readonly indexes = new Map<string, { stamp: string; index: JsonIndex }>()

  constructor(
    private readonly layout: StorageLayout,
    private readonly tasks: { exists(id: number): boolean }
  ) {}

  async report(id: number, format: string, tar: TarCompression, element?: string): Promise<FileResult | StreamResult> {
    const fmt = format.toLowerCase()
    if (fmt in FILE_FORMATS) {
      const spec = FILE_FORMATS[fmt as keyof typeof FILE_FORMATS]
      const file = await this.existing(id, reportNotFound, spec.file)
      if (element !== undefined) {
        if (fmt !== 'json') throw new ApiError(404, 'Get specific field is not available in HTML format, try again with JSON format', ErrorCodes.REPORT_NOT_FOUND)
        return this.fromReport(file, (index) => {
          const entry = index.keys.find((k) => k.key === element)
          if (!entry) throw notFound(`'${element}' not found`, ErrorCodes.REPORT_NOT_FOUND)
          return [[entry.start, entry.end]]
        })
      }
      return { kind: 'file', path: file, contentType: spec.type }
    }
    if (!(ARCHIVE_FORMATS as readonly string[]).includes(fmt)) {
      throw new ApiError(400, `Invalid report format: format '${format}' is not one of ${REPORT_FORMATS.join(', ')}`, ErrorCodes.BAD_REQUEST)
    }
    const dir = await this.existing(id, reportNotFound)
    const entries = await archiveEntries(dir, fmt as (typeof ARCHIVE_FORMATS)[number])
    return {
      kind: 'stream',
      stream: tarStream(dir, entries, tar, { containRoot: this.layout.root }),
      contentType: tarContentType(tar),
      downloadName: `${id}_${fmt}${tarFileExtension(tar)}`
    }
  }

  /**
   * report.json without its heaviest parts (Cuckoo 2.0.7's /tasks/summary). Served as a copy of
   * the report's own bytes for the kept keys, so a report of any size is summarised with flat memory.
   */
  async summary(id: number): Promise<StreamResult> {
    const file = await this.existing(id, reportNotFound, ARTIFACTS.reportJson)
    return this.fromReport(file, (index) => {
      const members: Piece[][] = []
      for (const entry of index.keys) {
        // What Cuckoo 2.0.7 leaves out, as the shared section table says.
        const drops = summaryDrops(entry.key)
        if (drops === '*') continue
        if (drops.length > 0 && entry.children) {
          const kept = entry.children.filter((c) => !drops.includes(c.key))
          members.push([`${JSON.stringify(entry.key)}: {`, ...joined(kept.map((c) => [`${JSON.stringify(c.key)}: `, [c.start, c.end] as const])), '}'])
        } else {
          members.push([`${JSON.stringify(entry.key)}: `, [entry.start, entry.end]])
        }
      }
      return ['{', ...joined(members), '}']
    })
  }

  /**
   * Opens report.json once (so a rereport renaming a new file over it cannot mix two reports),
   * indexes it (or reuses the index of the same file), and streams the pieces `pick` chooses.
   */
  private async fromReport(file: string, pick: (index: JsonIndex) => Piece[]): Promise<StreamResult> {
    const fh = await open(file, 'r')
    try {
      const st = await fh.stat()
      const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`
      let index = this.indexes.get(file)?.stamp === stamp ? this.indexes.get(file)!.index : undefined
      if (!index) {
        try {
          index = await indexJsonStream(fh.createReadStream({ start: 0, autoClose: false, highWaterMark: 1 << 20 }), st.size, 2)
        } catch (err) {
          if (err instanceof JsonSyntaxError) throw new ApiError(404, `Report not readable: ${err.message}`, ErrorCodes.REPORT_NOT_FOUND)
          throw err
        }
        this.indexes.delete(file)
        this.indexes.set(file, { stamp, index })
        if (this.indexes.size > INDEX_CACHE) this.indexes.delete(this.indexes.keys().next().value as string)
      }
      const stream = Readable.from(readPieces(fh, pick(index)), { objectMode: false })
      // 'close' comes after the end and after a destroy (a client that went away), read or not.
      stream.once('close', () => { fh.close().catch(() => undefined) })
      return { kind: 'stream', stream, contentType: 'application/json' }
    } catch (err) {
      await fh.close()
      throw err
    }
  }

  async screenshot(id: number, name: string): Promise<FileResult> {
    await this.existing(id, () => notFound('Task not found', ErrorCodes.TASK_NOT_FOUND), ARTIFACTS.shots)
    const [num, small] = name.split('_')
    const file = await this.existing(id, () => notFound('Screenshot not found!', ErrorCodes.FILE_NOT_FOUND), ARTIFACTS.shots, shotFile(num!, small !== undefined))
    return { kind: 'file', path: file, contentType: 'image/jpeg' }
  }

  async screenshots(id: number): Promise<StreamResult> {
    const dir = await this.existing(id, () => notFound('Task not found', ErrorCodes.TASK_NOT_FOUND), ARTIFACTS.shots)
    return { kind: 'stream', stream: await zipOfFiles(dir), contentType: 'application/zip', downloadName: `${id}_screenshots.zip` }
  }

  async memoryList(id: number): Promise<string[]> {
    const missing = () => notFound('Memory dump not found', ErrorCodes.FILE_NOT_FOUND)
    const dir = await this.existing(id, missing, ARTIFACTS.processDumps)
    const names = (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => (e.name.endsWith('.dmp') ? e.name.slice(0, -4) : e.name))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    if (names.length === 0) throw missing()
    return names
  }

  /**
   * One dump by its listed name (`1234-1`), or by a process number alone (`1234`, as the API's
   * spec names it): that process's dump, the last one taken when there are several.
   */
  async memoryDump(id: number, name: string): Promise<FileResult> {
    if (name === '.' || name === '..') throw badRequest('pid', 'a dump name from /memory/list/{id}, such as 1234-1, or a process number')
    const missing = () => notFound('Memory dump not found', ErrorCodes.FILE_NOT_FOUND)
    let listed = name
    if (/^\d{1,9}$/.test(name)) {
      const dir = await this.existing(id, missing, ARTIFACTS.processDumps)
      const nums = (await readdir(dir, { withFileTypes: true }))
        .filter((e) => e.isFile() && e.name.startsWith(`${name}-`) && /^\d+-\d+\.dmp$/.test(e.name))
        .map((e) => Number(e.name.slice(name.length + 1, -4)))
      if (nums.length > 0 && !(await this.existing(id, () => missing(), ARTIFACTS.processDumps, `${name}.dmp`).then(() => true, () => false))) {
        listed = `${name}-${Math.max(...nums)}`
      }
    }
    const file = await this.existing(id, missing, ARTIFACTS.processDumps, `${listed}.dmp`)
    return { kind: 'file', path: file, contentType: 'application/octet-stream', downloadName: `${id}-${listed}.dmp` }
  }

  async pcap(id: number): Promise<FileResult> {
    const file = await this.existing(id, () => notFound('File not found', ErrorCodes.FILE_NOT_FOUND), ARTIFACTS.pcap)
    return { kind: 'file', path: file, contentType: 'application/vnd.tcpdump.pcap', downloadName: `${id}.pcap` }
  }

  /** The decrypting proxy's flows of a task, in mitmproxy's own format (open with mitmproxy -r). */
  async flows(id: number): Promise<FileResult> {
    const file = await this.existing(id, () => notFound('This task has no decrypted flows', ErrorCodes.FILE_NOT_FOUND), ARTIFACTS.mitmDump)
    return { kind: 'file', path: file, contentType: 'application/octet-stream', downloadName: `${id}.mitm` }
  }

  /**
   * One dropped file of a task, from its files/ or package_files/ folder only: resolved (links
   * followed) and required to be a regular file inside the task's own analysis folder. Sent as an
   * attachment named `<task>-<name>.bin`: the guest's name without the content prefix, cut to
   * letters, digits, dot, dash and underscore, and never runnable by a double click.
   */
  async droppedFile(id: number, folder: typeof ARTIFACTS.dropped | typeof ARTIFACTS.packageFiles, name: string): Promise<FileResult> {
    if (name === '.' || name === '..') throw badRequest('name', 'a file name in that folder, as in the dropped file\'s relpath')
    const missing = () => notFound('Dropped file not found', ErrorCodes.FILE_NOT_FOUND)
    if (!this.tasks.exists(id)) throw missing()
    let real: string
    try {
      real = await realpath(this.layout.artifact(id, folder, name))
      if (!(await stat(real)).isFile() || !isInside(await realpath(this.layout.analysis(id)), real)) throw missing()
    } catch {
      throw missing()
    }
    return { kind: 'file', path: real, contentType: 'application/octet-stream', downloadName: `${id}-${safeFileName(name.replace(/^[0-9a-f]{16}_/, ''))}.bin` }
  }

  async sampleFile(sha256: string): Promise<FileResult> {
    const missing = () => notFound('File not found', ErrorCodes.FILE_NOT_FOUND)
    const file = await this.contained(this.layout.binary(sha256.toLowerCase()), missing)
    return { kind: 'file', path: file, contentType: 'application/octet-stream', downloadName: `${sha256.toLowerCase()}.bin` }
  }

  /**
   * The path of an existing artifact (then names inside it) of an existing task's analysis folder,
   * or of the folder itself, resolved and kept inside the data dir. Every analysis result is looked
   * up through here.
   */
  private async existing(id: number, missing: () => ApiError, name?: Artifact, ...parts: string[]): Promise<string> {
    if (!this.tasks.exists(id)) throw missing()
    return this.contained(name === undefined ? this.layout.analysis(id) : this.layout.artifact(id, name, ...parts), missing)
  }

  private async contained(candidate: string, missing: () => ApiError): Promise<string> {
    let real: string
    try {
      real = await realpath(candidate)
      await stat(real)
    } catch {
      throw missing()
    }
    if (!isInside(await realpath(this.layout.root), real)) throw missing()
    return real
  }
}

/** A name fit for a Content-Disposition header and any file system: [A-Za-z0-9._-], other runs as '_'. */
export function safeFileName(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(0, 100)
  return safe === '' ? 'dropped' : safe
}

/** Pieces separated by ', ', flattened. */
function joined(members: Piece[][]): Piece[] {
  return members.flatMap((m, i) => (i === 0 ? m : [', ', ...m]))
}

/** Yields the pieces' bytes in order, reading file ranges in chunks. */
async function* readPieces(fh: FileHandle, pieces: Piece[]): AsyncGenerator<Buffer> {
  for (const piece of pieces) {
    if (typeof piece === 'string') { yield Buffer.from(piece); continue }
    const end = piece[1]
    let pos = piece[0]
    while (pos < end) {
      const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, end - pos))
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos)
      if (bytesRead === 0) throw new Error('report.json became shorter while it was read')
      pos += bytesRead
      yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead)
    }
  }
}
