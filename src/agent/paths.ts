// Paths the host names in a request. Cuckoo's agent.py took whatever came and resolved a relative
// path against its own working folder: `C:\x\analysis.conf` sent to a Linux agent became a file
// of that name next to the agent. Aviary's agent takes only absolute paths of its own system,
// without NUL or other control characters, and says which field was refused and why.
import { isAbsolute, normalize } from 'node:path'
import { HttpError } from './http-error.js'

const MAX_PATH = 4096

function systemName(): string {
  return process.platform === 'win32' ? 'Windows' : process.platform === 'darwin' ? 'macOS' : 'Linux'
}

/** The value as an absolute, normalized path of this system; HttpError 400 naming the field otherwise. */
export function absolutePath(field: string, value: string): string {
  const shown = JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value)
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new HttpError(400, `${field}: ${shown} holds control characters`)
  if (value.length > MAX_PATH) throw new HttpError(400, `${field}: longer than ${MAX_PATH} characters`)
  if (!isAbsolute(value)) {
    throw new HttpError(400, `${field}: ${shown} is not an absolute path on this guest (${systemName()})`)
  }
  if (process.platform === 'win32' && /^[\\/]{2}[?.][\\/]/.test(value)) {
    throw new HttpError(400, `${field}: ${shown} is a device path, not a file path`)
  }
  return normalize(value)
}
