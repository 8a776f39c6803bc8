// The disk space a set of files and folders holds, as `du` counts it: allocated blocks, each inode
// once (a sample's binary and its hard links under uploads/ are one file), symbolic links not
// followed (an analysis folder's `binary` link points into the sample store). This is the space a
// deletion gives back.
//
// Analysis folders hold what a hostile guest sent, so the walk is bounded: at most MAX_DEPTH
// levels (the result server's own folders are two deep) and MAX_ENTRIES entries per call; beyond
// either, what was counted so far is returned and `complete` says it stopped short.
import { lstat, readdir } from 'node:fs/promises'
import path from 'node:path'

const MAX_DEPTH = 32
const MAX_ENTRIES = 1_000_000

export interface Usage {
  bytes: number
  complete: boolean
}

export async function diskUsage(paths: readonly string[]): Promise<Usage> {
  const seen = new Set<string>()
  let bytes = 0
  let entries = 0
  let complete = true
  const visit = async (p: string, depth: number): Promise<void> => {
    if (entries >= MAX_ENTRIES) { complete = false; return }
    entries++
    let st
    try {
      st = await lstat(p, { bigint: true })
    } catch {
      return // gone meanwhile, or never there
    }
    const key = `${st.dev}:${st.ino}`
    if (seen.has(key)) return
    seen.add(key)
    bytes += Number(st.blocks) * 512
    if (!st.isDirectory()) return
    if (depth >= MAX_DEPTH) { complete = false; return }
    let names: string[]
    try {
      names = await readdir(p)
    } catch {
      return
    }
    for (const name of names) await visit(path.join(p, name), depth + 1)
  }
  for (const p of paths) await visit(p, 0)
  return { bytes, complete }
}
