// Options of the dispatcher (`aviary dist`) and where its files live. The dispatcher shares
// nothing with the analysis service but src/shared, so the data-directory rule is restated here:
// $AVIARY_DATA, else the platform's per-user data directory, and the dispatcher in its `dist` folder.
import path from 'node:path'
import envPaths from 'env-paths'

export const DIST_DEFAULT_HOST = 'localhost'
export const DIST_DEFAULT_PORT = 9003
export const DEFAULT_THRESHOLD = 500
export const DEFAULT_MAX_UPLOAD = 1024 ** 3
/** Seconds a node has to take one submission or send one report (and how long a lost submission is waited for). */
export const DEFAULT_TRANSFER_TIMEOUT = 600
/** Seconds between the worker's rounds (assigning tasks; each node's submissions, status and fetches). */
export const DEFAULT_INTERVAL = 10

export interface DistConfig {
  host: string
  port: number
  debug: boolean
  /** `sqlite:///path`, a plain file path, or `postgresql://…`; undefined: `dist.db` in dataDir. */
  db: string | undefined
  dataDir: string
  samplesDir: string
  reportsDir: string
  reportFormats: string[]
  uptimeLogfile: string | null
  threshold: number
  /**
   * Seconds a node has to answer one submission or send one report or pcap. A submission whose
   * answer never came (the dispatcher was killed, the connection broke) is made again only once
   * this long has passed since it began and no copy of it is on the node (worker/takeover.ts).
   */
  transferTimeout: number
  /**
   * Seconds between the worker's rounds: one assigns queued tasks to nodes, and each node has its
   * own (submit what was assigned, read the node's status, fetch finished reports). New work
   * starts its node's round at once; this is how soon a finished task is noticed.
   */
  interval: number
  /** false: API only (workers run as `aviary dist-worker`). */
  worker: boolean
  maxUploadBytes: number
}

export type DistConfigInput = Partial<Omit<DistConfig, 'reportFormats'>> & { reportFormats?: string[] | string }

export function defaultDistDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.AVIARY_DATA || envPaths('aviary', { suffix: '' }).data, 'dist')
}

/** Fills the defaults: every directory and the SQLite file inside the data folder. */
export function resolveDistConfig(input: DistConfigInput = {}, env: NodeJS.ProcessEnv = process.env): DistConfig {
  const dataDir = path.resolve(input.dataDir ?? defaultDistDataDir(env))
  const formats = typeof input.reportFormats === 'string' ? parseFormats(input.reportFormats) : input.reportFormats ?? ['json']
  return {
    host: input.host ?? DIST_DEFAULT_HOST,
    port: input.port ?? DIST_DEFAULT_PORT,
    debug: input.debug ?? false,
    db: input.db,
    dataDir,
    samplesDir: path.resolve(input.samplesDir ?? path.join(dataDir, 'samples')),
    reportsDir: path.resolve(input.reportsDir ?? path.join(dataDir, 'reports')),
    reportFormats: formats.length ? formats : ['json'],
    uptimeLogfile: input.uptimeLogfile ?? null,
    threshold: input.threshold ?? DEFAULT_THRESHOLD,
    transferTimeout: input.transferTimeout ?? DEFAULT_TRANSFER_TIMEOUT,
    interval: input.interval ?? DEFAULT_INTERVAL,
    worker: input.worker ?? true,
    maxUploadBytes: input.maxUploadBytes ?? DEFAULT_MAX_UPLOAD
  }
}

export const FORMAT_PATTERN = /^[A-Za-z0-9_-]{1,32}$/

/** `json,html` (Cuckoo's comma list; spaces tolerated). Throws on a name that is no file name. */
export function parseFormats(text: string): string[] {
  const list = text.split(/[\s,]+/).filter(Boolean)
  for (const f of list) if (!FORMAT_PATTERN.test(f)) throw new Error(`report format '${f}': letters, digits, _ and - only`)
  return [...new Set(list)]
}
