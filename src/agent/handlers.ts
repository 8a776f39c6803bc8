// The endpoint handlers of the agent, one function per route of Cuckoo 2.0.7's agent.py (version
// "0.10"), plus Aviary's /execnode. Each takes the parsed form and returns a JSON answer or throws
// HttpError; agent.ts does routing, pinning and the wire. Every path the host names must be
// absolute on this guest (paths.ts).
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, copyFile, mkdir, open, rename, rm, stat, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RUN_FIELD } from '../guest-protocol/agent-api.js'
import { isRunId } from '../guest-protocol/run-identity.js'
import type { Analyses } from './analyses.js'
import { nodeInvocation, splitCommand, startProcess, which } from './exec.js'
import { HttpError, type FormBody } from './http-body.js'
import { absolutePath } from './paths.js'
import { extractZip } from './zip-extract.js'

export type Json = { message: string } & Record<string, unknown>

export function required(form: FormBody, name: string, what = name): string {
  const v = form.fields.get(name)
  if (v === undefined) throw new HttpError(400, `No ${what} has been provided`)
  return v
}

/** A required path field, absolute on this guest. */
function requiredPath(form: FormBody, name: string, what = name): string {
  return absolutePath(name, required(form, name, what))
}

/** An optional path field, absolute on this guest when present. */
function optionalPath(form: FormBody, name: string): string | undefined {
  const v = form.fields.get(name)
  return v === undefined ? undefined : absolutePath(name, v)
}

async function moveInto(src: string, dest: string): Promise<void> {
  try {
    await rename(src, dest)
  } catch {
    // Another filesystem (or Windows refusing to replace): copy, then drop the temp file.
    await copyFile(src, dest)
    await unlink(src).catch(() => {})
  }
}

export async function mkdirHandler(form: FormBody): Promise<Json> {
  const dirpath = requiredPath(form, 'dirpath', 'dirpath')
  const mode = Number.parseInt(form.fields.get('mode') ?? '511', 10)
  try {
    await mkdir(dirpath, { recursive: false, mode: Number.isFinite(mode) ? mode : 0o777 })
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') await mkdir(dirpath, { recursive: true, mode: 0o777 })
    else throw new HttpError(500, 'Error creating directory')
  }
  return { message: 'Successfully created directory' }
}

async function makeTemp(form: FormBody, kind: 'file' | 'dir'): Promise<string> {
  const suffix = form.fields.get('suffix') ?? ''
  const prefix = form.fields.get('prefix') ?? 'tmp'
  const dir = optionalPath(form, 'dirpath') ?? tmpdir()
  for (let i = 0; i < 100; i++) {
    const path = join(dir, `${prefix}${randomBytes(6).toString('base64url').replace(/[-_]/g, 'x')}${suffix}`)
    try {
      if (kind === 'dir') await mkdir(path, { mode: 0o700 })
      else await (await open(path, 'wx', 0o600)).close()
      return path
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') break
    }
  }
  throw new HttpError(500, `Error creating temporary ${kind === 'dir' ? 'directory' : 'file'}`)
}

export async function mktempHandler(form: FormBody): Promise<Json> {
  return { message: 'Successfully created temporary file', filepath: await makeTemp(form, 'file') }
}

export async function mkdtempHandler(form: FormBody): Promise<Json> {
  return { message: 'Successfully created temporary directory', dirpath: await makeTemp(form, 'dir') }
}

export async function storeHandler(form: FormBody): Promise<Json> {
  const file = form.files.get('file')
  if (file === undefined) throw new HttpError(400, 'No file has been provided')
  const filepath = requiredPath(form, 'filepath')
  try {
    await moveInto(file.tempPath, filepath)
  } catch {
    throw new HttpError(500, 'Error storing file')
  }
  return { message: 'Successfully stored file' }
}

export async function extractHandler(form: FormBody): Promise<Json> {
  const zip = form.files.get('zipfile')
  if (zip === undefined) throw new HttpError(400, 'No zip file has been provided')
  const dirpath = requiredPath(form, 'dirpath')
  await extractZip(zip.tempPath, dirpath)
  return { message: 'Successfully extracted zip file' }
}

export async function removeHandler(form: FormBody): Promise<Json> {
  const path = requiredPath(form, 'path')
  const info = await stat(path).catch(() => null)
  if (info === null) throw new HttpError(404, 'Path provided does not exist')
  try {
    if (info.isDirectory()) {
      await rm(path, { recursive: true, force: true })
      return { message: 'Successfully deleted directory' }
    }
    await chmod(path, 0o666).catch(() => {})
    await unlink(path)
    return { message: 'Successfully deleted file' }
  } catch {
    throw new HttpError(500, 'Error removing file or directory')
  }
}

function execFailed(err: unknown): never {
  throw new HttpError(500, `Error executing command: ${(err as Error).message}`)
}

/** The run an analyzer belongs to (`run` field), or null; a malformed one is refused. */
function runOf(form: FormBody): string | null {
  const run = form.fields.get(RUN_FIELD)
  if (run === undefined) return null
  if (!isRunId(run)) throw new HttpError(400, `${RUN_FIELD}: not a run id (32 lower-case hex digits)`)
  return run
}

/**
 * The process-starting routes, bound to the agent's record of analyses (analyses.ts): every
 * process they start is held there, and gets the environment the agent was started with.
 */
export function execHandlers(analyses: Analyses): Record<'execute' | 'execpy' | 'execnode', (form: FormBody) => Promise<Json>> {
  const contain = (child: ChildProcess): void => analyses.contain(child)
  /** Async starts of /execpy and /execnode are analyzers: followed, so a silent death is reported. */
  const start = async (file: string, args: string[], form: FormBody): Promise<Json> => {
    const run = runOf(form)
    const isAsync = form.fields.has('async')
    const res = await startProcess({
      file, args, cwd: optionalPath(form, 'cwd'), async: isAsync, env: analyses.env, onSpawned: contain,
      onStarted: isAsync ? (child) => analyses.track(child, run) : undefined
    }).catch(execFailed)
    return { message: 'Successfully executed command', ...res }
  }
  return {
    async execute(form) {
      const command = required(form, 'command', 'command')
      const shell = form.fields.has('shell')
      const argv = shell ? [command] : splitCommand(command)
      const [file, ...args] = argv
      if (file === undefined) throw new HttpError(400, 'No command has been provided')
      const res = await startProcess({
        file, args, cwd: optionalPath(form, 'cwd'), shell, async: form.fields.has('async'), env: analyses.env, onSpawned: contain
      }).catch(execFailed)
      return { message: 'Successfully executed command', ...res }
    },
    async execpy(form) {
      const filepath = requiredPath(form, 'filepath', 'Python file')
      const python = which(process.platform === 'win32' ? ['python', 'pythonw', 'py'] : ['python3', 'python'])
      if (python === null) throw new HttpError(500, 'No Python interpreter on this guest')
      return start(python, [filepath], form)
    },
    /** Aviary: runs a JavaScript file with the agent's own Node runtime (see exec.ts nodeInvocation). */
    async execnode(form) {
      const script = requiredPath(form, 'filepath', 'JavaScript file')
      const run = nodeInvocation(script, splitCommand(form.fields.get('args') ?? ''))
      return start(run.file, run.args, form)
    }
  }
}
