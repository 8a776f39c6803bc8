// A file as Cuckoo 2's reports describe one (`File.get_all()`: target.file, dropped[], buffer[]):
// name, path, size, the six hashes, the file type and the http(s) URLs written in it (ASCII or
// UTF-16LE, in its first URL_SCAN_BYTES), from one pass over its bytes. Many files (a run's
// dropped files, tens of thousands for ransomware) are described together: their types by a few
// batched `file` processes (hashing/magic.ts) while the hashing workers read and digest their
// bytes (hashing/file-digest.ts), so that both cores work and no process is started per file.
import type { FileTypeDetector } from '../hashing/magic'
import { inlineFileHashing, type FileDigest, type FileHashing } from '../hashing/file-digest'
import { YaraMatchSchema } from './types'
import { Closed, Nullable, Type, type Static } from './schema'

const fileInfoProperties = {
  name: Type.String(),
  /** Where the file is on the host (the analysis folder's copy; the stored sample for the target). */
  path: Type.String(),
  size: Type.Integer(),
  crc32: Type.String({ pattern: '^[0-9A-F]{8}$' }),
  md5: Type.String(),
  sha1: Type.String(),
  sha256: Type.String(),
  sha512: Type.String(),
  ssdeep: Type.String(),
  type: Nullable(Type.String({ description: 'what libmagic (file -b) says' })),
  yara: Type.Array(YaraMatchSchema),
  urls: Type.Array(Type.String())
}
export const FileInfoSchema = Closed(fileInfoProperties)
export type FileInfo = Static<typeof FileInfoSchema>

/** A dropped file: a FileInfo plus where the guest had it and which processes wrote it. */
export const DroppedFileSchema = Closed({
  ...fileInfoProperties,
  /** The path in the guest, as the analyzer reported it. */
  filepath: Nullable(Type.String()),
  pids: Type.Array(Type.Integer()),
  /** files/<name> or package_files/<name>, inside the analysis folder. */
  relpath: Type.String()
})
export type DroppedFile = Static<typeof DroppedFileSchema>

/** The report's `target`: the submitted file (file and archive tasks) or URL. */
export const TargetSchema = Type.Union([
  Closed({ category: Type.String(), file: Nullable(FileInfoSchema) }),
  Closed({ category: Type.Literal('url'), url: Nullable(Type.String()) })
])
export type Target = Static<typeof TargetSchema>

export { MAX_FILE_URLS, URL_SCAN_BYTES, UrlScanner } from '../hashing/urls'

export async function fileInfo(file: string, name: string, detectType: FileTypeDetector, hashing: FileHashing = inlineFileHashing): Promise<FileInfo> {
  const [[digest], type] = await Promise.all([hashing.files([file]), detectType(file).catch(() => null)])
  if (digest instanceof Error) throw digest
  return described(file, name, digest!, type)
}

/**
 * fileInfo of each file, in order: their types from detectType.many, their bytes digested by
 * `hashing` meanwhile. A file that cannot be read fails the whole call, as it fails fileInfo.
 */
export async function filesInfo(files: readonly { path: string; name: string }[], detectType: FileTypeDetector, hashing: FileHashing = inlineFileHashing): Promise<FileInfo[]> {
  const paths = files.map((f) => f.path)
  const typing = detectType.many(paths).catch(() => paths.map(() => null))
  const digests = await hashing.files(paths)
  const failed = digests.find((d): d is Error => d instanceof Error)
  if (failed !== undefined) throw failed
  const types = await typing
  return files.map((f, i) => described(f.path, f.name, digests[i] as FileDigest, types[i] ?? null))
}

function described(file: string, name: string, h: FileDigest, type: string | null): FileInfo {
  return {
    name, path: file, size: h.size, crc32: h.crc32, md5: h.md5, sha1: h.sha1, sha256: h.sha256, sha512: h.sha512, ssdeep: h.ssdeep,
    type, yara: [], urls: h.urls
  }
}
