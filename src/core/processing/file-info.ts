// A file as Cuckoo 2's reports describe one (`File.get_all()`: target.file, dropped[], buffer[]):
// name, path, size, the six hashes and the file type, from one streamed pass over its bytes.
import { createReadStream } from 'node:fs'
import { MultiHasher } from '../hashing/multihash'
import type { FileTypeDetector } from '../hashing/magic'
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

export async function fileInfo(file: string, name: string, detectType: FileTypeDetector): Promise<FileInfo> {
  const hasher = new MultiHasher()
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) hasher.update(chunk as Buffer)
  const h = hasher.digest()
  return {
    name, path: file, size: h.size, crc32: h.crc32, md5: h.md5, sha1: h.sha1, sha256: h.sha256, sha512: h.sha512, ssdeep: h.ssdeep,
    type: await detectType(file).catch(() => null), yara: [], urls: []
  }
}
