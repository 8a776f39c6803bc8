// The record of retention runs: retention-log.jsonl in the data directory, one JSON line per run
// with every task and sample it deleted, what it skipped and why, and the space it freed. Lines
// are only appended. Reading takes the newest runs from the end of the file (at most READ_CAP
// bytes of it: a run that deleted 100,000 tasks is a line of ~15 MB).
import { appendFileSync, closeSync, fstatSync, openSync, readSync } from 'node:fs'
import type { RunRecord } from '../../shared/api/retention'
import { createLayout } from '../storage/layout'

const READ_CAP = 32 * 1024 * 1024

export class RetentionLog {
  readonly file: string

  constructor(dataRoot: string) {
    this.file = createLayout(dataRoot).retentionLog
  }

  append(run: RunRecord): void {
    appendFileSync(this.file, JSON.stringify(run) + '\n')
  }

  /** The newest `limit` runs, newest first. */
  recent(limit: number): RunRecord[] {
    let fd: number
    try {
      fd = openSync(this.file, 'r')
    } catch {
      return []
    }
    try {
      const size = fstatSync(fd).size
      const length = Math.min(size, READ_CAP)
      const buf = Buffer.alloc(length)
      readSync(fd, buf, 0, length, size - length)
      const lines = buf.toString('utf8').split('\n')
      // A cut at the start of the window leaves part of a line: it is not a run.
      if (length < size) lines.shift()
      const out: RunRecord[] = []
      for (let i = lines.length - 1; i >= 0 && out.length < limit; i--) {
        const line = lines[i]!.trim()
        if (line === '') continue
        try {
          out.push(JSON.parse(line) as RunRecord)
        } catch {
          // a line cut by a crash while it was written
        }
      }
      return out
    } finally {
      closeSync(fd)
    }
  }

  /** The start (epoch ms) of the newest run with this trigger, or null. */
  lastStart(trigger: RunRecord['trigger']): number | null {
    const run = this.recent(100).find((r) => r.trigger === trigger)
    return run ? Date.parse(run.started_at) : null
  }
}
