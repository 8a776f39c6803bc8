// Listings of archives for `static.archive`: the names and sizes of a zip's members (from its central
// directory, through zip.js, without extracting) or of a tar's (optionally gzip-compressed, through
// tar-stream, skipping member data). Capped: an archive of a million members gives the first
// ARCHIVE_MAX_ENTRIES and `truncated`, and never more than that in memory.
import { openAsBlob, createReadStream } from 'node:fs'
import { createGunzip } from 'node:zlib'
import { BlobReader, TextWriter, Uint8ArrayWriter, ZipReader } from '@zip.js/zip.js'
import { extract } from 'tar-stream'
import { Closed, Type, type Static } from '../schema.js'

export const ARCHIVE_MAX_ENTRIES = 1000
const TEXT_MAX_BYTES = 1024 * 1024
const TEXT_MAX_ENTRIES = 64
/** Binary members read whole (an OOXML's vbaProject.bin): at most 4 of at most 32 MiB each. */
const BYTES_MAX = 32 * 1024 * 1024
const BYTES_MAX_ENTRIES = 4

export const ArchiveEntrySchema = Closed({
  name: Type.String(),
  size: Type.Integer(),
  compressed_size: Type.Optional(Type.Integer()),
  encrypted: Type.Optional(Type.Boolean()),
  directory: Type.Optional(Type.Boolean())
})
export type ArchiveEntry = Static<typeof ArchiveEntrySchema>

export const ArchiveListingSchema = Closed({
  type: Type.Union([Type.Literal('zip'), Type.Literal('tar')]),
  entries: Type.Array(ArchiveEntrySchema),
  /** Members seen (for a zip: all of them; for a tar: up to where reading stopped). */
  count: Type.Integer(),
  truncated: Type.Boolean(),
  error: Type.Optional(Type.String())
})
export type ArchiveListing = Static<typeof ArchiveListingSchema>

export interface ZipEntryText { name: string; text: string }

export interface ZipListOptions {
  /** Members whose text the caller wants (small ones, at most 64 of at most 1 MiB each). */
  readText?: (name: string) => boolean
  texts?: ZipEntryText[]
  /** Members whose bytes the caller wants (at most 4 of at most 32 MiB each). */
  readBytes?: (name: string) => boolean
  bytes?: { name: string; data: Buffer }[]
}

const CODEC = { useWebWorkers: false, useCompressionStream: false } as const

/** Lists a zip from its central directory. */
export async function listZip (file: string, options: ZipListOptions = {}): Promise<ArchiveListing> {
  const reader = new ZipReader(new BlobReader(await openAsBlob(file)), { ...CODEC, filenameValidation: 'tolerant' })
  const listing: ArchiveListing = { type: 'zip', entries: [], count: 0, truncated: false }
  try {
    const entries = await reader.getEntries()
    listing.count = entries.length
    listing.truncated = entries.length > ARCHIVE_MAX_ENTRIES
    for (const e of entries.slice(0, ARCHIVE_MAX_ENTRIES)) {
      listing.entries.push({
        name: e.filename,
        size: e.uncompressedSize ?? 0,
        compressed_size: e.compressedSize ?? 0,
        encrypted: e.encrypted === true,
        directory: e.directory
      })
      const wanted = options.readText?.(e.filename) === true && options.texts !== undefined &&
        options.texts.length < TEXT_MAX_ENTRIES && !e.directory && !e.encrypted && (e.uncompressedSize ?? 0) <= TEXT_MAX_BYTES
      if (wanted && 'getData' in e && typeof e.getData === 'function') {
        try {
          options.texts?.push({ name: e.filename, text: await e.getData(new TextWriter()) })
        } catch (err) {
          listing.error = `${e.filename}: ${(err as Error).message}`
        }
      }
      const bytesWanted = options.readBytes?.(e.filename) === true && options.bytes !== undefined &&
        options.bytes.length < BYTES_MAX_ENTRIES && !e.directory && !e.encrypted && (e.uncompressedSize ?? 0) <= BYTES_MAX
      if (bytesWanted && 'getData' in e && typeof e.getData === 'function') {
        try {
          options.bytes?.push({ name: e.filename, data: Buffer.from(await e.getData(new Uint8ArrayWriter())) })
        } catch (err) {
          listing.error = `${e.filename}: ${(err as Error).message}`
        }
      }
    }
  } finally {
    await reader.close()
  }
  return listing
}

/** Lists a tar (gzip-compressed when `gzip`), reading member headers and skipping their data. */
export async function listTar (file: string, gzip: boolean): Promise<ArchiveListing> {
  const listing: ArchiveListing = { type: 'tar', entries: [], count: 0, truncated: false }
  const source = createReadStream(file)
  const ex = extract()
  await new Promise<void>((resolve) => {
    let done = false
    const finish = (err?: Error): void => {
      if (done) return
      done = true
      if (err !== undefined) listing.error = err.message
      source.destroy()
      ex.destroy()
      resolve()
    }
    ex.on('entry', (header, stream, next) => {
      listing.count++
      if (listing.entries.length < ARCHIVE_MAX_ENTRIES) {
        listing.entries.push({ name: header.name, size: header.size ?? 0, directory: header.type === 'directory' })
      } else {
        listing.truncated = true
        finish()
        return
      }
      stream.on('end', () => next())
      stream.resume()
    })
    ex.on('finish', () => finish())
    ex.on('error', (err: Error) => finish(err))
    source.on('error', (err: Error) => finish(err))
    if (gzip) {
      const gunzip = createGunzip()
      gunzip.on('error', (err: Error) => finish(err))
      source.pipe(gunzip).pipe(ex)
    } else {
      source.pipe(ex)
    }
  })
  return listing
}
