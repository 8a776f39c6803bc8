// strace on Linux guests: the options the sample runs under, and the trace streamed as it is
// written. strace writes into a FIFO (never a file on the guest's disk, which a busy sample could
// fill); the analyzer reads it, feeds each line to the in-guest reader (strace-log.ts: processes,
// files, connections) and sends the bytes unchanged to the result server as logs/strace.log,
// where processing turns them into calls. Backpressure all the way: while the upload is slower
// than strace, reading pauses, strace blocks on its write and the sample waits. Where no FIFO can
// be made, strace writes a file that is read and uploaded the same way once it has exited.
//
// What is traced, and why:
// - %process, %file, %network: processes, every file name a call takes, sockets and addresses;
// - ptrace, prctl, the setuid family, capset, kill/tkill/tgkill, process_vm_*: anti-debugging,
//   renaming, privilege changes, signals to other processes, writes into other processes;
// - mmap/mprotect (processing keeps only PROT_EXEC ones: loaded libraries, code made
//   executable), memfd_create (programs run from memory);
// - getdents64, fchmod/fchown/ftruncate/fchdir, uname/sysinfo, sleeps, module loading, unshare,
//   setns, mount, reboot, sethostname, personality, seccomp, bpf;
// - not read/write: measured on a shell script, tar and Python (docs/reports.md), they multiply
//   the trace by 12 (74 MB instead of 6.2 MB), mostly buffers of pipes and libraries, while what
//   they tell an analyst (which files were read or written) already follows from open's flags.
//   Option strace_io=1 adds them (read, write, pread64, pwrite64) for a task that needs the data.
// -e abbrev=!execve,execveat prints the whole environment of each execve (LD_PRELOAD shows);
// --seccomp-bpf (strace >= 5.3, probed) stops the sample only at the traced calls.
import { spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, constants, createReadStream, openSync, unlinkSync, type ReadStream } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { which } from '../exec.js'
import type { AnalysisConfig } from './config.js'
import { uploadFile, type NetlogLog } from './netlog.js'
import { StraceLog, type StraceResult } from './strace-log.js'
import { STRACE_LOG } from '../../guest-protocol/netlog.js'

const TRACED = [
  '%process', '%file', '%network',
  '?ptrace', '?prctl', '?kill', '?tkill', '?tgkill', '?setuid', '?setgid', '?setreuid', '?setregid', '?setresuid', '?setresgid',
  '?setfsuid', '?setfsgid', '?capset', '?process_vm_readv', '?process_vm_writev',
  '?mmap', '?mprotect', '?pkey_mprotect', '?memfd_create',
  '?getdents', '?getdents64', '?fchmod', '?fchown', '?ftruncate', '?fchdir',
  '?uname', '?sysinfo', '?nanosleep', '?clock_nanosleep',
  '?init_module', '?finit_module', '?delete_module', '?unshare', '?setns', '?reboot', '?sethostname', '?personality', '?seccomp', '?bpf'
]
const IO = ['?read', '?write', '?pread64', '?pwrite64']

/** strace's options before `-o FILE -- program...`. */
export function straceArgs(o: { seccomp: boolean; io: boolean; holdExitUs?: number }): string[] {
  return [
    '-f', '-ttt', '-yy', '-s', '1024', ...(o.seccomp ? ['--seccomp-bpf'] : []),
    '-e', `trace=${[...TRACED, ...(o.io ? IO : [])].join(',')}`, '-e', 'abbrev=!execve,execveat',
    // Process memory dumps (procmem.ts): each exit_group is held at its entry while the dumper looks.
    ...(o.holdExitUs !== undefined ? ['-e', `inject=exit_group:delay_enter=${o.holdExitUs}`] : [])
  ]
}

/** Whether this strace takes --seccomp-bpf (a run of `true` under it). */
function seccompWorks(strace: string): boolean {
  const t = which(['true']) ?? '/bin/true'
  const r = spawnSync(strace, ['-f', '--seccomp-bpf', '-e', 'trace=none', '-o', '/dev/null', '--', t], { stdio: 'ignore', timeout: 10_000 })
  return r.status === 0
}

/** Longest line the in-guest reader looks at (longer ones still go to the host, unread here). */
const MAX_LINE = 1024 * 1024
/** How long the trace may stay open after strace exited (a tracee that kept the FIFO). */
const GRACE_MS = 3000
const UPLOAD_TIMEOUT_MS = 120_000

export interface StraceRun {
  /** The strace command: `[...args, '--', program, ...]` is what the analyzer spawns. */
  file: string
  args: string[]
  /** Hands over the spawned strace (or null when it could not start). */
  started(child: ChildProcess | null): void
  /** The trace, read to its end and uploaded. */
  finish(): Promise<StraceResult>
}

export function startStrace(strace: string, conf: AnalysisConfig, analyzerDir: string, log: NetlogLog, holdExitUs?: number): StraceRun {
  const io = conf.options.get('strace_io') === '1'
  const seccomp = seccompWorks(strace)
  const fifo = join(analyzerDir, 'strace.fifo')
  const useFifo = spawnSync('mkfifo', ['-m', '600', fifo], { stdio: 'ignore' }).status === 0
  const out = useFifo ? fifo : join(analyzerDir, 'strace.log')
  log.info(`strace: ${useFifo ? 'streamed' : 'written to a file, then sent'}${seccomp ? ', seccomp-bpf' : ''}${io ? ', with read/write' : ''}`)

  const parser = new StraceLog()
  let carry = ''
  let skipping = false
  const feed = (chunk: Buffer): void => {
    const text = carry + chunk.toString('latin1')
    const lines = text.split('\n')
    carry = lines.pop() ?? ''
    for (const line of lines) {
      if (skipping) skipping = false
      else parser.line(line)
    }
    if (carry.length > MAX_LINE) {
      carry = ''
      skipping = true
    }
  }

  // The upload: bytes as strace wrote them, with backpressure (see the header).
  const body = new PassThrough({ highWaterMark: 1 << 20 })
  let uploading = true
  const upload = uploadFile(conf, STRACE_LOG, out, [], body).catch((err: unknown) => {
    uploading = false
    body.resume()
    log.warning(`strace.log could not be sent: ${(err as Error).message}`)
  })

  let reader: ReadStream | null = null
  let opened = false
  let lastData = Date.now()
  let readDone!: () => void
  const ended = new Promise<void>((ok) => (readDone = ok))
  const read = (path: string): void => {
    const r = createReadStream(path, { highWaterMark: 256 * 1024 })
    reader = r
    r.on('open', () => {
      opened = true
      // strace has it open too (a FIFO opens once both ends do): nobody else should find it.
      if (useFifo) try { unlinkSync(fifo) } catch { /* gone */ }
    })
    r.on('data', (chunk: Buffer | string) => {
      lastData = Date.now()
      const b = typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk
      feed(b)
      if (uploading && !body.write(b)) {
        r.pause()
        body.once('drain', () => r.resume())
      }
    })
    r.on('error', (err) => {
      log.warning(`reading strace's output: ${err.message}`)
      readDone()
    })
    r.on('close', () => readDone())
  }
  if (useFifo) read(fifo)

  let exited: Promise<void> = Promise.resolve()
  let tracer: ChildProcess | null = null
  const within = (p: Promise<void>, ms: number): Promise<boolean> =>
    Promise.race([p.then(() => true), new Promise<boolean>((ok) => setTimeout(() => ok(false), ms).unref())])
  return {
    file: strace,
    args: [...straceArgs({ seccomp, io, ...(holdExitUs !== undefined ? { holdExitUs } : {}) }), '-o', out],
    started(child) {
      tracer = child
      exited = child === null ? Promise.resolve() : new Promise<void>((ok) => {
        if (child.exitCode !== null || child.signalCode !== null) ok()
        else child.once('exit', () => ok())
      })
    },
    async finish() {
      // The analysis is over: a sample still running (no terminate_processes) is let go. strace
      // blocks the fatal signals (its default with -o and a program, so that a sample killing its
      // process group does not end the trace), so it gets SIGKILL: the kernel detaches its
      // tracees, and its output, written line by line, loses at most the line being written.
      if (!(await within(exited, 2000))) {
        ;(tracer as ChildProcess | null)?.kill('SIGKILL')
        await within(exited, 5000)
      }
      if (!useFifo) read(out)
      else if (!opened) {
        // strace never opened its end (it failed first): open it here so the reader sees the end.
        try {
          closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
        } catch {
          // no reader waiting
        }
      }
      // A tracee that kept a copy of strace's end would hold the FIFO open for ever: once nothing
      // came for a while (and the reader is not just waiting for the upload), the trace is over.
      const watchdog = setInterval(() => {
        const r = reader as ReadStream | null
        if (useFifo && r !== null && !r.isPaused() && Date.now() - lastData > GRACE_MS) r.destroy()
      }, 500)
      await ended
      clearInterval(watchdog)
      if (carry !== '' && !skipping) parser.line(carry)
      body.end()
      const timeout = new Promise<void>((ok) => setTimeout(ok, UPLOAD_TIMEOUT_MS).unref())
      await Promise.race([upload, timeout])
      if (useFifo) try { unlinkSync(fifo) } catch { /* unlinked when opened */ }
      return parser.result()
    }
  }
}
