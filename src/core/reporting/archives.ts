// The download archives of an analysis folder, as Cuckoo's REST API served them: tars of the
// folder (or its dropped / package files) and a zip of the screenshots, all streamed.
import { lstat, readdir } from 'node:fs/promises'
import type { TarCompression } from './compress'
import { compareNames, errorCode } from './file-source'
import { ARTIFACTS, artifactPath } from '../storage/layout'

export type { TarCompression } from './compress'
export { FileChangedError } from './file-source'
export { tarStream } from './tar-archive'
export { zipOfFiles } from './zip-archive'

export type ArchiveKind = 'all' | 'dropped' | 'package_files'

/** Left out of 'all': the full VM memory dump, often several GiB (as in Cuckoo). */
const ALL_EXCLUDES = new Set<string>([ARTIFACTS.memoryDump])
const SINGLE_FOLDER = { dropped: ARTIFACTS.dropped, package_files: ARTIFACTS.packageFiles } as const satisfies Record<Exclude<ArchiveKind, 'all'>, string>

/**
 * Top-level entries of `dir` for a download: 'all' = everything but memory.dmp; 'dropped' =
 * ['files'] and 'package_files' = ['package_files'] when present, else [] (an empty tar).
 */
export async function archiveEntries(dir: string, kind: ArchiveKind): Promise<string[]> {
  if (kind === 'all') {
    const raw = await readdir(Buffer.from(dir), { encoding: 'buffer' })
    return raw
      // A name that is not UTF-8 cannot be passed on as a string; the service never writes one.
      .filter((b) => Buffer.from(b.toString('utf8')).equals(b))
      .map((b) => b.toString('utf8'))
      .filter((name) => !ALL_EXCLUDES.has(name))
      .sort(compareNames)
  }
  const name = SINGLE_FOLDER[kind]
  try {
    await lstat(artifactPath(dir, name))
    return [name]
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return []
    throw err
  }
}

/** Cuckoo sent application/x-tar whatever the compression, and clients may check for it. */
export function tarContentType(_compression: TarCompression): string {
  return 'application/x-tar'
}

export function tarFileExtension(compression: TarCompression): string {
  return { bz2: '.tar.bz2', gz: '.tar.gz', none: '.tar' }[compression]
}
