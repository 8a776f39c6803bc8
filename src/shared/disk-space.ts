// Disk space of the file system holding a folder, as Cuckoo reports it (/cuckoo/status and the
// dispatcher's /api/status): free is what an unprivileged process may still use, used = total -
// free, so the two add up to the total. Node-only (fs/promises): not for the renderer.
import { statfs } from 'node:fs/promises'

export interface DiskSpace {
  free: number
  total: number
  used: number
}

/** null when the folder cannot be read (missing, no permission). */
export async function diskSpace(dir: string): Promise<DiskSpace | null> {
  try {
    const s = await statfs(dir)
    const total = s.blocks * s.bsize
    const free = s.bavail * s.bsize
    return { free, total, used: total - free }
  } catch {
    return null
  }
}
