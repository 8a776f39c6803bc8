// Why a sample did not start, in the words a shell would use. The kernel's execve answers ENOENT
// ("No such file or directory") both when the program is missing and when what it needs to run is:
// the interpreter its first line names (`#!/nonexistent/interp`), or an ELF program's loader (its
// PT_INTERP, e.g. /lib/ld-musl-x86_64.so.1 on a glibc system). strace shows only the errno, so the
// sample's first bytes are read here and the missing file is named, as shells do ("bad
// interpreter: /nonexistent/interp").
import { closeSync, existsSync, openSync, readSync } from 'node:fs'

/** The first `n` bytes of `file` (fewer when it is shorter), or null when it cannot be read. */
function head(file: string, n: number, at = 0): Buffer | null {
  let fd: number | null = null
  try {
    fd = openSync(file, 'r')
    const buf = Buffer.alloc(n)
    return buf.subarray(0, readSync(fd, buf, 0, n, at))
  } catch {
    return null
  } finally {
    if (fd !== null) closeSync(fd)
  }
}

/** The interpreter a `#!` line names (its first word), or null. */
export function shebangInterpreter(bytes: Buffer): string | null {
  if (bytes.length < 3 || bytes[0] !== 0x23 || bytes[1] !== 0x21) return null
  const line = bytes.subarray(2).toString('latin1').split('\n')[0]!
  const word = line.trim().split(/[ \t]/)[0] ?? ''
  return word === '' ? null : word
}

/** The loader an ELF program asks for (PT_INTERP), or null (not ELF, static, or unreadable). */
export function elfInterpreter(file: string): string | null {
  const h = head(file, 64)
  if (h === null || h.length < 52 || h.readUInt32BE(0) !== 0x7f454c46) return null
  const is64 = h[4] === 2
  const le = h[5] === 1
  const u16 = (b: Buffer, o: number): number => (le ? b.readUInt16LE(o) : b.readUInt16BE(o))
  const u32 = (b: Buffer, o: number): number => (le ? b.readUInt32LE(o) : b.readUInt32BE(o))
  const uN = (b: Buffer, o: number): number => (is64 ? Number(le ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o)) : u32(b, o))
  if (is64 && h.length < 64) return null
  const phoff = uN(h, is64 ? 32 : 28)
  const phentsize = u16(h, is64 ? 54 : 42)
  const phnum = Math.min(u16(h, is64 ? 56 : 44), 64)
  if (phentsize < (is64 ? 56 : 32) || !Number.isSafeInteger(phoff)) return null
  const table = head(file, phentsize * phnum, phoff)
  if (table === null) return null
  for (let i = 0; i + phentsize <= table.length; i += phentsize) {
    if (u32(table, i) !== 3) continue // PT_INTERP
    const offset = uN(table, i + (is64 ? 8 : 4))
    const size = Math.min(uN(table, i + (is64 ? 32 : 16)), 4096)
    const text = head(file, size, offset)
    return text === null ? null : text.toString('latin1').replace(/\0.*$/s, '') || null
  }
  return null
}

/**
 * `error` (strace's words for the failed execve of `target`, "No such file or directory (ENOENT)")
 * with the missing interpreter named when that is what was missing; otherwise `error` unchanged.
 */
export function explainStartError(target: string, error: string): string {
  if (!error.endsWith('(ENOENT)') || !existsSync(target)) return error
  const bytes = head(target, 256)
  const script = bytes === null ? null : shebangInterpreter(bytes)
  if (script !== null && !existsSync(script)) return `bad interpreter: ${script}: ${error}`
  const loader = elfInterpreter(target)
  if (loader !== null && !existsSync(loader)) return `missing ELF interpreter ${loader}: ${error}`
  return error
}
