// Lines of a guest-written text file, read as a stream with a bound on each line: a line longer
// than `maxLine` bytes is skipped (counted), never held. Bytes are read as latin-1 (one character
// per byte: nothing to fail on, and strace writes ASCII with everything else escaped). Hand-written
// because readline has no line-length bound, so one 2 GB "line" would be held whole. The file is
// read into one reused buffer (a stream would allocate a new one per chunk, and those pile up as
// external memory until a full collection: +60 MiB measured over a 127 MB log).
import { open } from 'node:fs/promises'

export interface LinesEnd {
  /** Lines skipped for being longer than the bound. */
  overlong: number
  /** The file did not end with a newline: its last line was cut (by a cap, or a crash). */
  cutLastLine: boolean
  bytes: number
}

const CHUNK = 1024 * 1024

export async function* boundedLines(file: string, maxLine: number, end: (e: LinesEnd) => void): AsyncGenerator<string> {
  const e: LinesEnd = { overlong: 0, cutLastLine: false, bytes: 0 }
  const fh = await open(file, 'r')
  try {
    const buf = Buffer.allocUnsafe(CHUNK)
    let carry = ''
    let skipping = false
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, CHUNK, e.bytes)
      if (bytesRead === 0) break
      e.bytes += bytesRead
      let at = 0
      while (at < bytesRead) {
        const nl = buf.indexOf(10, at)
        const stop = nl < 0 || nl >= bytesRead ? bytesRead : nl
        if (!skipping) {
          if (carry.length + (stop - at) > maxLine) {
            carry = ''
            skipping = true
            e.overlong++
          } else {
            carry += buf.toString('latin1', at, stop)
          }
        }
        if (stop === bytesRead) break
        if (!skipping) yield carry
        carry = ''
        skipping = false
        at = stop + 1
      }
    }
    if (carry !== '' || skipping) {
      e.cutLastLine = true
      if (carry !== '') yield carry
    }
  } finally {
    await fh.close()
    end(e)
  }
}
