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
  env?: NodeJS.ProcessEnv
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
      env: o.env ?? process.env,
      detached: o.async,
      windowsHide: true,
      stdio: o.async ? 'ignore' : ['ignore', 'pipe', 'pipe']
    })
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

/** Env var naming the script that agent-main runs instead of the agent (see agent-main.ts). */
export const RUN_SCRIPT_ENV = 'AVIARY_AGENT_RUN_SCRIPT'
export const RUN_ARGS_ENV = 'AVIARY_AGENT_RUN_ARGS'

/** True inside a Node single executable application. */
export function isSea(): boolean {
  try {
    // node:sea exists from Node 20.12; older runtimes are never our SEA.
    const sea = (process.getBuiltinModule?.('node:sea') ?? null) as { isSea(): boolean } | null
    return sea?.isSea() ?? false
  } catch {
    return false
  }
}

/**
 * How to run a JavaScript file with the agent's own runtime: in the SEA, the executable itself
 * with RUN_SCRIPT_ENV set (a SEA always runs its embedded main, which then loads the file);
 * otherwise plain `node file args`.
 */
export function nodeInvocation(file: string, args: string[]): { file: string; args: string[]; env: NodeJS.ProcessEnv } {
  if (isSea()) {
    return {
      file: process.execPath,
      args: [],
      env: { ...process.env, [RUN_SCRIPT_ENV]: file, [RUN_ARGS_ENV]: JSON.stringify(args) }
    }
  }
  return { file: process.execPath, args: [file, ...args], env: { ...process.env } }
}
