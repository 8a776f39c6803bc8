// The endpoint handlers of the agent, one function per route of Cuckoo 2.0.7's agent.py (version
// "0.10"), plus Aviary's /execnode. Each takes the parsed form and returns a JSON answer or throws
// HttpError; agent.ts does routing, pinning and the wire.
import { randomBytes } from 'node:crypto'
import { chmod, copyFile, mkdir, open, rename, rm, stat, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import { nodeInvocation, splitCommand, startProcess, which } from './exec.js'
import { HttpError, type FormBody } from './http-body.js'
import { extractZip } from './zip-extract.js'

export type Json = { message: string } & Record<string, unknown>

export function required(form: FormBody, name: string, what = name): string {
  const v = form.fields.get(name)
  if (v === undefined) throw new HttpError(400, `No ${what} has been provided`)
  return v
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
  const dirpath = required(form, 'dirpath', 'dirpath')
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
  const dir = form.fields.get('dirpath') ?? tmpdir()
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
  const filepath = required(form, 'filepath')
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
  const dirpath = required(form, 'dirpath')
  await extractZip(zip.tempPath, dirpath)
  return { message: 'Successfully extracted zip file' }
}

export async function removeHandler(form: FormBody): Promise<Json> {
  const path = required(form, 'path')
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

function cwdOf(form: FormBody): string | undefined {
  const cwd = form.fields.get('cwd')
  return cwd === undefined ? undefined : resolve(cwd)
}

function execFailed(err: unknown): never {
  throw new HttpError(500, `Error executing command: ${(err as Error).message}`)
}

export async function executeHandler(form: FormBody): Promise<Json> {
  const command = required(form, 'command', 'command')
  const shell = form.fields.has('shell')
  const argv = shell ? [command] : splitCommand(command)
  const [file, ...args] = argv
  if (file === undefined) throw new HttpError(400, 'No command has been provided')
  const res = await startProcess({ file, args, cwd: cwdOf(form), shell, async: form.fields.has('async') }).catch(execFailed)
  return { message: 'Successfully executed command', ...res }
}

export async function execpyHandler(form: FormBody): Promise<Json> {
  const filepath = required(form, 'filepath', 'Python file')
  const python = which(process.platform === 'win32' ? ['python', 'pythonw', 'py'] : ['python3', 'python'])
  if (python === null) throw new HttpError(500, 'No Python interpreter on this guest')
  const res = await startProcess({ file: python, args: [filepath], cwd: cwdOf(form), async: form.fields.has('async') }).catch(execFailed)
  return { message: 'Successfully executed command', ...res }
}

/** Aviary: runs a JavaScript file with the agent's own Node runtime (see exec.ts nodeInvocation). */
export async function execnodeHandler(form: FormBody): Promise<Json> {
  const filepath = required(form, 'filepath', 'JavaScript file')
  const cwd = cwdOf(form)
  const script = isAbsolute(filepath) || cwd === undefined ? resolve(filepath) : resolve(cwd, filepath)
  const args = splitCommand(form.fields.get('args') ?? '')
  const run = nodeInvocation(script, args)
  const res = await startProcess({ ...run, cwd, async: form.fields.has('async') }).catch(execFailed)
  return { message: 'Successfully executed command', ...res }
}
