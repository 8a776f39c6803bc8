// Helpers for archives.test.ts: the real tools, /proc inspection, stream plumbing.
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import fs from 'node:fs'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'

const TOOLS = ['tar', 'bzip2', 'unzip', 'zipinfo', 'python3', 'mkfifo']

/** Fails, never skips, when a tool the checks rely on is missing. */
export function requireTools(): void {
  for (const tool of TOOLS) {
    const probe = spawnSync(tool, ['--help'], { stdio: 'ignore' })
    if (probe.error) throw new Error(`required tool "${tool}" is not installed (${probe.error.message}); these tests need it`)
  }
}

export function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex')
}

export async function toFile(stream: Readable, file: string): Promise<string> {
  await pipeline(stream, fs.createWriteStream(file))
  return file
}

export async function toBuffer(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

// A UTF-8 locale, or GNU tar prints non-ASCII names as octal escapes.
const TOOL_ENV = { ...process.env, LC_ALL: 'C.UTF-8' }

export function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: TOOL_ENV })
}

/** Every regular file below `dir`, following links except `skip`, as relative path → sha256. */
export function digests(dir: string, skip: Set<string>, prefix = ''): Map<string, string> {
  const out = new Map<string, string>()
  for (const name of fs.readdirSync(dir).sort()) {
    if (skip.has(`${prefix}${name}`)) continue
    const full = path.join(dir, name)
    const st = fs.statSync(full)
    if (st.isDirectory()) for (const [k, v] of digests(full, skip, `${prefix}${name}/`)) out.set(k, v)
    else if (st.isFile()) out.set(`${prefix}${name}`, sha256(full))
  }
  return out
}

/** Children of this process named `comm`, from /proc (zombies included: they still have an entry). */
export function childProcesses(comm: string): number[] {
  if (!fs.existsSync('/proc/self/stat')) throw new Error('this test reads /proc to find child processes; /proc is not mounted')
  const pids: number[] = []
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // exited while listing
    }
    const close = stat.lastIndexOf(')')
    const name = stat.slice(stat.indexOf('(') + 1, close)
    const ppid = Number(stat.slice(close + 2).split(' ')[1])
    if (name === comm && ppid === process.pid) pids.push(Number(entry))
  }
  return pids
}

export function openFdsTo(file: string): number {
  return fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`) === file
    } catch {
      return false
    }
  }).length
}

/** Consumes at least `n` bytes, leaving the rest of the stream to read. */
export async function readAtLeast(stream: Readable, n: number): Promise<void> {
  let got = 0
  while (got < n) {
    const chunk = stream.read() as Buffer | null
    if (chunk) got += chunk.length
    else await once(stream, 'readable')
  }
}

export async function waitFor(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (check()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return check()
}
