// Opening the destination of an upload so that nothing outside the task folder can be written,
// whatever the guest sends or whatever was planted in the folder: the folder must be a real
// directory directly in the task folder (not a symlink), the file is opened O_NOFOLLOW and, when
// created, O_CREAT|O_EXCL (never overwrite, Cuckoo's open_exclusive), and the kernel's own view
// of the opened file (/proc/self/fd) must be the expected path. `folder` and `name` come
// pre-checked from upload-path.ts; this module is the last line of defence.
import { constants } from 'node:fs'
import { mkdir, open, readlink, realpath, type FileHandle } from 'node:fs/promises'
import path from 'node:path'

export class UnsafeTargetError extends Error {}

const { O_WRONLY, O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW } = constants

function checkPart(part: string): void {
  if (part === '' || part === '.' || part === '..' || /[/\0]/.test(part)) throw new UnsafeTargetError(`unsafe path component ${JSON.stringify(part)}`)
}

/** The real directory `<taskDir>/<folder>`, made if missing; refuses symlinks and other types. */
async function realFolder(taskDir: string, folder: string): Promise<string> {
  checkPart(folder)
  const realTask = await realpath(taskDir)
  const wanted = path.join(realTask, folder)
  await mkdir(wanted, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err
  })
  const real = await realpath(wanted)
  if (real !== wanted) throw new UnsafeTargetError(`${folder} is not a plain folder of the task folder`)
  return wanted
}

/**
 * Opens `<taskDir>/<folder>/<name>` for writing: `create` makes a new file (fails if anything
 * exists there, symlinks included), `append` continues a file this server created earlier.
 */
export async function openInside(taskDir: string, folder: string, name: string, mode: 'create' | 'append'): Promise<FileHandle> {
  checkPart(name)
  const dir = await realFolder(taskDir, folder)
  const full = path.join(dir, name)
  const flags = O_WRONLY | O_NOFOLLOW | (mode === 'create' ? O_CREAT | O_EXCL : O_APPEND)
  const fh = await open(full, flags, 0o644)
  try {
    const st = await fh.stat()
    if (!st.isFile()) throw new UnsafeTargetError(`${folder}/${name} is not a regular file`)
    const seen = await readlink(`/proc/self/fd/${fh.fd}`)
    if (seen !== full) throw new UnsafeTargetError(`${folder}/${name} resolved outside its folder`)
  } catch (err) {
    await fh.close()
    throw err
  }
  return fh
}

/** Appends one line to `<taskDir>/<name>` (created if missing, never through a symlink). */
export async function appendLine(taskDir: string, name: string, line: string): Promise<void> {
  checkPart(name)
  const full = path.join(await realpath(taskDir), name)
  const fh = await open(full, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, 0o644)
  try {
    if (!(await fh.stat()).isFile()) throw new UnsafeTargetError(`${name} is not a regular file`)
    await fh.write(line + '\n')
  } finally {
    await fh.close()
  }
}
