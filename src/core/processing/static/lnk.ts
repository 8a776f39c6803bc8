// `static.lnk`: a Windows shortcut ([MS-SHLLINK]) as Cuckoo 2.0.7 reports one: its flags and the
// target's attributes, the target's path (local base path, or network share and drive, with the
// remaining path), and the shortcut's strings (description, relative path, working directory,
// command-line arguments, icon). Aviary adds what a malicious shortcut hides behind: the target
// named by an EnvironmentVariableDataBlock (%COMSPEC%, %windir%\System32\…, used when there is no
// link info), the window it opens (minimized, to hide a console) and the target's times.
//
// Read here, from the bytes: no maintained npm package parses .lnk files (`lnk` makes symbolic
// links; `windows-shortcuts` drives a Windows program). The format is a header, optional
// sections of known sizes and counted strings: every offset and count is checked against the
// file, so a hostile shortcut gives an `error`, never a throw.
import { Closed, Type, type Static } from '../schema.js'

const HEADER_SIZE = 0x4c
const CLSID = Buffer.from('0114020000000000c000000000000046', 'hex')
const MAX_STRING = 32 * 1024

/** LinkFlags bits 0-6, named as Cuckoo names them. */
const FLAG_NAMES = ['shellidlist', 'references', 'description', 'relapath', 'workingdir', 'cmdline', 'icon'] as const
const IS_UNICODE = 1 << 7
/** FileAttributes bits, as Cuckoo names them (bit 3 is reserved). */
const ATTR_NAMES = ['readonly', 'hidden', 'system', null, 'directory', 'archive', 'ntfs_efs', 'normal', 'temporary', 'sparse', 'reparse', 'compressed', 'offline', 'not_indexed', 'encrypted'] as const
const SHOW: Record<number, string> = { 1: 'normal', 3: 'maximized', 7: 'minimized' }

export const LnkSchema = Closed({
  flags: Closed(Object.fromEntries(FLAG_NAMES.map((f) => [f, Type.Boolean()])) as Record<(typeof FLAG_NAMES)[number], ReturnType<typeof Type.Boolean>>),
  attrs: Type.Array(Type.String()),
  basepath: Type.Optional(Type.String()),
  net_share: Type.Optional(Type.String()),
  network_drive: Type.Optional(Type.String()),
  remaining_path: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  relapath: Type.Optional(Type.String()),
  workingdir: Type.Optional(Type.String()),
  /** The arguments the target is started with. */
  cmdline: Type.Optional(Type.String()),
  icon: Type.Optional(Type.String()),
  /** The target named by an EnvironmentVariableDataBlock, environment variables unexpanded. */
  environment_target: Type.Optional(Type.String()),
  /** How the target's window is shown: normal, maximized or minimized. */
  show_window: Type.Optional(Type.String()),
  /** The target's times as the shortcut recorded them (ISO 8601, UTC); absent when zero. */
  created: Type.Optional(Type.String()),
  accessed: Type.Optional(Type.String()),
  modified: Type.Optional(Type.String()),
  error: Type.Optional(Type.String())
})
export type LnkFacts = Static<typeof LnkSchema>

/** A shortcut's first bytes: the header size and the shell link CLSID. */
export function isLnk(head: Buffer): boolean {
  return head.length >= 20 && head.readUInt32LE(0) === HEADER_SIZE && head.subarray(4, 20).equals(CLSID)
}

class Cut extends Error {}

function need(buf: Buffer, at: number, n: number, what: string): void {
  if (at < 0 || n < 0 || at + n > buf.length) throw new Cut(`${what} runs past the end of the file (at ${at}, ${n} bytes)`)
}

/** A NUL-terminated string of the system code page (read as Windows-1252), within `end`. */
function stringz(buf: Buffer, at: number, end: number, what: string): string {
  need(buf, at, 1, what)
  const stop = buf.indexOf(0, at)
  const to = stop < 0 || stop > end ? Math.min(end, at + MAX_STRING) : Math.min(stop, at + MAX_STRING)
  return new TextDecoder('windows-1252').decode(buf.subarray(at, to))
}

function stringzUnicode(buf: Buffer, at: number, end: number): string {
  let to = at
  while (to + 1 < end && to - at < 2 * MAX_STRING && (buf[to] !== 0 || buf[to + 1] !== 0)) to += 2
  return buf.subarray(at, to).toString('utf16le')
}

function filetime(buf: Buffer, at: number): string | undefined {
  const v = buf.readBigUInt64LE(at)
  if (v === 0n) return undefined
  const ms = Number(v / 10000n) - 11_644_473_600_000
  const d = new Date(ms)
  return Number.isFinite(d.getTime()) && ms > 0 && ms < 8.64e15 ? d.toISOString() : undefined
}

/** `static.lnk` of a shortcut's bytes. */
export function analyzeLnk(buf: Buffer): LnkFacts {
  const linkFlags = buf.length >= HEADER_SIZE ? buf.readUInt32LE(0x14) : 0
  const attrs = buf.length >= HEADER_SIZE ? buf.readUInt32LE(0x18) : 0
  const facts: LnkFacts = {
    flags: Object.fromEntries(FLAG_NAMES.map((f, i) => [f, (linkFlags & (1 << i)) !== 0])) as LnkFacts['flags'],
    attrs: ATTR_NAMES.flatMap((a, i) => (a !== null && (attrs & (1 << i)) !== 0 ? [a] : []))
  }
  try {
    need(buf, 0, HEADER_SIZE, 'the header')
    const created = filetime(buf, 0x1c)
    const accessed = filetime(buf, 0x24)
    const modified = filetime(buf, 0x2c)
    if (created) facts.created = created
    if (accessed) facts.accessed = accessed
    if (modified) facts.modified = modified
    const show = SHOW[buf.readUInt32LE(0x3c)]
    if (show) facts.show_window = show
    let at = HEADER_SIZE
    if (facts.flags.shellidlist) {
      need(buf, at, 2, 'the target ID list')
      at += 2 + buf.readUInt16LE(at)
    }
    if (facts.flags.references) {
      need(buf, at, 28, 'the link info')
      const size = buf.readUInt32LE(at)
      const headerSize = buf.readUInt32LE(at + 4)
      const infoFlags = buf.readUInt32LE(at + 8)
      need(buf, at, size, 'the link info')
      const end = at + size
      if ((infoFlags & 1) !== 0) {
        const unicode = headerSize >= 0x24 && size >= 0x24 ? buf.readUInt32LE(at + 0x1c) : 0
        facts.basepath = unicode > 0 ? stringzUnicode(buf, at + unicode, end) : stringz(buf, at + buf.readUInt32LE(at + 16), end, 'the base path')
      }
      if ((infoFlags & 2) !== 0) {
        const net = at + buf.readUInt32LE(at + 20)
        need(buf, net, 20, 'the network link')
        facts.net_share = stringz(buf, net + buf.readUInt32LE(net + 8), end, 'the share name')
        if ((buf.readUInt32LE(net + 4) & 1) !== 0) facts.network_drive = stringz(buf, net + buf.readUInt32LE(net + 12), end, 'the drive name')
      }
      const suffixUnicode = headerSize >= 0x24 && size >= 0x24 ? buf.readUInt32LE(at + 0x20) : 0
      facts.remaining_path = suffixUnicode > 0 ? stringzUnicode(buf, at + suffixUnicode, end) : stringz(buf, at + buf.readUInt32LE(at + 24), end, 'the remaining path')
      at = end
    }
    const unicode = (linkFlags & IS_UNICODE) !== 0
    for (const key of ['description', 'relapath', 'workingdir', 'cmdline', 'icon'] as const) {
      if (!facts.flags[key]) continue
      need(buf, at, 2, `the ${key} string`)
      const count = buf.readUInt16LE(at)
      const bytes = unicode ? count * 2 : count
      need(buf, at + 2, bytes, `the ${key} string`)
      facts[key] = unicode ? buf.subarray(at + 2, at + 2 + bytes).toString('utf16le') : new TextDecoder('windows-1252').decode(buf.subarray(at + 2, at + 2 + bytes))
      at += 2 + bytes
    }
    // Extra data blocks, until the terminal block (size < 4): the environment variable target.
    for (let blocks = 0; at + 8 <= buf.length && blocks < 64; blocks++) {
      const size = buf.readUInt32LE(at)
      if (size < 4) break
      need(buf, at, size, 'an extra data block')
      if (buf.readUInt32LE(at + 4) === 0xa0000001 && size >= 0x314) {
        const wide = stringzUnicode(buf, at + 0x10c, at + 0x314)
        facts.environment_target = wide !== '' ? wide : stringz(buf, at + 8, at + 0x10c, 'the environment target')
      }
      at += size
    }
  } catch (err) {
    if (!(err instanceof Cut)) throw err
    facts.error = err.message
  }
  return facts
}
