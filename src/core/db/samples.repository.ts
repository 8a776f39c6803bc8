// Samples: one row per distinct content (sha256), whatever the number of submissions.
import type { Db } from './database'
import type { Sample } from '../../shared/api/schemas'
import { now } from '../../shared/time'

export type NewSample = Omit<Sample, 'id'>
export type HashKind = 'md5' | 'sha1' | 'sha256' | 'sha512'

const COLUMNS = 'id, file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep'

export class SamplesRepository {
  private readonly byId
  private readonly bySha256
  private readonly byHash: Record<HashKind, ReturnType<Db['prepare']>>
  private readonly insertStmt

  constructor(db: Db) {
    this.byId = db.prepare<[number], Sample>(`SELECT ${COLUMNS} FROM samples WHERE id = ?`)
    this.bySha256 = db.prepare<[string], Sample>(`SELECT ${COLUMNS} FROM samples WHERE sha256 = ?`)
    this.byHash = {
      md5: db.prepare(`SELECT ${COLUMNS} FROM samples WHERE md5 = ? ORDER BY id LIMIT 1`),
      sha1: db.prepare(`SELECT ${COLUMNS} FROM samples WHERE sha1 = ? ORDER BY id LIMIT 1`),
      sha256: db.prepare(`SELECT ${COLUMNS} FROM samples WHERE sha256 = ? LIMIT 1`),
      sha512: db.prepare(`SELECT ${COLUMNS} FROM samples WHERE sha512 = ? LIMIT 1`)
    }
    this.insertStmt = db.prepare(
      `INSERT INTO samples (file_size, file_type, md5, crc32, sha1, sha256, sha512, ssdeep, added_on)
       VALUES (@file_size, @file_type, @md5, @crc32, @sha1, @sha256, @sha512, @ssdeep, @added_on)
       ON CONFLICT(sha256) DO NOTHING`
    )
  }

  get(id: number): Sample | undefined {
    return this.byId.get(id)
  }

  findBySha256(sha256: string): Sample | undefined {
    return this.bySha256.get(sha256)
  }

  findByHash(kind: HashKind, hash: string): Sample | undefined {
    return this.byHash[kind].get(hash.toLowerCase()) as Sample | undefined
  }

  /** Returns the sample with this content, adding it first when it is new. */
  upsert(sample: NewSample): { sample: Sample; created: boolean } {
    const info = this.insertStmt.run({ ...sample, added_on: now() })
    const row = this.bySha256.get(sample.sha256)
    if (!row) throw new Error('sample vanished after insert')
    return { sample: row, created: info.changes === 1 }
  }
}
