// Where a guest may upload: the path rules of the result server's FILE channel (Cuckoo 2.0.7's
// netlog_sanitize_fname, widened: Cuckoo 2.0.7's cuckoo/core/resultserver.py). The path comes from a
// hostile guest, so it is reduced to exactly "<allowed folder>/<single name>" or refused; nothing
// here touches the disk (opening is open-inside.ts's job).
import { ARTIFACTS, MONITOR_LOG_EXT, UPLOAD_DIRS } from '../storage/layout'

/** Folders of the analysis folder a guest may write into (2.0.7's list + package_files and logs). */
export const UPLOAD_FOLDERS: ReadonlySet<string> = new Set(UPLOAD_DIRS)

export interface UploadPath {
  folder: string
  name: string
  /** `folder/name`, relative to the task folder. */
  rel: string
}

export type UploadPathResult = { ok: true; path: UploadPath } | { ok: false; reason: string }

/** Linux NAME_MAX in bytes; a longer name could never be created. */
const NAME_MAX = 255

export function sanitizeUploadPath(raw: string): UploadPathResult {
  const p = raw.replace(/\\/g, '/')
  const parts = p.split('/')
  if (parts.length !== 2) {
    return { ok: false, reason: parts[0] === '' ? 'absolute path' : 'not exactly <folder>/<name>' }
  }
  const [folder, rawName] = parts as [string, string]
  if (folder === '') return { ok: false, reason: 'absolute path' }
  if (!UPLOAD_FOLDERS.has(folder)) return { ok: false, reason: `folder not allowed: ${JSON.stringify(folder.slice(0, 64))}` }
  // 2.0.7 replaces NUL and ':' in the file name (not in the folder, which is checked above).
  const name = rawName.replace(/[\0:]/g, 'X')
  if (name === '' || name === '.' || name === '..') return { ok: false, reason: 'empty or dot name' }
  if (Buffer.byteLength(name) > NAME_MAX) return { ok: false, reason: 'name too long' }
  // The monitor's API logs arrive only over BSON <pid>; a FILE upload must not pose as one.
  if (folder === ARTIFACTS.logs && name.toLowerCase().endsWith(MONITOR_LOG_EXT)) return { ok: false, reason: 'logs/*.bson is reserved for BSON streams' }
  return { ok: true, path: { folder, name, rel: `${folder}/${name}` } }
}
