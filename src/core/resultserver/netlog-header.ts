// The header of a result-server connection (Cuckoo 2.0.7's wire protocol, cuckoo/core/resultserver.py):
// `LOG`, `BSON <pid>`, `FILE` + path, or `FILE 2` + path, guest path and pids, each line ending in
// '\n' and at most 4096 bytes. Read under one deadline for the whole header, so a guest trickling
// bytes cannot hold a connection in this phase. Bytes that arrived after the header are returned
// so the body stream loses nothing. Written by hand: the framing is Cuckoo's own, no library has it.
// Aviary's analyzer puts `AVIARY-RUN <id>` before the header (src/guest-protocol/run-identity.ts):
// it is parsed here and handed on as `run`.
import type { Socket } from 'node:net'
import { MAX_NETLOG_LINE } from '../../guest-protocol/netlog'
import { isRunId, RUN_LINE_WORD } from '../../guest-protocol/run-identity'
import { replaceInvisible } from '../../shared/invisible'

/** Cuckoo's MAX_NETLOG_LINE: a header line longer than this (without its '\n') is refused. */
export const MAX_HEADER_LINE = MAX_NETLOG_LINE

export type Header =
  | { kind: 'log' }
  | { kind: 'bson'; pid: string }
  | { kind: 'file'; version: 1 | 2; path: string; guestPath: string | null; pids: number[] }

export class HeaderError extends Error {}

const PID = /^\d{1,10}$/

interface Parsed { header: Header; consumed: number; run: string | null }

/** The next '\n'-terminated line from `from`, null when it has not fully arrived yet. */
function nextLine(buf: Buffer, from: number): { line: Buffer; next: number } | null {
  const nl = buf.indexOf(10, from)
  if (nl === -1) {
    if (buf.length - from > MAX_HEADER_LINE) throw new HeaderError('header line longer than 4096 bytes')
    return null
  }
  if (nl - from > MAX_HEADER_LINE) throw new HeaderError('header line longer than 4096 bytes')
  return { line: buf.subarray(from, nl), next: nl + 1 }
}

/** A guest's bytes quoted for a message: JSON escapes C0; the rest of the invisible set (C1, soft hyphen) is escaped too. */
const printable = (b: Buffer): string =>
  replaceInvisible(JSON.stringify(b.subarray(0, 64).toString('latin1')), (cp) => `\\u${cp.toString(16).padStart(4, '0')}`)

/** Parses a complete header (and a run line before it) from the start of `buf`; null if more bytes are needed. Throws HeaderError. */
export function parseHeader(buf: Buffer): Parsed | null {
  const first = nextLine(buf, 0)
  if (first === null) return null
  const words = first.line.toString('latin1').split(' ')
  if (words[0] !== RUN_LINE_WORD) {
    const parsed = parseCommand(buf, 0)
    return parsed === null ? null : { ...parsed, run: null }
  }
  if (words.length !== 2 || !isRunId(words[1])) throw new HeaderError(`bad run line ${printable(first.line)}`)
  const parsed = parseCommand(buf, first.next)
  return parsed === null ? null : { header: parsed.header, consumed: parsed.consumed, run: words[1] }
}

function parseCommand(buf: Buffer, from: number): Omit<Parsed, 'run'> | null {
  const first = nextLine(buf, from)
  if (first === null) return null
  const cmd = first.line.toString('latin1')
  if (cmd === 'LOG') return { header: { kind: 'log' }, consumed: first.next }
  if (cmd.startsWith('BSON')) {
    const pid = cmd.slice(5)
    // 2.0.7 stores nothing for a bare `BSON` (very old monitors); neither do we.
    if (cmd[4] !== ' ' || !PID.test(pid)) throw new HeaderError(`bad BSON header ${printable(first.line)}`)
    return { header: { kind: 'bson', pid: String(Number(pid)) }, consumed: first.next }
  }
  let version: 1 | 2
  if (cmd === 'FILE' || cmd === 'FILE 1') version = 1
  else if (cmd === 'FILE 2') version = 2
  else throw new HeaderError(`unknown command ${printable(first.line)}`)
  const pathLine = nextLine(buf, first.next)
  if (pathLine === null) return null
  const path = pathLine.line.toString('utf8')
  if (version === 1) return { header: { kind: 'file', version, path, guestPath: null, pids: [] }, consumed: pathLine.next }
  const guestLine = nextLine(buf, pathLine.next)
  if (guestLine === null) return null
  const pidsLine = nextLine(buf, guestLine.next)
  if (pidsLine === null) return null
  const words = pidsLine.line.toString('latin1').split(/\s+/).filter((w) => w !== '')
  if (!words.every((w) => PID.test(w))) throw new HeaderError(`bad pids line ${printable(pidsLine.line)}`)
  const guestPath = guestLine.line.toString('utf8').trim()
  return {
    header: { kind: 'file', version, path, guestPath: guestPath === '' ? null : guestPath, pids: words.map(Number) },
    consumed: pidsLine.next
  }
}

/**
 * Reads the header from a fresh socket. On success the socket is paused and whatever followed the
 * header is in `rest` (to be handled before further socket data). Rejects with HeaderError on a
 * malformed or late header, or when the connection ends first.
 */
export function readHeader(socket: Socket, timeoutMs: number): Promise<{ header: Header; rest: Buffer; run: string | null }> {
  return new Promise((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0)
    const done = (err: Error | null, parsed?: Parsed): void => {
      clearTimeout(timer)
      socket.off('data', onData)
      socket.off('end', onEnd)
      socket.off('close', onEnd)
      socket.off('error', onError)
      if (err !== null || parsed === undefined) {
        reject(err ?? new HeaderError('no header'))
      } else {
        resolve({ header: parsed.header, rest: buf.subarray(parsed.consumed), run: parsed.run })
      }
    }
    const onData = (chunk: Buffer): void => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
      let parsed: Parsed | null
      try {
        parsed = parseHeader(buf)
      } catch (err) {
        done(err as Error)
        return
      }
      if (parsed !== null) {
        socket.pause()
        done(null, parsed)
      }
    }
    const onEnd = (): void => done(new HeaderError('connection closed before the header was complete'))
    const onError = (err: Error): void => done(new HeaderError(`connection error during the header: ${err.message}`))
    const timer = setTimeout(() => done(new HeaderError(`no complete header within ${timeoutMs} ms`)), timeoutMs)
    socket.on('data', onData)
    socket.on('end', onEnd)
    socket.on('close', onEnd)
    socket.on('error', onError)
  })
}
