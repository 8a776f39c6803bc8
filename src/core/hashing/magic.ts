// A sample's `file_type`: what libmagic says about it. The host's `file` tool is asked first:
// it reads the file through a descriptor, which libmagic needs for ELF details and sizes stored
// at the end of a file, and it is the description analysts compare against. Where there is no
// `file` (Windows and macOS desktops), wasmagic (libmagic 5.45 in WebAssembly, pinned because
// it words PE files as Debian's file 5.44 does) reads the first 7 MiB, as `file` does.
import { execFile } from 'node:child_process'
import { open } from 'node:fs/promises'
import { promisify } from 'node:util'

const run = promisify(execFile)
const HEAD_BYTES = 7 * 1024 * 1024

export type FileTypeDetector = (file: string) => Promise<string | null>

export function createFileTypeDetector(prefer: 'auto' | 'wasm' = 'auto'): FileTypeDetector {
  let useTool = prefer === 'auto'
  let wasm: Promise<(buf: Uint8Array) => string> | null = null
  const viaWasm = async (file: string): Promise<string> => {
    wasm ??= import('wasmagic').then(async ({ WASMagic, WASMagicFlags }) => {
      const magic = await WASMagic.create({ flags: WASMagicFlags.NONE })
      return (buf: Uint8Array) => magic.detect(buf)
    })
    const detect = await wasm
    const fh = await open(file, 'r')
    try {
      const buf = Buffer.alloc(HEAD_BYTES)
      const { bytesRead } = await fh.read(buf, 0, HEAD_BYTES, 0)
      return detect(buf.subarray(0, bytesRead))
    } finally {
      await fh.close()
    }
  }
  return async (file) => {
    if (useTool) {
      try {
        const { stdout } = await run('file', ['-b', file], { timeout: 30_000, maxBuffer: 1 << 20 })
        return stdout.replace(/\n$/, '')
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return null
        useTool = false // no `file` on this host: stop trying
      }
    }
    try {
      return await viaWasm(file)
    } catch {
      return null
    }
  }
}
