// The sample store: content-addressed binaries (storage/binaries/<sha256>) plus, per original
// file name, a hard link under storage/uploads/<sha256>/<name>. A task's target is that link,
// so its base name is the name the analyst submitted (the guest runs the sample under it, as
// Cuckoo's target did) while the bytes are stored once.
import { link, mkdir, rename, stat, unlink, copyFile } from 'node:fs/promises'
import type { Readable } from 'node:stream'
import type { StorageLayout } from '../storage/layout'
import { ingestStream, type IngestedFile } from '../storage/ingest'
import type { HashPool } from '../hashing/hash-pool'
import type { FileTypeDetector } from '../hashing/magic'
import type { SamplesRepository } from '../db/samples.repository'
import type { Sample } from '../../shared/api/schemas'
import { safeBaseName } from '../storage/filenames'

export interface StoredSample {
  sample: Sample
  created: boolean
  /** storage/uploads/<sha256>/<name>: the task target */
  target: string
}

export class SampleStore {
  constructor(
    private readonly layout: StorageLayout,
    private readonly samples: SamplesRepository,
    private readonly pool: HashPool,
    private readonly detectType: FileTypeDetector
  ) {}

  ingest(source: Readable, maxBytes: number): Promise<IngestedFile> {
    return ingestStream(source, { tmpDir: this.layout.tmp, pool: this.pool, maxBytes })
  }

  async discard(file: IngestedFile): Promise<void> {
    await unlink(file.tmpPath).catch(() => undefined)
  }

  /** Whether content with this sha256 has been stored before (for `unique`). */
  exists(sha256: string): boolean {
    return this.samples.findBySha256(sha256) !== undefined
  }

  /** Moves an ingested upload into the store and records its sample row. */
  async commit(file: IngestedFile, clientName: string | undefined): Promise<StoredSample> {
    const binary = this.layout.binary(file.sha256)
    const known = this.samples.findBySha256(file.sha256)
    if (known && (await exists(binary))) {
      await unlink(file.tmpPath).catch(() => undefined)
    } else {
      // rename is atomic: a concurrent upload of the same bytes replaces it with equal bytes
      await rename(file.tmpPath, binary)
    }
    let result = known ? { sample: known, created: false } : undefined
    if (!result) {
      const fileType = await this.detectType(binary)
      result = this.samples.upsert({
        file_size: file.size,
        file_type: fileType,
        md5: file.md5,
        crc32: file.crc32,
        sha1: file.sha1,
        sha256: file.sha256,
        sha512: file.sha512,
        ssdeep: file.ssdeep
      })
    }
    const target = await this.linkUpload(file.sha256, safeBaseName(clientName, file.sha256))
    return { ...result, target }
  }

  /** The target for a stored sample submitted again by hash: its first known name, or the hash. */
  async targetFor(sample: Sample, name?: string): Promise<string> {
    return this.linkUpload(sample.sha256, safeBaseName(name, sample.sha256))
  }

  private async linkUpload(sha256: string, name: string): Promise<string> {
    const target = this.layout.upload(sha256, name)
    await mkdir(this.layout.uploadDir(sha256), { recursive: true })
    if (await exists(target)) return target
    try {
      await link(this.layout.binary(sha256), target)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'EEXIST') return target
      // File systems without hard links get a copy: correctness over space.
      await copyFile(this.layout.binary(sha256), target)
    }
    return target
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p)
    return true
  } catch {
    return false
  }
}
