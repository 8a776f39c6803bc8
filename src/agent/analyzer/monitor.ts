// What main.ts needs from a platform's process monitor (proc-monitor.ts, windows-monitor.ts).
import type { ConnectionRecord, ProcessRecord } from '../../guest-protocol/behavior.js'

export interface Monitor {
  start(): void
  /** Stops polling (after one last poll where the platform allows). */
  stop(): void
  /** Pids of the tracked tree still running. */
  alive(): number[]
  processes(): ProcessRecord[]
  connectionRecords(): ConnectionRecord[]
}
