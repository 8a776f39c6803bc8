// Lines of a guest-written text file, read as a stream with a bound on each line: a line longer
// than `maxLine` bytes is skipped (counted), never held. Bytes are read as latin-1 (one character
// per byte: nothing to fail on, and strace writes ASCII with everything else escaped). Hand-written
// because readline has no line-length bound, so one 2 GB "line" would be held whole.
import { createReadStream } from 'node:fs'

export interface LinesEnd {
  /** Lines skipped for being longer than the bound. */
  overlong: number
  /** The file did not end with a newline: its last line was cut (by a cap, or a crash). */
  cutLastLine: boolean
  bytes: number
}

export async function* boundedLines(file: string, maxLine: number, end: (e: LinesEnd) => void): AsyncGenerator<string> {
  let carry: Buffer | null = null
  let skipping = false
  const e: LinesEnd = { overlong: 0, cutLastLine: false, bytes: 0 }
  try {
    for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
      e.bytes += chunk.length
      let at = 0
      while (at < chunk.length) {
        const nl = chunk.indexOf(10, at)
        if (nl < 0) {
          if (skipping) break
          const part = chunk.subarray(at)
          const held = (carry?.length ?? 0) + part.length
          if (held > maxLine) {
            carry = null
            skipping = true
            e.overlong++
          } else {
            carry = carry === null ? Buffer.from(part) : Buffer.concat([carry, part])
          }
          break
        }
        if (skipping) {
          skipping = false
        } else {
          const part = chunk.subarray(at, nl)
          if ((carry?.length ?? 0) + part.length > maxLine) e.overlong++
          else yield (carry === null ? part : Buffer.concat([carry, part])).toString('latin1')
        }
        carry = null
        at = nl + 1
      }
    }
    if (carry !== null || skipping) {
      e.cutLastLine = true
      if (carry !== null && carry.length > 0) yield carry.toString('latin1')
    }
  } finally {
    end(e)
  }
}
