// Reads the entries of a tar held in memory. Hand-written (a few dozen lines) because nanotar, the
// small browser-ready reader, ignores the ustar `prefix` field, and that is how tar-stream — which
// writes Aviary's own `all` archives — stores names of 101 to 255 bytes: such files lost their
// folder. This reader takes ustar prefixes, GNU long names (type L) and PAX `path` records
// (type x; global g records are skipped), and returns regular files only.

export interface TarFile { name: string; data: Uint8Array }

export class TarFormatError extends Error {}

const decoder = new TextDecoder()

function str(b: Uint8Array, at: number, len: number): string {
  const view = b.subarray(at, at + len)
  const nul = view.indexOf(0)
  return decoder.decode(nul === -1 ? view : view.subarray(0, nul))
}

/** Octal number field (NUL/space padded), or GNU base-256 when the high bit is set. */
function num(b: Uint8Array, at: number, len: number): number {
  if ((b[at] as number) & 0x80) {
    let v = (b[at] as number) & 0x7f
    for (let i = 1; i < len; i++) v = v * 256 + (b[at + i] as number)
    return v
  }
  const text = str(b, at, len).trim()
  if (text === '') return 0
  if (!/^[0-7]+$/.test(text)) throw new TarFormatError(`bad number field "${text}"`)
  return parseInt(text, 8)
}

/** PAX records: "<len> key=value\n" repeated. */
function paxPath(data: Uint8Array): string | undefined {
  let path: string | undefined
  let at = 0
  while (at < data.length) {
    const space = data.indexOf(0x20, at)
    if (space === -1) break
    const len = Number(decoder.decode(data.subarray(at, space)))
    if (!Number.isInteger(len) || len <= 0) break
    const record = decoder.decode(data.subarray(space + 1, at + len - 1))
    const eq = record.indexOf('=')
    if (eq > 0 && record.slice(0, eq) === 'path') path = record.slice(eq + 1)
    at += len
  }
  return path
}

export function readTar(tar: Uint8Array): TarFile[] {
  const files: TarFile[] = []
  let at = 0
  let longName: string | undefined
  while (at + 512 <= tar.length) {
    const header = tar.subarray(at, at + 512)
    if (header.every((x) => x === 0)) break // end-of-archive blocks
    const size = num(header, 124, 12)
    const type = String.fromCharCode(header[156] || 0x30)
    const dataStart = at + 512
    if (dataStart + size > tar.length) throw new TarFormatError('the archive ends inside a file')
    const data = tar.subarray(dataStart, dataStart + size)
    at = dataStart + Math.ceil(size / 512) * 512
    if (type === 'L') { longName = str(data, 0, data.length); continue }
    if (type === 'x') { longName = paxPath(data) ?? longName; continue }
    if (type === 'g') continue
    let name = str(header, 0, 100)
    if (str(header, 257, 5) === 'ustar') {
      const prefix = str(header, 345, 155)
      if (prefix) name = `${prefix}/${name}`
    }
    if (longName !== undefined) name = longName
    longName = undefined
    if (type === '0' || type === '7' || header[156] === 0) files.push({ name, data })
  }
  if (at < tar.length && at + 512 > tar.length) throw new TarFormatError('the archive ends inside a header')
  return files
}
