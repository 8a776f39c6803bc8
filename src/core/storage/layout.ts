// The on-disk layout of a data directory (Cuckoo-compatible under storage/). This module is the
// only place that joins paths under the data root, so every path the service touches is built
// from checked parts here.
import { mkdirSync } from 'node:fs'
import path from 'node:path'

export interface StorageLayout {
  readonly root: string
  readonly database: string
  readonly machinesConfig: string
  readonly binaries: string
  readonly analysesRoot: string
  readonly uploads: string
  readonly tmp: string
  /** mitmproxy's folder: Aviary's own CA for decrypting guests' TLS (docs/network.md). */
  readonly mitmConf: string
  binary(sha256: string): string
  uploadDir(sha256: string): string
  upload(sha256: string, fileName: string): string
  analysis(taskId: number): string
  /** A path inside an analysis folder; `parts` must be single, already-validated names. */
  analysisFile(taskId: number, ...parts: string[]): string
  /** The path relative to the data root, for messages: never show absolute paths to clients. */
  relative(p: string): string
  ensure(): void
}

const SHA256 = /^[0-9a-f]{64}$/

export class PathOutsideDataError extends Error {}

function checkName(part: string): string {
  // A single path component: no separators, no traversal, no NUL. Callers validate the
  // vocabulary (e.g. "0001", "1234-1"); this is the last line of defence.
  if (part === '' || part === '.' || part === '..' || /[/\\\0]/.test(part)) {
    throw new PathOutsideDataError(`unsafe path component ${JSON.stringify(part)}`)
  }
  return part
}

export function createLayout(root: string): StorageLayout {
  const abs = path.resolve(root)
  const storage = path.join(abs, 'storage')
  const binaries = path.join(storage, 'binaries')
  const analysesRoot = path.join(storage, 'analyses')
  const uploads = path.join(storage, 'uploads')
  const tmp = path.join(abs, 'tmp')
  const checkSha = (sha256: string): string => {
    if (!SHA256.test(sha256)) throw new PathOutsideDataError('not a sha256')
    return sha256
  }
  const analysis = (taskId: number): string => {
    if (!Number.isSafeInteger(taskId) || taskId < 1) throw new PathOutsideDataError('bad task id')
    return path.join(analysesRoot, String(taskId))
  }
  return {
    root: abs,
    database: path.join(abs, 'aviary.db'),
    machinesConfig: path.join(abs, 'machines.json'),
    binaries,
    analysesRoot,
    uploads,
    tmp,
    mitmConf: path.join(abs, 'mitm'),
    binary: (sha256) => path.join(binaries, checkSha(sha256)),
    uploadDir: (sha256) => path.join(uploads, checkSha(sha256)),
    upload: (sha256, fileName) => path.join(uploads, checkSha(sha256), checkName(fileName)),
    analysis,
    analysisFile: (taskId, ...parts) => path.join(analysis(taskId), ...parts.map(checkName)),
    relative: (p) => path.relative(abs, p).split(path.sep).join('/'),
    ensure: () => {
      for (const dir of [abs, binaries, analysesRoot, uploads, tmp]) mkdirSync(dir, { recursive: true })
    }
  }
}

/**
 * The calls store of an analysis folder (processing/behavior/calls-store.ts): `calls/index.json`,
 * and per process `calls/<pid>.jsonl` (one call per line) and `calls/<pid>.idx` (8 bytes per call:
 * the line's offset, 48 bits, and its kind, 16 bits, little-endian; one more record ends the file).
 */
export const CALLS_DIR = 'calls'
export const CALLS_INDEX = 'index.json'
const checkPid = (pid: number): number => {
  if (!Number.isSafeInteger(pid) || pid < 0) throw new PathOutsideDataError('bad pid')
  return pid
}
export const callsDataName = (pid: number): string => `${checkPid(pid)}.jsonl`
export const callsOffsetsName = (pid: number): string => `${checkPid(pid)}.idx`

/** True when `candidate` (an absolute, resolved path) lies inside `root`. */
export function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate)
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))
}
