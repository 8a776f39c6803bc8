// One service per data directory: two would hand the same machines and task ids out twice.
// The lock is a file holding the owner's pid; a stale one (its process gone) is taken over.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { createLayout } from './layout'

export class DataDirLockedError extends Error {}

export function lockDataDir(root: string): () => void {
  const file = createLayout(root).lockFile
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o644)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return () => {
        try {
          if (readFileSync(file, 'utf8') === String(process.pid)) unlinkSync(file)
        } catch {
          /* already gone */
        }
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const pid = Number(readFileSync(file, 'utf8').trim())
      if (pid && pid !== process.pid && alive(pid)) {
        throw new DataDirLockedError(`another Aviary (pid ${pid}) is using this data directory`)
      }
      unlinkSync(file)
    }
  }
  throw new DataDirLockedError('could not lock the data directory')
}

/** Whether process `pid` exists (EPERM: it does, owned by another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
