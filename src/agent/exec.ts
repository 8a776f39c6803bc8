// Process start for /execute, /execpy and /execnode. Cuckoo's agent hands the command string to
// Popen; we never run a shell unless the client asked for one (`shell` field, as in agent.py), so
// the string is split into arguments here. The splitter is written by hand because it is a dozen
// lines (double and single quotes, backslash-free so Windows paths survive) and a dependency for
// it would have to be bundled into the single-executable agent.
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'

export interface ExecResult {
  stdout: string | null
  stderr: string | null
}

/** Splits a command line on blanks, honouring "double" and 'single' quoted runs. */
export function splitCommand(command: string): string[] {
  const out: string[] = []
  let cur = ''
  let quote: string | null = null
  let started = false
  for (const ch of command) {
    if (quote !== null) {
      if (ch === quote) quote = null
      else cur += ch
    } else if (ch === '"' || ch === "'") {
      quote = ch
      started = true
    } else if (/\s/.test(ch)) {
      if (started || cur !== '') out.push(cur)
      cur = ''
      started = false
    } else {
      cur += ch
    }
  }
  if (started || cur !== '') out.push(cur)
  return out
}

/** The first of `names` found on PATH (with PATHEXT on Windows), or null. */
export function which(names: string[]): string | null {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((d) => d !== '')
  const exts = process.platform === 'win32' ? (process.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : ['']
  for (const name of names) {
    for (const dir of dirs) {
      for (const ext of exts) {
        const candidate = join(dir, name + ext)
        try {
          accessSync(candidate, process.platform === 'win32' ? constants.F_OK : constants.X_OK)
          return candidate
        } catch {
          // not here
        }
      }
    }
  }
  return null
}

export interface StartOptions {
  file: string
  args: string[]
  cwd?: string
  shell?: boolean
  async: boolean
  env: NodeJS.ProcessEnv
  /** Called synchronously once the process exists (before it has run for more than an instant). */
  onSpawned?: (child: ChildProcess) => void
  /** Async only: called with the child once it has started. */
  onStarted?: (child: ChildProcess) => void
}

/**
 * Starts a process. Async: detached, output discarded, resolves once it has started (or rejects
 * if it could not). Sync: waits for the exit and returns its output, like agent.py's communicate().
 */
export function startProcess(o: StartOptions): Promise<ExecResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(o.file, o.args, {
      cwd: o.cwd,
      shell: o.shell ?? false,
      env: o.env,
      detached: o.async,
      windowsHide: true,
      stdio: o.async ? 'ignore' : ['ignore', 'pipe', 'pipe']
    })
    // spawn() returns once the program was executed: the pid is known now, the 'spawn' event only
    // comes on a later turn of the event loop.
    if (child.pid !== undefined) o.onSpawned?.(child)
    child.once('error', reject)
    if (o.async) {
      child.once('spawn', () => {
        child.unref()
        o.onStarted?.(child)
        resolvePromise({ stdout: null, stderr: null })
      })
      return
    }
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout?.on('data', (b: Buffer) => out.push(b))
    child.stderr?.on('data', (b: Buffer) => err.push(b))
    child.once('close', () => {
      resolvePromise({ stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
  })
}

/**
 * How to run a JavaScript file with the agent's own runtime: `<runtime> file args`, where the
 * runtime is node, or the agent's single executable, which runs a script given as its first
 * argument like node does (agent-main.ts). Nothing goes into the environment: the analyzer passes
 * its environment on to the sample.
 */
export function nodeInvocation(file: string, args: string[]): { file: string; args: string[] } {
  return { file: process.execPath, args: [file, ...args] }
}
