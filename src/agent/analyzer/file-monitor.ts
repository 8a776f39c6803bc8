// File changes by snapshot and diff: before the sample starts and after it ends, the watched
// folders are walked (size, mtime, inode per file) and compared, giving created, modified and
// deleted files. Bounded in depth and count so a large home folder cannot stall the analysis;
// folders that only hold caches are skipped. (fs.watch is not used: recursive watching is not
// reliable on Linux in Node 18/20, and strace already catches files that live only briefly.)
import { lstatSync, readdirSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join, resolve, sep } from 'node:path'
import type { FileOp } from '../../guest-protocol/behavior.js'

export interface FileState {
  size: number
  mtimeMs: number
  ino: number
}

export type Snapshot = Map<string, FileState>

export interface FileChange {
  op: FileOp
  path: string
}

const SKIP_NAMES = new Set(['node_modules', '.cache', '.npm', '.git', 'proc', 'sys'])

export function watchedFolders(platform: 'linux' | 'windows', sampleDir: string | null): string[] {
  const env = process.env
  const dirs =
    platform === 'linux'
      ? ['/tmp', '/var/tmp', '/dev/shm', homedir(), '/etc', tmpdir()]
      : [
          env.TEMP,
          env.APPDATA,
          env.LOCALAPPDATA,
          env.USERPROFILE && join(env.USERPROFILE, 'Desktop'),
          env.USERPROFILE && join(env.USERPROFILE, 'Documents'),
          env.PROGRAMDATA,
          // C:\Users\Public: shared by every user, a favourite of droppers (Wine sets PUBLIC too).
          env.PUBLIC,
          env.APPDATA && join(env.APPDATA, 'Microsoft', 'Windows', 'Start Menu', 'Programs', 'Startup')
        ]
  if (sampleDir !== null) dirs.push(sampleDir)
  const unique = [...new Set(dirs.filter((d): d is string => typeof d === 'string' && d !== '').map((d) => resolve(d)))]
  // Drop folders inside another watched folder that is walked deep enough to reach all of them
  // (the Startup folder sits 5 levels under %APPDATA%, beyond the walk's default depth: kept).
  return unique.filter((d) => !unique.some((o) => o !== d && d.startsWith(o + sep) && depthBelow(o, d) <= nestedDepth))
}

/** Folders nested at most this deep in another watched folder are walked with it. */
const nestedDepth = 2

function depthBelow(outer: string, inner: string): number {
  return inner.slice(outer.length + 1).split(sep).filter((p) => p !== '').length
}

export interface SnapshotLimits {
  maxDepth: number
  /** Per watched folder, so one huge folder cannot hide the others. */
  maxEntries: number
  /** Paths (and everything below them) never reported: the analyzer's own folder, for example. */
  exclude: string[]
}

export function snapshot(folders: string[], limits: SnapshotLimits): Snapshot {
  const out: Snapshot = new Map()
  const excluded = limits.exclude.map((e) => resolve(e))
  const isExcluded = (p: string): boolean => excluded.some((e) => p === e || p.startsWith(e + sep))
  let budget = 0
  const walk = (dir: string, depth: number): void => {
    if (budget <= 0 || depth > limits.maxDepth) return
    let names: string[]
    try {
      names = readdirSync(dir)
    } catch {
      return
    }
    for (const name of names) {
      if (budget-- <= 0) return
      const path = join(dir, name)
      if (isExcluded(path)) continue
      let st
      try {
        st = lstatSync(path)
      } catch {
        continue
      }
      if (st.isDirectory()) {
        if (!SKIP_NAMES.has(name)) walk(path, depth + 1)
      } else if (st.isFile()) {
        out.set(path, { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino })
      }
    }
  }
  for (const f of folders) {
    budget = limits.maxEntries
    walk(f, 0)
  }
  return out
}

export function diffSnapshots(before: Snapshot, after: Snapshot): FileChange[] {
  const changes: FileChange[] = []
  for (const [path, now] of after) {
    const was = before.get(path)
    if (was === undefined) changes.push({ op: 'created', path })
    else if (was.size !== now.size || was.mtimeMs !== now.mtimeMs || was.ino !== now.ino) changes.push({ op: 'modified', path })
  }
  for (const path of before.keys()) if (!after.has(path)) changes.push({ op: 'deleted', path })
  return changes
}
