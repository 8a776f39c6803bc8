// Dropped files: files the sample created or modified, uploaded to the result server as
// `files/<sha256[:16]>_<basename>` (Cuckoo's naming), deduplicated by content and capped in number
// (option max_dropped, default 100) and size (max_dropped_size, default 32 MiB each).
import { createHash } from 'node:crypto'
import { createReadStream, statSync } from 'node:fs'
import { basename } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { FileRecord } from '../../guest-protocol/behavior.js'
import { uploadFile, type NetlogLog, type NetlogServer } from './netlog.js'
import { DROPPED_FOLDER } from '../../guest-protocol/netlog.js'

export interface DropLimits {
  maxFiles: number
  maxSize: number
}

async function sha256Of(path: string): Promise<string> {
  const h = createHash('sha256')
  await pipeline(createReadStream(path), h)
  return h.digest('hex')
}

/** Hashes and uploads created/modified files; fills in `sha256` and `size` of the records. */
export async function uploadDropped(
  records: FileRecord[],
  server: NetlogServer,
  limits: DropLimits,
  log: NetlogLog
): Promise<number> {
  const seen = new Set<string>()
  const pidsByPath = new Map<string, Set<number>>()
  for (const r of records) if (r.pid !== undefined) pidsByPath.set(r.path, (pidsByPath.get(r.path) ?? new Set()).add(r.pid))
  let uploaded = 0
  for (const r of records) {
    if (r.op === 'deleted') continue
    let size: number
    try {
      const st = statSync(r.path)
      if (!st.isFile()) continue
      size = st.size
    } catch {
      continue
    }
    r.size = size
    if (size > limits.maxSize) {
      log.warning(`not uploading ${r.path}: ${size} bytes is over max_dropped_size`)
      continue
    }
    try {
      r.sha256 = await sha256Of(r.path)
    } catch {
      continue
    }
    if (seen.has(r.sha256)) continue
    seen.add(r.sha256)
    if (uploaded >= limits.maxFiles) {
      log.warning(`not uploading ${r.path}: max_dropped (${limits.maxFiles}) reached`)
      continue
    }
    const name = basename(r.path).replace(/[\0:]/g, 'X') || 'file'
    try {
      await uploadFile(server, `${DROPPED_FOLDER}/${r.sha256.slice(0, 16)}_${name}`, r.path, [...(pidsByPath.get(r.path) ?? [])], createReadStream(r.path))
      uploaded++
    } catch (err) {
      log.warning(`upload of ${r.path} failed: ${(err as Error).message}`)
    }
  }
  return uploaded
}
