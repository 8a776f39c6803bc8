// The analysis's end as the host moves it (Extend, Finish now in the Live tab): the host stores
// DEADLINE_FILE next to analysis.conf, and the wait loop asks here, at most every READ_MS, whether
// a new one came. A file that is not what the host writes is ignored (a sample could write it:
// then it can end or lengthen its own analysis, which the host's own limit still bounds).
import { openSync, readSync, closeSync } from 'node:fs'
import { join } from 'node:path'
import { DEADLINE_FILE, DEADLINE_FILE_MAX } from '../../guest-protocol/agent-api.js'

const READ_MS = 500

export class HostDeadline {
  private seq = 0
  private lastRead = 0

  constructor(private readonly analyzerDir: string, public deadline: number) {}

  /** The end now (ms since the guest's epoch), having looked for a new file if it is time. */
  current(now = Date.now()): number {
    if (now - this.lastRead < READ_MS) return this.deadline
    this.lastRead = now
    const next = read(join(this.analyzerDir, DEADLINE_FILE))
    if (next !== null && next.seq > this.seq) {
      this.seq = next.seq
      this.deadline = now + next.remainingMs
    }
    return this.deadline
  }
}

function read(file: string): { seq: number; remainingMs: number } | null {
  let text: string
  try {
    const fd = openSync(file, 'r')
    try {
      const buf = Buffer.alloc(DEADLINE_FILE_MAX)
      text = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString('utf8')
    } finally {
      closeSync(fd)
    }
    const j = JSON.parse(text) as { seq?: unknown; remaining_ms?: unknown }
    const seq = j.seq
    const remaining = j.remaining_ms
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || typeof remaining !== 'number' || !Number.isFinite(remaining) || remaining < 0) return null
    return { seq, remainingMs: Math.min(remaining, 86_400_000) }
  } catch {
    return null // none yet, or being written
  }
}
