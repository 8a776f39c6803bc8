// The analysis folder of a task (Cuckoo's layout; ARCHITECTURE.md, storage/layout.ts): made before the
// machine starts, with the folders the result server fills, `binary` linked to the stored sample,
// and `task.json` written at the start and the end of the run.
import { writeFileSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { ARTIFACTS, isInside, type StorageLayout } from '../storage/layout'

/** Cuckoo's RESULT_DIRECTORIES: made up front so the guest's uploads find their folders. */
export const RESULT_DIRS = [ARTIFACTS.dropped, ARTIFACTS.shots, ARTIFACTS.buffer, ARTIFACTS.extracted, ARTIFACTS.processDumps, ARTIFACTS.reports, ARTIFACTS.logs] as const
/** Kept when a task is run again after an interrupted attempt: its history. */
const KEPT = new Set<string>([ARTIFACTS.analysisLog, ARTIFACTS.taskJson])

export async function prepareAnalysisFolder(layout: StorageLayout, taskId: number, sha256: string | null): Promise<string> {
  const dir = layout.analysis(taskId)
  await mkdir(dir, { recursive: true })
  // A previous attempt (interrupted by a stop or a crash) left partial results: the result
  // server never overwrites, so they would block this run's uploads.
  for (const name of await readdir(dir)) {
    if (!KEPT.has(name)) await rm(layout.analysisFile(taskId, name), { recursive: true, force: true })
  }
  for (const sub of RESULT_DIRS) await mkdir(layout.artifact(taskId, sub), { recursive: true })
  if (sha256 !== null) {
    const link = layout.artifact(taskId, ARTIFACTS.binary)
    await unlink(link).catch(() => undefined)
    // Relative, so the data directory can be moved or archived whole.
    await symlink(path.relative(dir, layout.binary(sha256)), link)
  }
  return dir
}

export async function writeTaskJson(layout: StorageLayout, taskId: number, json: string): Promise<void> {
  await writeFile(layout.artifact(taskId, ARTIFACTS.taskJson), json + '\n', { mode: 0o644 })
}

/**
 * The same, done before the caller's turn ends: the final task.json is written in the turn that
 * moves the task to `completed`, so processing (woken after that turn) never reads the one from
 * the start of the run.
 */
export function writeTaskJsonNow(layout: StorageLayout, taskId: number, json: string): void {
  writeFileSync(layout.artifact(taskId, ARTIFACTS.taskJson), json + '\n', { mode: 0o644 })
}

/**
 * The files a reboot task pushes back into the fresh guest: the original task's dropped files, each
 * to the path it had in the guest (files.json, written by the result server). Entries that do not
 * point into the original's `files/` are ignored: files.json was written from what a guest sent.
 */
export async function rebootFiles(layout: StorageLayout, originalId: number): Promise<{ guestPath: string; localPath: string }[]> {
  let text: string
  try {
    text = await readFile(layout.artifact(originalId, ARTIFACTS.filesJson), 'utf8')
  } catch {
    return []
  }
  const filesDir = layout.artifact(originalId, ARTIFACTS.dropped)
  const prefix = `${ARTIFACTS.dropped}/`
  const out: { guestPath: string; localPath: string }[] = []
  for (const line of text.split('\n')) {
    let entry: { path?: unknown; filepath?: unknown }
    try {
      entry = JSON.parse(line) as typeof entry
    } catch {
      continue
    }
    if (typeof entry.path !== 'string' || typeof entry.filepath !== 'string' || !entry.path.startsWith(prefix)) continue
    const name = entry.path.slice(prefix.length)
    if (name.includes('/')) continue
    const localPath = layout.artifact(originalId, ARTIFACTS.dropped, name)
    if (isInside(filesDir, localPath)) out.push({ guestPath: entry.filepath, localPath })
  }
  return out
}
