// The console recording format, written by the service (src/core/console/recorder.ts) and read by
// the UI's player (live, from the API, or offline, from an analysis archive). A recording is what
// the VNC server sent one console client, in order and with its times, so any RFB client fed the
// same bytes at the same pace draws the same screens (noVNC's own tests replay sessions this way).
// What the client typed is not in it: only how many keys and clicks, and when, for the seek bar.
//
//   "AVIARY-CONSOLE 1\n"                    the magic line
//   <one JSON line, at most 4 KiB>\n         RecordingMeta
//   records: kind u8, time u32 BE (ms since the session opened), length u32 BE, payload
//
// A file cut short (the service killed mid-write, the byte cap) ends at its last whole record.
export const RECORDING_MAGIC = 'AVIARY-CONSOLE 1\n'
export const RECORDING_SUFFIX = '.vncrec'
/** Recordings live in this folder of the analysis folder, named <session number, 4 digits>.vncrec. */
export const RECORDING_FOLDER = 'console'
export const RECORD_HEADER_BYTES = 9
const MAX_META_BYTES = 4096

export const RecordKind = {
  /** Bytes the VNC server sent (payload: the bytes). */
  server: 1,
  /** Input the client sent and the service let through (payload: u16 keys pressed, u16 clicks). */
  input: 2,
  /** The session ended (payload: the reason, UTF-8). */
  end: 3,
  /** The byte cap was reached: nothing more of the screen is recorded (payload: the reason). */
  capped: 4
} as const

export interface RecordingMeta {
  /** The task whose run the console belonged to; null for a machine's console outside a task (prepare mode). */
  task: number | null
  machine: string
  session: number
  role: 'interactive' | 'view'
  /** When the session opened, ms since the epoch. */
  started: number
}

export interface Recording {
  meta: RecordingMeta
  /** Offsets of the records, in file order. */
  records: { kind: number; time: number; offset: number; length: number }[]
  /** The time of the last record (ms): the recording's length. */
  duration: number
  /** True when the file ends inside a record (the rest was dropped). */
  truncated: boolean
  /** How the session ended (an end record), else null. */
  ended: string | null
  /** Keys and clicks with their times, for the seek bar. */
  input: { time: number; keys: number; clicks: number }[]
  capped: boolean
}

const text = new TextEncoder()
const untext = new TextDecoder()

export function recordingHeader(meta: RecordingMeta): Uint8Array {
  const line = text.encode(`${RECORDING_MAGIC}${JSON.stringify(meta)}\n`)
  if (line.length > MAX_META_BYTES) throw new Error('recording metadata too long')
  return line
}

export function recordHeader(kind: number, time: number, length: number): Uint8Array {
  const b = new Uint8Array(RECORD_HEADER_BYTES)
  const v = new DataView(b.buffer)
  v.setUint8(0, kind)
  v.setUint32(1, Math.max(0, Math.min(0xffffffff, Math.round(time))))
  v.setUint32(5, length)
  return b
}

export function inputPayload(keys: number, clicks: number): Uint8Array {
  const b = new Uint8Array(4)
  const v = new DataView(b.buffer)
  v.setUint16(0, Math.min(0xffff, keys))
  v.setUint16(2, Math.min(0xffff, clicks))
  return b
}

function metaOf(v: unknown): RecordingMeta | null {
  if (typeof v !== 'object' || v === null) return null
  const o = v as Record<string, unknown>
  const task = o.task === null || (typeof o.task === 'number' && Number.isSafeInteger(o.task)) ? o.task : undefined
  if (task === undefined || typeof o.machine !== 'string' || typeof o.session !== 'number' || typeof o.started !== 'number') return null
  return { task, machine: o.machine.slice(0, 256), session: o.session, role: o.role === 'view' ? 'view' : 'interactive', started: o.started }
}

/** Reads a recording's index (not its payloads); throws with the reason when it is not one. */
export function parseRecording(bytes: Uint8Array): Recording {
  const magic = text.encode(RECORDING_MAGIC)
  if (bytes.length < magic.length || magic.some((c, i) => bytes[i] !== c)) throw new Error('not an Aviary console recording (no AVIARY-CONSOLE 1 line)')
  const nl = bytes.indexOf(10, magic.length)
  if (nl < 0 || nl - magic.length > MAX_META_BYTES) throw new Error('the recording has no metadata line')
  let meta: RecordingMeta | null
  try {
    meta = metaOf(JSON.parse(untext.decode(bytes.subarray(magic.length, nl))))
  } catch {
    meta = null
  }
  if (meta === null) throw new Error('the recording metadata is not valid')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const rec: Recording = { meta, records: [], duration: 0, truncated: false, ended: null, input: [], capped: false }
  let at = nl + 1
  while (at < bytes.length) {
    if (at + RECORD_HEADER_BYTES > bytes.length) {
      rec.truncated = true
      break
    }
    const kind = view.getUint8(at)
    const time = view.getUint32(at + 1)
    const length = view.getUint32(at + 5)
    const offset = at + RECORD_HEADER_BYTES
    if (offset + length > bytes.length) {
      rec.truncated = true
      break
    }
    rec.records.push({ kind, time, offset, length })
    // Times only move forward; a hostile or broken file cannot make the player go back.
    rec.duration = Math.max(rec.duration, time)
    if (kind === RecordKind.input && length >= 4) rec.input.push({ time, keys: view.getUint16(offset), clicks: view.getUint16(offset + 2) })
    if (kind === RecordKind.end) rec.ended = untext.decode(bytes.subarray(offset, offset + Math.min(length, 512)))
    if (kind === RecordKind.capped) rec.capped = true
    at = offset + length
  }
  return rec
}

/** Whether a name is one of a task's recordings (`0001.vncrec`). */
export function isRecordingName(name: string): boolean {
  return /^\d{4,6}\.vncrec$/.test(name)
}

export function recordingName(session: number): string {
  return `${String(session).padStart(4, '0')}${RECORDING_SUFFIX}`
}
