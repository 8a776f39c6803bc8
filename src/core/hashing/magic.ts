// A sample's `file_type`: what libmagic says about it. The host's `file` tool is asked first:
// it reads the file through a descriptor, which libmagic needs for ELF details and sizes stored
// at the end of a file, and it is the description analysts compare against. Where there is no
// `file` (Windows and macOS desktops), wasmagic (libmagic 5.45 in WebAssembly, pinned because
// it words PE files as Debian's file 5.44 does) reads the first 7 MiB, as `file` does.
//
// Many files at once (a run's dropped files) go to a few long-lived `file -b -n -f -` processes
// instead of one `file` per file: starting a process from the service costs more than typing a
// small file (measured: ~45 ms a dropped file when each started its own `file`; docs/benchmarks.md).
// Each process reads names on its stdin, one per line, and answers each with one line, flushed
// (-n), in order; a name that cannot be written on one line (it holds a line break) gets a
// `file -b NAME` of its own. A process that dies or stalls costs the file it was on its type
// (null, as that file's own `file -b` failing would), and the names after it go to a new process.
import { execFile, spawn } from 'node:child_process'
import { open } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { promisify } from 'node:util'

const run = promisify(execFile)
const HEAD_BYTES = 7 * 1024 * 1024
/** How long `file` may take over one file before it counts as failed (its type is then null). */
const FILE_TIMEOUT_MS = 30_000
/** The longest answer taken for one file; a longer one counts as failed (execFile's maxBuffer did so). */
const MAX_ANSWER = 1 << 20
/** Names written to one process ahead of its answers: enough to keep it busy, few to hand over if it dies. */
const IN_FLIGHT = 32
/** Files per process at least: for fewer, a second process costs more than it saves. */
const FILES_PER_LANE = 64

export interface FileTypeDetector {
  /** What `file -b FILE` prints (without the line break), or null when that failed. */
  (file: string): Promise<string | null>
  /** The same for each of `files`, in their order, typed by a few batched processes. */
  many(files: readonly string[]): Promise<(string | null)[]>
}

export interface FileTypeOptions {
  /** Processes typing files at once in many() (default: the cores, at most 4). */
  lanes?: number
  /** How long one file may take (default 30 s). */
  fileTimeoutMs?: number
}

export function createFileTypeDetector(prefer: 'auto' | 'wasm' = 'auto', opts: FileTypeOptions = {}): FileTypeDetector {
  let useTool = prefer === 'auto'
  let wasm: Promise<(buf: Uint8Array) => string> | null = null
  const fileTimeoutMs = opts.fileTimeoutMs ?? FILE_TIMEOUT_MS
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
  const wasmOrNull = (file: string): Promise<string | null> => viaWasm(file).catch(() => null)
  const one = async (file: string): Promise<string | null> => {
    if (useTool) {
      try {
        // `--`: a name that starts with a dash is a name, not an option ("-" alone is stdin: ./-).
        const { stdout } = await run('file', ['-b', '--', file === '-' ? './-' : file], { timeout: fileTimeoutMs, maxBuffer: MAX_ANSWER })
        return stdout.replace(/\n$/, '')
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return null
        useTool = false // no `file` on this host: stop trying
      }
    }
    return wasmOrNull(file)
  }
  const many = async (files: readonly string[]): Promise<(string | null)[]> => {
    const out: (string | null)[] = new Array<string | null>(files.length).fill(null)
    const alone: number[] = []
    const queue: number[] = []
    // `file -f` takes a name per line.
    files.forEach((f, i) => (f.includes('\n') ? alone : queue).push(i))
    if (useTool && queue.length > 0) {
      const lanes = Math.max(1, Math.min(opts.lanes ?? Math.min(availableParallelism(), 4), Math.ceil(queue.length / FILES_PER_LANE)))
      const missing = await typeInLanes(files, queue, out, lanes, fileTimeoutMs)
      if (missing) useTool = false // no `file` on this host
    }
    if (!useTool) for (const i of queue) out[i] = await wasmOrNull(files[i]!)
    for (const i of alone) out[i] = await one(files[i]!)
    return out
  }
  return Object.assign(one, { many })
}

/**
 * Types files[i] for every i of `queue` into out[i] with `lanes` processes of `file -b -n -f -`,
 * each taking the next name from the shared queue as it answers one. Resolves true when `file`
 * does not exist (nothing typed).
 */
async function typeInLanes(files: readonly string[], queue: number[], out: (string | null)[], lanes: number, fileTimeoutMs: number): Promise<boolean> {
  let next = 0
  let missing = false
  const lane = async (): Promise<void> => {
    // One process until the queue is empty; a new one after a process that died or stalled.
    while (next < queue.length && !missing) {
      const sent: number[] = [] // indexes written to this process and not answered yet, in order
      const failed = await new Promise<number | 'missing' | null>((resolve) => {
        const child = spawn('file', ['-b', '-n', '-f', '-'], { stdio: ['pipe', 'pipe', 'ignore'] })
        let partial: Buffer[] = []
        let partialBytes = 0
        let timer: NodeJS.Timeout | undefined
        let done = false
        let ended = false // stdin closed: every name sent has its answer, nothing more is written
        const finish = (v: number | 'missing' | null): void => {
          if (done) return
          done = true
          clearTimeout(timer)
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
          resolve(v)
        }
        // The file `file` is on is the first one sent and not answered; it fails when `file` takes too long over it.
        const arm = (): void => {
          clearTimeout(timer)
          if (sent.length > 0) timer = setTimeout(() => finish(sent[0]!), fileTimeoutMs)
        }
        const feed = (): void => {
          if (ended) return
          let text = ''
          while (sent.length < IN_FLIGHT && next < queue.length) {
            const i = queue[next++]!
            sent.push(i)
            // `file` reads its stdin for a name that is just "-": that file is ./-
            text += `${files[i] === '-' ? './-' : files[i]}\n`
          }
          if (text !== '') child.stdin.write(text)
          if (next >= queue.length && sent.length === 0) {
            ended = true
            child.stdin.end()
          }
        }
        const answer = (line: Buffer): void => {
          const i = sent.shift()
          if (i === undefined) return // more lines than names: cannot happen with one line per name
          const text = line.toString('utf8')
          // `file -b NAME` prints "ERROR: ..." and exits 1 where libmagic failed on the file: null, as for that run.
          out[i] = text.startsWith('ERROR: ') ? null : text
        }
        child.stdin.on('error', () => undefined) // a process that died: its exit says what happened
        child.stdout.on('data', (chunk: Buffer) => {
          let at = 0
          for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, at)) {
            partial.push(chunk.subarray(at, nl))
            answer(partial.length === 1 ? partial[0]! : Buffer.concat(partial))
            partial = []
            partialBytes = 0
            at = nl + 1
          }
          if (at < chunk.length) {
            partial.push(chunk.subarray(at))
            partialBytes += chunk.length - at
            if (partialBytes > MAX_ANSWER && sent.length > 0) return finish(sent[0]!)
          }
          arm()
          feed()
        })
        child.once('error', (err: NodeJS.ErrnoException) => finish(err.code === 'ENOENT' ? 'missing' : sent[0] ?? null))
        // Every name answered: done. Else the first name not answered was being typed when it died.
        child.once('close', () => finish(sent[0] ?? null))
        feed()
        arm()
      })
      if (failed === 'missing') {
        missing = true
        next = queue.length
        return
      }
      // The failed file keeps its null; the names sent after it go back to the queue.
      if (failed !== null) {
        const rest = sent.slice(sent.indexOf(failed) + 1)
        queue.splice(next, 0, ...rest)
      }
    }
  }
  await Promise.all(Array.from({ length: lanes }, lane))
  return missing
}
