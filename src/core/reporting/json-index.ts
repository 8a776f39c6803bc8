// Finds where each key's value sits in a JSON file (byte ranges), reading it once as a stream, so the
// API can serve one part of a report of hundreds of MB (`?elements=`, /tasks/summary) by copying
// bytes instead of parsing the whole document: JSON.parse of a 600 MB report needs a few GiB of
// heap and fails past V8's string limit (~512 MiB). The scanner keeps a few integers per nesting
// level and the names of the keys it indexes, whatever the file's size.
//
// Hand-written because the streaming JSON parsers on npm (stream-json, jsonparse, clarinet) build
// values or emit a token per byte run, which is what this avoids; here only quotes, backslashes
// and brackets matter, and strings are skipped with Buffer.indexOf.
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'

export interface JsonKeyRange {
  key: string
  /** Byte offset of the value's first byte. */
  start: number
  /** Byte offset just past the value's last byte. */
  end: number
  /** For an object value within the indexed depth: its keys. */
  children?: JsonKeyRange[]
}

export interface JsonIndex {
  size: number
  /** Keys of the top-level object (empty if the document is not an object). */
  keys: JsonKeyRange[]
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const COMMA = 0x2c
const OPEN_OBJ = 0x7b
const CLOSE_OBJ = 0x7d
const OPEN_ARR = 0x5b
const CLOSE_ARR = 0x5d
/** Longer key names are not kept (a report's keys are short words; the value is still skipped). */
const MAX_KEY_BYTES = 4096

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09
}

/** An open container; objects at depth ≤ maxDepth collect their keys. */
interface Level {
  object: boolean
  collect: boolean
  entries: JsonKeyRange[]
  /** Between members: the next string is a member's name. */
  expectKey: boolean
  /** The current member's name (null when not kept), and where its value starts (-1 before it). */
  key: string | null
  valueStart: number
  /** Keys of the current member's value, when it is an object that was indexed too. */
  children: JsonKeyRange[] | null
}

export class JsonSyntaxError extends Error {}

/**
 * Scans a JSON document and returns the byte ranges of the top-level object's keys, and of the
 * keys of object values down to `maxDepth` (1 = top-level keys only). Throws JsonSyntaxError when
 * the brackets do not balance or the document ends early; it is not a validator otherwise.
 */
export async function indexJsonFile(file: string, maxDepth = 2): Promise<JsonIndex> {
  const { size } = await stat(file)
  return indexJsonStream(createReadStream(file, { highWaterMark: 1 << 20 }), size, maxDepth)
}

export async function indexJsonStream(input: AsyncIterable<Buffer>, size: number, maxDepth = 2): Promise<JsonIndex> {
  const stack: Level[] = []
  let top: JsonKeyRange[] = []
  let inString = false
  let escaped = false
  /** Bytes of the key being read (only while reading a collected key). */
  let keyParts: Buffer[] | null = null
  let keyLength = 0
  let lastValueByte = -1
  let base = 0
  let done = false

  const closeMember = (level: Level): void => {
    if (level.key !== null && level.valueStart >= 0) {
      const entry: JsonKeyRange = { key: level.key, start: level.valueStart, end: lastValueByte + 1 }
      if (level.children) entry.children = level.children
      level.entries.push(entry)
    }
    level.key = null
    level.valueStart = -1
    level.children = null
    level.expectKey = true
  }

  for await (const chunk of input) {
    let i = 0
    const n = chunk.length
    let nextQuote = -2
    let nextBackslash = -2
    while (i < n) {
      if (inString) {
        if (escaped) {
          if (keyParts) { keyParts.push(chunk.subarray(i, i + 1)); keyLength++ }
          escaped = false
          i++
          continue
        }
        // Jump to the next quote or backslash: everything else inside a string is irrelevant.
        if (nextQuote !== -1 && nextQuote < i) nextQuote = chunk.indexOf(QUOTE, i)
        if (nextBackslash !== -1 && nextBackslash < i) nextBackslash = chunk.indexOf(BACKSLASH, i)
        let j: number
        if (nextQuote === -1 && nextBackslash === -1) j = -1
        else if (nextQuote === -1) j = nextBackslash
        else if (nextBackslash === -1) j = nextQuote
        else j = Math.min(nextQuote, nextBackslash)
        const stop = j === -1 ? n : j
        if (keyParts && stop > i) { keyParts.push(chunk.subarray(i, stop)); keyLength += stop - i }
        if (j === -1) break
        if (chunk[j] === BACKSLASH) {
          if (keyParts) { keyParts.push(chunk.subarray(j, j + 1)); keyLength++ }
          escaped = true
          i = j + 1
          continue
        }
        // The closing quote.
        inString = false
        lastValueByte = base + j
        i = j + 1
        if (keyParts) {
          const level = stack[stack.length - 1] as Level
          level.key = keyLength <= MAX_KEY_BYTES ? (JSON.parse(`"${Buffer.concat(keyParts).toString('utf8')}"`) as string) : null
          keyParts = null
        }
        continue
      }
      const b = chunk[i] as number
      if (isSpace(b)) { i++; continue }
      if (done) throw new JsonSyntaxError(`unexpected data after the document at byte ${base + i}`)
      const level = stack[stack.length - 1]
      const offset = base + i
      if (b === QUOTE) {
        inString = true
        if (level?.collect) {
          if (level.expectKey) { level.expectKey = false; keyParts = []; keyLength = 0 }
          else if (level.valueStart < 0) level.valueStart = offset
        }
        i++
        continue
      }
      if (b === COLON) { i++; continue }
      if (b === COMMA) {
        if (level?.collect) closeMember(level)
        i++
        continue
      }
      if (b === CLOSE_OBJ || b === CLOSE_ARR) {
        if (!level || level.object !== (b === CLOSE_OBJ)) throw new JsonSyntaxError(`unbalanced '${String.fromCharCode(b)}' at byte ${offset}`)
        if (level.collect) closeMember(level)
        lastValueByte = offset
        stack.pop()
        const parent = stack[stack.length - 1]
        if (parent === undefined) {
          done = true
          if (level.object) top = level.entries
        } else if (parent.collect && level.collect) {
          parent.children = level.entries
        }
        i++
        continue
      }
      // The first byte of a value (a container, or a literal or number), or a later byte of one.
      if (level?.collect && level.valueStart < 0) level.valueStart = offset
      if (b === OPEN_OBJ || b === OPEN_ARR) {
        const collect = b === OPEN_OBJ && stack.length + 1 <= maxDepth
        stack.push({ object: b === OPEN_OBJ, collect, entries: [], expectKey: collect, key: null, valueStart: -1, children: null })
      } else {
        if (stack.length === 0) throw new JsonSyntaxError('the document is not an object or an array')
        lastValueByte = offset
      }
      i++
    }
    base += n
  }
  if (!done || inString || stack.length > 0) throw new JsonSyntaxError('the document ends before it is complete')
  return { size, keys: top }
}
