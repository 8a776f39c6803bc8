// A file as Cuckoo 2's reports describe one (`File.get_all()`: target.file, dropped[], buffer[]):
// name, path, size, the six hashes and the file type, from one streamed pass over its bytes.
import { createReadStream } from 'node:fs'
import { MultiHasher } from '../hashing/multihash'
import type { FileTypeDetector } from '../hashing/magic'
import type { YaraMatch } from './types'

export interface FileInfo {
  name: string
  path: string
  size: number
  crc32: string
  md5: string
  sha1: string
  sha256: string
  sha512: string
  ssdeep: string
  type: string | null
  yara: YaraMatch[]
  urls: string[]
}

export async function fileInfo(file: string, name: string, detectType: FileTypeDetector): Promise<FileInfo> {
  const hasher = new MultiHasher()
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) hasher.update(chunk as Buffer)
  const h = hasher.digest()
  return {
    name, path: file, size: h.size, crc32: h.crc32, md5: h.md5, sha1: h.sha1, sha256: h.sha256, sha512: h.sha512, ssdeep: h.ssdeep,
    type: await detectType(file).catch(() => null), yara: [], urls: []
  }
}
