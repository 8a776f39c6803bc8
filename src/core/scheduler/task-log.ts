// analysis.log: the log of one task, host and guest together. The host writes its own lines in
// Cuckoo's format (`YYYY-MM-DD HH:MM:SS,mmm [logger] LEVEL: msg`); lines the guest's analyzer
// sends over the result server's LOG channel are added as they arrive, so the file reads as one
// story. Guest lines are untrusted: control characters are replaced, and a line that claims to
// come from the host (`[aviary…]`) or is not in the log format is marked as the guest's.
import { createWriteStream, type WriteStream } from 'node:fs'

const pad = (n: number, w = 2): string => String(n).padStart(w, '0')

export function logTimestamp(d = new Date()): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())},${pad(d.getMilliseconds(), 3)}`
}

const LINE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} \[([^\]]{1,64})\] [A-Z]{1,10}: /
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g

/** A guest's line as analysis.log stores it (its bytes count toward the task's upload cap). */
export function guestLine(line: string): string {
  const clean = line.replace(CONTROL, '?')
  const m = LINE.exec(clean)
  const trusted = m !== null && !m[1]!.toLowerCase().startsWith('aviary')
  return trusted ? `${clean}\n` : `${logTimestamp()} [guest] INFO: ${clean}\n`
}

export class TaskLog {
  private readonly out: WriteStream
  private closed = false

  constructor(file: string, private readonly logger = 'aviary.engine') {
    this.out = createWriteStream(file, { flags: 'a', mode: 0o644 })
    this.out.on('error', () => { this.closed = true })
  }

  info(msg: string): void {
    this.write('INFO', msg)
  }

  warn(msg: string): void {
    this.write('WARNING', msg)
  }

  error(msg: string): void {
    this.write('ERROR', msg)
  }

  /** A line from the guest's analyzer (result server LOG channel). */
  guest(line: string): void {
    if (this.closed) return
    this.out.write(guestLine(line))
  }

  private write(level: string, msg: string): void {
    if (this.closed) return
    this.out.write(`${logTimestamp()} [${this.logger}] ${level}: ${msg.replace(CONTROL, '?')}\n`)
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve()
    this.closed = true
    return new Promise((resolve) => this.out.end(resolve))
  }
}
