// Locates what an analysis produced (reports, screenshots, memory dumps, the pcap) for the API.
// Every path is built by the storage layout from validated names and checked to resolve inside
// the data directory, so a link planted in an analysis folder cannot expose other files.
import { readdir, readFile, realpath, stat } from 'node:fs/promises'
import type { Readable } from 'node:stream'
import { ApiError, badRequest, notFound } from '../errors'
import { ErrorCodes } from '../../shared/errors'
import { isInside, type StorageLayout } from '../storage/layout'
import { archiveEntries, tarContentType, tarFileExtension, tarStream, zipOfFiles, type TarCompression } from '../reporting/archives'

export const FILE_FORMATS = {
  json: { file: 'report.json', type: 'application/json' },
  html: { file: 'report.html', type: 'text/html; charset=utf-8' },
  maec: { file: 'report.maec-1.1.xml', type: 'application/xml' },
  metadata: { file: 'report.metadata.xml', type: 'application/xml' }
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
  downloadName: string
}
export interface JsonResult {
  kind: 'json'
  body: unknown
}

const SUMMARY_DROPS = ['procmemory', 'behavior.generic', 'behavior.apistats', 'behavior.processes', 'debug', 'screenshots', 'metadata']
const reportNotFound = () => notFound('Report not found', ErrorCodes.REPORT_NOT_FOUND)

export class ResultsService {
  constructor(private readonly layout: StorageLayout) {}

  async report(id: number, format: string, tar: TarCompression, element?: string): Promise<FileResult | StreamResult | JsonResult> {
    const fmt = format.toLowerCase()
    if (fmt in FILE_FORMATS) {
      const spec = FILE_FORMATS[fmt as keyof typeof FILE_FORMATS]
      const file = await this.existing(id, ['reports', spec.file], reportNotFound)
      if (element !== undefined) {
        if (fmt !== 'json') throw new ApiError(404, 'Get specific field is not available in HTML format, try again with JSON format', ErrorCodes.REPORT_NOT_FOUND)
        const report = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>
        if (!Object.hasOwn(report, element)) throw notFound(`'${element}' not found`, ErrorCodes.REPORT_NOT_FOUND)
        return { kind: 'json', body: report[element] }
      }
      return { kind: 'file', path: file, contentType: spec.type }
    }
    if (!(ARCHIVE_FORMATS as readonly string[]).includes(fmt)) {
      throw new ApiError(400, `Invalid report format: format '${format}' is not one of ${REPORT_FORMATS.join(', ')}`, ErrorCodes.BAD_REQUEST)
    }
    const dir = await this.existing(id, [], reportNotFound)
    const entries = await archiveEntries(dir, fmt as (typeof ARCHIVE_FORMATS)[number])
    return {
      kind: 'stream',
      stream: tarStream(dir, entries, tar, { containRoot: this.layout.root }),
      contentType: tarContentType(tar),
      downloadName: `${id}_${fmt}${tarFileExtension(tar)}`
    }
  }

  /** report.json without its heaviest parts (Cuckoo 2.0.7's /tasks/summary). */
  async summary(id: number): Promise<Record<string, unknown>> {
    const file = await this.existing(id, ['reports', 'report.json'], reportNotFound)
    const report = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>
    for (const key of SUMMARY_DROPS) {
      const [top, sub] = key.split('.') as [string, string | undefined]
      const holder = sub ? report[top] : report
      if (holder && typeof holder === 'object') delete (holder as Record<string, unknown>)[sub ?? top]
    }
    return report
  }

  async screenshot(id: number, name: string): Promise<FileResult> {
    await this.existing(id, ['shots'], () => notFound('Task not found', ErrorCodes.TASK_NOT_FOUND))
    const [num, small] = name.split('_')
    const padded = `${num!.padStart(4, '0')}${small ? '_small' : ''}.jpg`
    const file = await this.existing(id, ['shots', padded], () => notFound('Screenshot not found!', ErrorCodes.FILE_NOT_FOUND))
    return { kind: 'file', path: file, contentType: 'image/jpeg' }
  }

  async screenshots(id: number): Promise<StreamResult> {
    const dir = await this.existing(id, ['shots'], () => notFound('Task not found', ErrorCodes.TASK_NOT_FOUND))
    return { kind: 'stream', stream: await zipOfFiles(dir), contentType: 'application/zip', downloadName: `${id}_screenshots.zip` }
  }

  async memoryList(id: number): Promise<string[]> {
    const missing = () => notFound('Memory dump not found', ErrorCodes.FILE_NOT_FOUND)
    const dir = await this.existing(id, ['memory'], missing)
    const names = (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => (e.name.endsWith('.dmp') ? e.name.slice(0, -4) : e.name))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    if (names.length === 0) throw missing()
    return names
  }

  async memoryDump(id: number, name: string): Promise<FileResult> {
    if (name === '.' || name === '..') throw badRequest('pid', 'a dump name from /memory/list/{id}, such as 1234-1')
    const file = await this.existing(id, ['memory', `${name}.dmp`], () => notFound('Memory dump not found', ErrorCodes.FILE_NOT_FOUND))
    return { kind: 'file', path: file, contentType: 'application/octet-stream', downloadName: `${id}-${name}.dmp` }
  }

  async pcap(id: number): Promise<FileResult> {
    const file = await this.existing(id, ['dump.pcap'], () => notFound('File not found', ErrorCodes.FILE_NOT_FOUND))
    return { kind: 'file', path: file, contentType: 'application/vnd.tcpdump.pcap', downloadName: `${id}.pcap` }
  }

  async sampleFile(sha256: string): Promise<FileResult> {
    const missing = () => notFound('File not found', ErrorCodes.FILE_NOT_FOUND)
    const file = await this.contained(this.layout.binary(sha256.toLowerCase()), missing)
    return { kind: 'file', path: file, contentType: 'application/octet-stream', downloadName: `${sha256.toLowerCase()}.bin` }
  }

  /** The path of an existing entry of an analysis folder, resolved and kept inside the data dir. */
  private async existing(id: number, parts: string[], missing: () => ApiError): Promise<string> {
    return this.contained(this.layout.analysisFile(id, ...parts), missing)
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
