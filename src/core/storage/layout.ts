// The on-disk layout of a data directory (Cuckoo-compatible under storage/), and the name of every
// file and folder in it, written once: the data root's own files, and what an analysis folder
// holds (ARTIFACTS). Paths under the data root are joined here from checked parts; code that holds
// an analysis folder's path joins an artifact's name to it with artifactPath().
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { BEHAVIOR_LOG, DROPPED_FOLDER, STRACE_LOG, UPLOAD_FOLDERS } from '../../guest-protocol/netlog'
import { RECORDING_FOLDER } from '../../shared/console-recording'

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
  /** The user's YARA rules (docs/reports.md), scanned when the folder exists. */
  readonly yaraRules: string
  /** The IDS step's settings (suricata.json) and imported rule sets (rules/<name>/): docs/network.md. */
  readonly suricata: string
  /** The retention rules (docs/retention.md) and the log of what retention deleted. */
  readonly retentionRules: string
  readonly retentionLog: string
  /** The lock one service holds on the data directory (storage/data-lock.ts). */
  readonly lockFile: string
  /** What the machine builder makes (src/core/builder): machines/<name>/ (a machine's disk and console log). */
  readonly machinesDir: string
  /** Built guest images, images/<key>/, which machines' disks are overlays of. */
  readonly imagesDir: string
  /** Downloaded packages and package lists, so that images are rebuilt offline: cache/apt/<suite>-<arch>/. */
  readonly cacheDir: string
  /** Memory-dump triage's baseline of a machine's snapshot (scheduler/memory-baseline.ts). */
  memoryBaseline(machine: string, snapshot: string): string
  machineDir(name: string): string
  imageDir(key: string): string
  aptCache(id: string): string
  binary(sha256: string): string
  uploadDir(sha256: string): string
  upload(sha256: string, fileName: string): string
  analysis(taskId: number): string
  /** A path inside an analysis folder; `parts` must be single, already-validated names. */
  analysisFile(taskId: number, ...parts: string[]): string
  /** An artifact of an analysis folder (ARTIFACTS), and single names inside it when it is a folder. */
  artifact(taskId: number, name: Artifact, ...parts: string[]): string
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

/** The data root's own files and folders (storage/ holds the samples and analyses). */
export const DATA_FILES = {
  database: 'aviary.db',
  machinesConfig: 'machines.json',
  lockFile: 'aviary.lock',
  mitmConf: 'mitm',
  yaraRules: 'yara',
  suricata: 'suricata',
  retentionRules: 'retention.json',
  retentionLog: 'retention-log.jsonl',
  tmp: 'tmp',
  machinesDir: 'machines',
  imagesDir: 'images',
  cacheDir: 'cache',
  baselines: 'baselines'
} as const

export function createLayout(root: string): StorageLayout {
  const abs = path.resolve(root)
  const storage = path.join(abs, 'storage')
  const binaries = path.join(storage, 'binaries')
  const analysesRoot = path.join(storage, 'analyses')
  const uploads = path.join(storage, 'uploads')
  const tmp = path.join(abs, DATA_FILES.tmp)
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
    database: path.join(abs, DATA_FILES.database),
    machinesConfig: path.join(abs, DATA_FILES.machinesConfig),
    binaries,
    analysesRoot,
    uploads,
    tmp,
    mitmConf: path.join(abs, DATA_FILES.mitmConf),
    yaraRules: path.join(abs, DATA_FILES.yaraRules),
    suricata: path.join(abs, DATA_FILES.suricata),
    retentionRules: path.join(abs, DATA_FILES.retentionRules),
    retentionLog: path.join(abs, DATA_FILES.retentionLog),
    lockFile: path.join(abs, DATA_FILES.lockFile),
    machinesDir: path.join(abs, DATA_FILES.machinesDir),
    imagesDir: path.join(abs, DATA_FILES.imagesDir),
    cacheDir: path.join(abs, DATA_FILES.cacheDir),
    machineDir: (name) => path.join(abs, DATA_FILES.machinesDir, checkName(name)),
    memoryBaseline: (machine, snapshot) => path.join(abs, DATA_FILES.baselines, checkName(machine), `${checkName(snapshot)}.json`),
    imageDir: (key) => path.join(abs, DATA_FILES.imagesDir, checkName(key)),
    aptCache: (id) => path.join(abs, DATA_FILES.cacheDir, 'apt', checkName(id)),
    binary: (sha256) => path.join(binaries, checkSha(sha256)),
    uploadDir: (sha256) => path.join(uploads, checkSha(sha256)),
    upload: (sha256, fileName) => path.join(uploads, checkSha(sha256), checkName(fileName)),
    analysis,
    analysisFile: (taskId, ...parts) => path.join(analysis(taskId), ...parts.map(checkName)),
    artifact: (taskId, name, ...parts) => artifactPath(analysis(taskId), name, ...parts),
    relative: (p) => path.relative(abs, p).split(path.sep).join('/'),
    ensure: () => {
      for (const dir of [abs, binaries, analysesRoot, uploads, tmp]) mkdirSync(dir, { recursive: true })
    }
  }
}

/**
 * What an analysis folder (storage/analyses/<id>/) holds, each name written once: Cuckoo 2's
 * layout, plus Aviary's own (task.json's timing, mitm/, calls/, logs/behavior.jsonl). Relative to
 * the folder, '/'-separated; a folder's name has no trailing '/'.
 */
export const ARTIFACTS = {
  // Written by the engine (scheduler/analysis-run.ts, analysis-folder.ts, capture/, network/mitm.ts).
  /** The host's log of the run and the guest's log records, one file (docs/engine.md). */
  analysisLog: 'analysis.log',
  /** The task as the API showed it when the run started and ended. */
  taskJson: 'task.json',
  /** A link to the sample's stored bytes. */
  binary: 'binary',
  pcap: 'dump.pcap',
  /** The machine's memory (a task's memory=1), left out of the `all` archive. */
  memoryDump: 'memory.dmp',
  /** The indicators of the machine's clean snapshot that triage compares memory.dmp with. */
  memoryBaseline: 'memory.baseline.json',
  /** Hypervisor screenshots: shotFile(). */
  shots: 'shots',
  /** The live console's sessions, one recording each (src/shared/console-recording.ts): NNNN.vncrec. */
  console: RECORDING_FOLDER,
  /** The decrypting proxy's files: mitmproxy's own dump, the addon's flows, its log. */
  mitm: 'mitm',
  mitmDump: 'mitm/dump.mitm',
  mitmFlows: 'mitm/flows.jsonl',
  mitmLog: 'mitm/mitm.log',
  // Written by the result server from what the guest sends (guest-protocol/netlog.ts).
  /** One JSON line per dropped file the guest sent (its guest path and pids). */
  filesJson: 'files.json',
  dropped: DROPPED_FOLDER,
  packageFiles: 'package_files',
  buffer: 'buffer',
  extracted: 'extracted',
  /** Process memory dumps, <pid>-<n>.dmp. */
  processDumps: 'memory',
  logs: 'logs',
  behaviorLog: BEHAVIOR_LOG,
  straceLog: STRACE_LOG,
  // Written by processing.
  reports: 'reports',
  reportJson: 'reports/report.json',
  reportHtml: 'reports/report.html',
  /** Reports of Cuckoo's MAEC and metadata modules: Aviary writes none, and serves them where a folder has them. */
  reportMaec: 'reports/report.maec-1.1.xml',
  reportMetadata: 'reports/report.metadata.xml',
  /** Bodies of decrypted HTTP exchanges, by sha1. */
  network: 'network',
  /** The IDS step's run (processing/suricata): its configuration, log and eve.json. */
  suricata: 'suricata',
  /**
   * The calls store (processing/behavior/calls-store.ts): `calls/index.json`, and per process
   * `calls/<pid>.jsonl` (one call per line) and `calls/<pid>.idx` (8 bytes per call: the line's
   * offset, 48 bits, and its kind, 16 bits, little-endian; one more record ends the file).
   */
  calls: 'calls',
  callsIndex: 'calls/index.json'
} as const satisfies Record<string, string>
export type Artifact = (typeof ARTIFACTS)[keyof typeof ARTIFACTS]

/** The folders the result server writes a guest's uploads into, made when the analysis starts. */
export const UPLOAD_DIRS: readonly Artifact[] = UPLOAD_FOLDERS

/** An artifact's path in the analysis folder `dir`, then single names inside it when it is a folder. */
export function artifactPath(dir: string, name: Artifact, ...parts: string[]): string {
  return path.join(dir, ...name.split('/'), ...parts.map(checkName))
}

/** A screenshot's file name in shots/: NNNN.jpg from 0001 (digits as given, padded to 4), NNNN_small.jpg its thumbnail. */
export function shotFile(n: number | string, small = false): string {
  const digits = String(n)
  if (!/^\d{1,12}$/.test(digits)) throw new PathOutsideDataError('bad screenshot number')
  return `${digits.padStart(4, '0')}${small ? '_small' : ''}.jpg`
}

/** A Cuckoo monitor's API log in logs/: the result server's name for a `BSON <pid>` stream. */
export const MONITOR_LOG_EXT = '.bson'
export const monitorLogName = (pid: string | number): string => `${checkName(String(pid))}${MONITOR_LOG_EXT}`

export const CALLS_DIR = ARTIFACTS.calls
export const CALLS_INDEX = path.posix.basename(ARTIFACTS.callsIndex)
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
