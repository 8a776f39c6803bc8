// The report's `strings`: printable runs of a sample as Cuckoo 2's processing/strings.py finds them
// (Cuckoo 2.0.7's cuckoo/processing/strings.py): ASCII runs of at least 6 characters in 0x1f-0x7e, then UTF-16LE runs
// of the same characters each followed by a NUL byte, from the first 16 MiB; the list is cut to
// 2048 strings and each string to 1024 characters. ASCII runs come first, so a large binary gives
// ASCII strings only, as in Cuckoo. A regular expression over the latin1 view of the bytes does
// this in one native pass; no package does more here than these two expressions.
import { open } from 'node:fs/promises'

export const STRINGS_MAX_BYTES = 16 * 1024 * 1024
export const STRINGS_MAX_COUNT = 2048
export const STRINGS_MAX_LENGTH = 1024
export const STRINGS_MIN_LENGTH = 6

export interface StringsLimits { maxCount: number; maxLength: number }

const CUCKOO_LIMITS: StringsLimits = { maxCount: STRINGS_MAX_COUNT, maxLength: STRINGS_MAX_LENGTH }

/** Strings of a buffer (the caller passes at most the first 16 MiB). */
export function extractStrings (buf: Buffer, limits: StringsLimits = CUCKOO_LIMITS): string[] {
  const text = buf.toString('latin1')
  const out: string[] = []
  // Written X{6}X* rather than X{6,}: V8 compiles {6,} with a backtracking stack and throws
  // "Maximum call stack size exceeded" on a run of a few MiB, where X* is a plain loop.
  const ascii = new RegExp(`[\\x1f-\\x7e]{${STRINGS_MIN_LENGTH}}[\\x1f-\\x7e]*`, 'g')
  for (const m of text.matchAll(ascii)) {
    if (out.length >= limits.maxCount) return out
    out.push(m[0].slice(0, limits.maxLength))
  }
  const wide = new RegExp(`(?:[\\x1f-\\x7e]\\x00){${STRINGS_MIN_LENGTH}}(?:[\\x1f-\\x7e]\\x00)*`, 'g')
  for (const m of text.matchAll(wide)) {
    if (out.length >= limits.maxCount) return out
    // Only the first maxLength characters are kept, so only those are decoded.
    out.push(m[0].slice(0, limits.maxLength * 2).split('\0').join(''))
  }
  return out
}

/** Reads the first 16 MiB of a file. */
export async function readHead (file: string, max = STRINGS_MAX_BYTES): Promise<Buffer> {
  const fh = await open(file, 'r')
  try {
    const size = (await fh.stat()).size
    const buf = Buffer.allocUnsafe(Math.min(size, max))
    let got = 0
    while (got < buf.length) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, got)
      if (bytesRead === 0) break
      got += bytesRead
    }
    return buf.subarray(0, got)
  } finally {
    await fh.close()
  }
}

/** `strings` of a file, with Cuckoo's caps. */
export async function fileStrings (file: string): Promise<string[]> {
  return extractStrings(await readHead(file))
}
