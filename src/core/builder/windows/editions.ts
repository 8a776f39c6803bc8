// The editions a Windows ISO can install, and the choice among them. An ISO's editions are the
// images of sources/install.wim (or install.esd, the same format compressed with LZMS); each has
// an index, a name ("Windows 11 Pro") and, under WINDOWS, an edition id, an architecture and a
// build. All of that is the WIM's XML data, uncompressed, whose place the WIM's 208-byte header
// gives. The ISO's file is streamed through 7z (Windows ISOs keep their files in UDF, which xorriso
// does not read) and only the header and the XML are kept: no 4-6 GB copy on disk for four names.
// wimlib's wiminfo, which reads the same fields, is the tests' oracle.
import { spawn } from 'node:child_process'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { WindowsSpecError, type WindowsVersion } from './options'

const run = promisify(execFile)

export interface WindowsEdition {
  index: number
  name: string
  editionId: string | null
  /** WINDOWS/ARCH: 0 x86, 9 x64, 12 arm64; null when the image does not say. */
  arch: number | null
  build: number | null
}

export class IsoReadError extends Error {}

const HEADER_SIZE = 208
const MAGIC = Buffer.from('MSWIM\0\0\0', 'latin1')
/** An install.wim's XML is tens of kilobytes; anything near this is not one. */
const MAX_XML = 16 << 20
const RESHDR_COMPRESSED = 0x04

/** Where the XML data is: the header's `rhXmlData` (offset 72: 7-byte size, flags, offset, original size). */
export function xmlLocation(header: Buffer): { offset: number; size: number } {
  if (header.length < HEADER_SIZE || !header.subarray(0, 8).equals(MAGIC)) throw new IsoReadError('the install image is not a WIM (no MSWIM header)')
  if (header.readUInt32LE(8) !== HEADER_SIZE) throw new IsoReadError(`the WIM header says its size is ${header.readUInt32LE(8)}, not ${HEADER_SIZE}`)
  const size = header.readUIntLE(72, 6) + header.readUInt8(78) * 2 ** 48
  const flags = header.readUInt8(79)
  const offset = Number(header.readBigUInt64LE(80))
  if (flags & RESHDR_COMPRESSED) throw new IsoReadError('the WIM\'s XML data is compressed, which no Windows ISO does')
  if (size < 2 || size > MAX_XML) throw new IsoReadError(`the WIM's XML data is ${size} bytes, not a plausible size`)
  if (offset < HEADER_SIZE || !Number.isSafeInteger(offset)) throw new IsoReadError(`the WIM's XML data is at offset ${offset}, inside its header`)
  return { offset, size }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

function unescape(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, e: string) =>
    e.startsWith('#x') ? String.fromCodePoint(parseInt(e.slice(2), 16)) : e.startsWith('#') ? String.fromCodePoint(Number(e.slice(1))) : ENTITIES[e]!)
}

/** The first `<tag>` text directly in `xml` (not inside a nested element of the same name). */
function child(xml: string, tag: string): string | null {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml)
  return m ? unescape(m[1]!).trim() : null
}

/** The editions of a WIM's XML data (UTF-16LE, with or without its byte order mark). */
export function parseWimXml(data: Buffer): WindowsEdition[] {
  const xml = data.toString('utf16le').replace(/^\ufeff/, '')
  const editions: WindowsEdition[] = []
  for (const m of xml.matchAll(/<IMAGE INDEX="(\d+)">([\s\S]*?)<\/IMAGE>/g)) {
    const body = m[2]!
    const windows = /<WINDOWS>([\s\S]*?)<\/WINDOWS>/.exec(body)?.[1] ?? ''
    // NAME is the image's own; the WINDOWS element holds no NAME, but cut it out to be sure.
    const own = body.replace(/<WINDOWS>[\s\S]*?<\/WINDOWS>/, '')
    const num = (v: string | null): number | null => (v !== null && /^\d+$/.test(v) ? Number(v) : null)
    editions.push({
      index: Number(m[1]),
      name: (child(own, 'NAME') ?? '').slice(0, 256),
      editionId: child(windows, 'EDITIONID')?.slice(0, 64) ?? null,
      arch: num(child(windows, 'ARCH')),
      build: num(child(/<VERSION>([\s\S]*?)<\/VERSION>/.exec(windows)?.[1] ?? '', 'BUILD'))
    })
  }
  if (editions.length === 0) throw new IsoReadError('the WIM\'s XML data lists no image')
  return editions.sort((a, b) => a.index - b.index)
}

/** Reads a WIM's header and XML data from a stream of the file, stopping once it has them. */
export function readWimEditions(stream: NodeJS.ReadableStream, stop: () => void): Promise<WindowsEdition[]> {
  return new Promise((resolve, reject) => {
    const head: Buffer[] = []
    let headLen = 0
    let pos = 0
    let where: { offset: number; size: number } | null = null
    const xml: Buffer[] = []
    let xmlLen = 0
    let settled = false
    const finish = (err: Error | null, value?: WindowsEdition[]): void => {
      if (settled) return
      settled = true
      stream.removeAllListeners('data')
      stop()
      if (err) reject(err)
      else resolve(value!)
    }
    stream.on('data', (chunk: Buffer) => {
      try {
        const start = pos
        pos += chunk.length
        if (!where) {
          head.push(chunk)
          headLen += chunk.length
          if (headLen < HEADER_SIZE) return
          where = xmlLocation(Buffer.concat(head))
          head.length = 0
        }
        const from = Math.max(where.offset, start)
        const to = Math.min(where.offset + where.size, pos)
        if (to > from) {
          xml.push(chunk.subarray(from - start, to - start))
          xmlLen += to - from
        }
        if (xmlLen === where.size) finish(null, parseWimXml(Buffer.concat(xml)))
      } catch (err) {
        finish(err as Error)
      }
    })
    stream.once('end', () => finish(new IsoReadError(where ? `the install image ends at byte ${pos}, before its XML data (${where.offset}+${where.size})` : 'the install image is shorter than a WIM header')))
    stream.once('error', (err: Error) => finish(err))
  })
}

/** The install image's path inside the ISO and the 7z archive type that reads it. */
async function findInstallImage(iso: string, sevenZip: string): Promise<{ path: string; type: string }> {
  // Windows ISOs hold their files in UDF (the ISO 9660 side has only a README); other ISOs in ISO 9660.
  for (const type of ['udf', 'iso']) {
    let listing: string
    try {
      listing = (await run(sevenZip, ['l', '-ba', '-slt', `-t${type}`, iso], { timeout: 120_000, maxBuffer: 64 << 20 })).stdout
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new IsoReadError(`${sevenZip} was not found: install p7zip-full`)
      continue
    }
    const paths = [...listing.matchAll(/^Path = (.+)$/gm)].map((m) => m[1]!.trim())
    const found = paths.find((p) => /^sources[/\\]install\.(wim|esd)$/i.test(p))
    if (found) return { path: found, type }
  }
  throw new IsoReadError(`${iso} has no sources/install.wim or sources/install.esd: is it a Windows 10 or 11 installation ISO?`)
}

/** The editions of a Windows ISO (`7z` from p7zip-full reads UDF and ISO 9660). */
export async function isoEditions(iso: string, o: { sevenZip?: string; timeoutMs?: number } = {}): Promise<WindowsEdition[]> {
  const sevenZip = o.sevenZip ?? '7z'
  const image = await findInstallImage(iso, sevenZip)
  const child = spawn(sevenZip, ['x', '-so', `-t${image.type}`, iso, image.path], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (b: Buffer) => { stderr = (stderr + b.toString()).slice(-2000) })
  const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 600_000)
  try {
    return await readWimEditions(child.stdout, () => { child.stdout.destroy(); child.kill('SIGKILL') })
  } catch (err) {
    const said = stderr.trim().split('\n').filter(Boolean).slice(-1)[0]
    throw new IsoReadError(`reading ${image.path} of ${iso}: ${(err as Error).message}${said ? ` (7z: ${said})` : ''}`)
  } finally {
    clearTimeout(timer)
  }
}

/** Builds of Windows 11 start at 22000; Windows 10's end below it. */
const WINDOWS_11_BUILD = 22000

/**
 * The edition to install: the one asked for (by index or name, any case), else the only one,
 * else Pro (EDITIONID Professional), whose policies the answer file's update and Defender
 * settings rely on (Home ignores policies). Refuses an image that is not x64, or not the version asked for.
 */
export function chooseEdition(editions: WindowsEdition[], wanted: string | null, version: WindowsVersion): WindowsEdition {
  const list = editions.map((e) => `${e.index}: ${e.name}`).join('; ')
  let chosen: WindowsEdition | undefined
  if (wanted !== null) {
    chosen = /^\d+$/.test(wanted) ? editions.find((e) => e.index === Number(wanted)) : editions.find((e) => e.name.toLowerCase() === wanted.toLowerCase())
    if (!chosen) throw new WindowsSpecError('edition', `the ISO has no edition '${wanted}' (it has ${list})`)
  } else if (editions.length === 1) {
    chosen = editions[0]
  } else {
    chosen = editions.find((e) => e.editionId === 'Professional')
    if (!chosen) throw new WindowsSpecError('edition', `the ISO has several editions and none is Pro: choose one with --edition (${list})`)
  }
  if (chosen!.arch !== null && chosen!.arch !== 9) throw new WindowsSpecError('edition', `'${chosen!.name}' is not an x64 image (WIM architecture ${chosen!.arch})`)
  if (chosen!.build !== null) {
    const is11 = chosen!.build >= WINDOWS_11_BUILD
    if (is11 !== (version === '11')) throw new WindowsSpecError('windows-version', `'${chosen!.name}' is build ${chosen!.build}, Windows ${is11 ? '11' : '10'}: give --windows-version ${is11 ? '11' : '10'}`)
  }
  return chosen!
}
