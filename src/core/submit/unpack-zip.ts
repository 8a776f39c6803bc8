// Walks a zip through zip.js with random access on a file handle, so only the central
// directory and the chunks in flight are ever in memory.
import { open, type FileHandle } from 'node:fs/promises'
import {
  ERR_INVALID_AUTHENTICATION_CODE,
  ERR_INVALID_COMPRESSED_DATA,
  ERR_INVALID_CRC32,
  ERR_INVALID_PASSWORD,
  ERR_INVALID_UNCOMPRESSED_SIZE,
  ERR_UNSUPPORTED_COMPRESSION,
  ERR_UNSUPPORTED_ENCRYPTION,
  Reader,
  ZipReader,
  type CreateReadableOptions,
  type Entry,
  type FileEntry
} from '@zip.js/zip.js'
import { formatBytes } from '../storage/ingest'
import {
  BOMB_STOP,
  MemberError,
  RATIO_FLOOR_BYTES,
  describeError,
  safeMemberPath,
  showName,
  type RawEntry,
  type WalkContext
} from './unpack-common'

// An inflater may turn one input chunk into ~1000 times as much output before backpressure
// applies, so input chunks stay small. zip.js's own inflater is used instead of Node's
// DecompressionStream, which was measured buffering ~90 MiB ahead of a stalled consumer.
const READ_CHUNK = 8 * 1024
const CODEC = { useWebWorkers: false, useCompressionStream: false } as const
const READER_OPTIONS = { ...CODEC, filenameValidation: 'tolerant' } as const

/** Positional reads on a file handle; counts what it reads so ratios use real input. */
class FileHandleReader extends Reader<FileHandle> {
  bytesRead = 0

  constructor(
    private readonly fh: FileHandle,
    size: number
  ) {
    super(fh)
    this.size = size
  }

  override async readUint8Array(index: number, length: number): Promise<Uint8Array> {
    // Clamped first: a lying directory length must not make us allocate it.
    const wanted = Math.max(0, Math.min(length, this.size - index))
    const buf = new Uint8Array(wanted)
    let got = 0
    while (got < wanted) {
      const { bytesRead } = await this.fh.read(buf, got, wanted - got, index + got)
      if (bytesRead === 0) break
      got += bytesRead
    }
    this.bytesRead += got
    return got === wanted ? buf : buf.subarray(0, got)
  }

  override createReadable(options?: CreateReadableOptions): ReadableStream<Uint8Array> {
    return super.createReadable({ ...options, chunkSize: READ_CHUNK })
  }
}

async function openZip<T>(file: string, use: (zip: ZipReader<FileHandle>, reader: FileHandleReader) => Promise<T>): Promise<T> {
  const fh = await open(file, 'r')
  try {
    const reader = new FileHandleReader(fh, (await fh.stat()).size)
    return await use(new ZipReader(reader, READER_OPTIONS), reader)
  } finally {
    await fh.close()
  }
}

/**
 * zip.js decodes non-UTF-8 names as CP437, where control bytes become glyphs ("\x01" is "☺"):
 * such names are decoded byte for byte instead, so the path check sees the control characters.
 */
function nameOf(entry: Entry): string {
  const raw = entry.rawFilename
  return !entry.filenameUTF8 && raw.some((b) => b < 0x20 || b === 0x7f) ? Buffer.from(raw).toString('latin1') : entry.filename
}

function kindOf(entry: Entry): string {
  if (entry.directory) return 'directory'
  if (entry.symlink) return 'symbolic link'
  // Unix file types other than regular files (the high bits of the external attributes).
  const type = entry.msDosCompatible ? 0 : ((entry.externalFileAttributes >>> 16) & 0o170000)
  const others: Record<number, string> = { 0o010000: 'fifo', 0o020000: 'character device', 0o060000: 'block device', 0o140000: 'socket' }
  return others[type] ?? 'file'
}

const MARKERS = ['[Content_Types].xml', 'mimetype', 'META-INF/MANIFEST.MF', 'AndroidManifest.xml', 'classes.dex']

/**
 * Office documents, OpenDocument, JAR and APK files are zips, but they are the sample: unpacking
 * a .docx into XML parts would analyze the wrong thing. Null when the zip cannot be read.
 */
export async function isZipDocument(file: string): Promise<boolean | null> {
  try {
    return await openZip(file, async (zip) => {
      for await (const entry of zip.getEntriesGenerator()) {
        if (MARKERS.includes(entry.filename)) return true
      }
      return false
    })
  } catch {
    return null
  }
}

function readFailure(entry: FileEntry, err: unknown): Error {
  const message = err instanceof Error ? err.message : ''
  const guess = entry.encrypted ? 'wrong password or corrupt data' : 'corrupt data'
  switch (message) {
    case ERR_INVALID_PASSWORD:
      return new MemberError('wrong password')
    case ERR_INVALID_AUTHENTICATION_CODE:
      return new MemberError(`${guess} (AES authentication failed)`)
    case ERR_INVALID_CRC32:
      return new MemberError(`${guess} (CRC mismatch)`)
    case ERR_INVALID_COMPRESSED_DATA:
      return new MemberError(guess)
    case ERR_INVALID_UNCOMPRESSED_SIZE:
      // zip.js stops at the declared size, so a header that lies low cannot feed a bomb.
      return new MemberError(`content does not match its declared size of ${entry.uncompressedSize} bytes (lying header or corrupt entry), skipped`)
    case ERR_UNSUPPORTED_COMPRESSION:
      return new MemberError(`unsupported compression method ${entry.compressionMethod}, skipped`)
    case ERR_UNSUPPORTED_ENCRYPTION:
      return new MemberError('unsupported encryption, skipped')
  }
  return err instanceof Error ? err : new Error(String(err))
}

/** Declared sizes are checked before anything is extracted: an honest bomb is refused outright. */
function declaredBomb(files: FileEntry[], w: WalkContext): string | null {
  const l = w.limits
  let total = 0
  for (const e of files) {
    const shown = `'${showName(nameOf(e))}'`
    if (e.uncompressedSize > l.maxMemberBytes) {
      return `${shown}: declares ${formatBytes(e.uncompressedSize)}, beyond ${formatBytes(l.maxMemberBytes)}`
    }
    if (e.uncompressedSize > RATIO_FLOOR_BYTES && e.uncompressedSize / Math.max(1, e.compressedSize) > l.maxRatio) {
      return `${shown}: declares more than ${l.maxRatio} times its compressed size`
    }
    total += e.uncompressedSize
  }
  if (total > w.remainingBytes()) return `members declare ${formatBytes(total)} in total, beyond ${formatBytes(l.maxTotalBytes)}`
  return null
}

export async function walkZip(file: string, w: WalkContext, visit: (e: RawEntry) => Promise<void>): Promise<void> {
  await openZip(file, async (zip, reader) => {
    const entries: Entry[] = []
    let files = 0
    let tooMany = false
    try {
      for await (const entry of zip.getEntriesGenerator()) {
        entries.push(entry)
        // One past the limit is listed, so that visiting it reports the overflow.
        if (!entry.directory && ++files > w.remainingMembers()) break
        // Directory entries cost memory too, if nothing else.
        if (entries.length > 2 * w.remainingMembers() + 1000) {
          tooMany = true
          break
        }
      }
    } catch (err) {
      // What was listed before the damage is still extracted.
      w.report(`${w.label}: corrupt or unsupported zip (${describeError(err)})`)
    }
    const candidates = entries.filter(
      (e): e is FileEntry => kindOf(e) === 'file' && safeMemberPath(nameOf(e))?.directory === false
    )
    const bomb = declaredBomb(candidates, w)
    if (bomb) return w.stop(`${w.label}: ${bomb}, refused before extraction (decompression bomb?); ${BOMB_STOP}`)

    for (const entry of entries) {
      if (w.halted) return
      const kind = kindOf(entry)
      let start = 0
      await visit({
        name: nameOf(entry),
        kind,
        ratio: (bytes) => bytes / Math.max(1, reader.bytesRead - start),
        pump: async (write) => {
          if (entry.directory) return
          start = reader.bytesRead
          const sink = new WritableStream<Uint8Array>({ write: (chunk) => write(chunk) })
          try {
            await entry.getData(sink, { ...CODEC, password: w.password, checkCrc32: true })
          } catch (err) {
            throw readFailure(entry, err)
          }
        }
      })
    }
    if (tooMany && !w.halted) w.stop(`${w.label}: too many entries (directories included); ${BOMB_STOP}`)
  })
}
