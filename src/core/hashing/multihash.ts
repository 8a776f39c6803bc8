// Every hash a sample gets, from one pass over its bytes: md5, sha1, sha256, sha512 (OpenSSL),
// crc32 (zlib) and ssdeep (our port). Used inline and inside the hashing worker alike.
import { createHash, type Hash } from 'node:crypto'
import { crc32 } from 'node:zlib'
import { SsdeepHasher } from './ssdeep'

export interface Hashes {
  size: number
  md5: string
  sha1: string
  sha256: string
  sha512: string
  crc32: string
  ssdeep: string
}

export class MultiHasher {
  private readonly md5: Hash = createHash('md5')
  private readonly sha1: Hash = createHash('sha1')
  private readonly sha256: Hash = createHash('sha256')
  private readonly sha512: Hash = createHash('sha512')
  private readonly fuzzy = new SsdeepHasher()
  private crc = 0
  private size = 0

  update(chunk: Uint8Array): void {
    this.md5.update(chunk)
    this.sha1.update(chunk)
    this.sha256.update(chunk)
    this.sha512.update(chunk)
    this.crc = crc32(chunk, this.crc)
    this.fuzzy.update(chunk)
    this.size += chunk.length
  }

  digest(): Hashes {
    return {
      size: this.size,
      md5: this.md5.digest('hex'),
      sha1: this.sha1.digest('hex'),
      sha256: this.sha256.digest('hex'),
      sha512: this.sha512.digest('hex'),
      crc32: (this.crc >>> 0).toString(16).toUpperCase().padStart(8, '0'),
      ssdeep: this.fuzzy.digest()
    }
  }
}
