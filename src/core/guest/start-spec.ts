// What the engine tells the guest side about one analysis: everything GuestSession.start() and
// analysis.conf need, in the host's terms (paths on the host, a Date for the clock).
export interface GuestStartSpec {
  taskId: number
  category: 'file' | 'url' | 'archive'
  /** File tasks: the host path of the stored sample (also file.localPath); url tasks: the URL. */
  target: string
  package: string | null
  /** Cuckoo's comma-separated k=v string as stored in the task row. */
  options: string | null
  /** Seconds. */
  timeout: number
  enforceTimeout: boolean
  terminateProcesses: boolean
  clock: Date
  file?: { name: string; type: string | null; peExports: string[]; localPath: string }
  resultserver: { ip: string; port: number }
  /** A folder: Aviary's analyzer (analyzer.cjs) or Cuckoo's analyzer/<platform> (analyzer.py); monitor: copied into bin/. */
  analyzer: { dir: string; monitor: string | null }
  /** Reboot tasks: files put back into the guest before the analyzer starts. */
  pushFiles: { guestPath: string; localPath: string }[]
  /** windows | linux | ... */
  platform: string
  /**
   * An earlier attempt of this task was cut off (Aviary stopped during it) on a machine that is
   * never reverted: its analyzer may still run in the guest.
   */
  earlierRunMayLive?: boolean
  /** The decrypting proxy's CA certificate (host path): the analyzer trusts it for the run. */
  caCert?: string | null
}
