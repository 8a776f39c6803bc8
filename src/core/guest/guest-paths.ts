// Where things go inside the guest, decided on the host from the agent's environment
// (GET /environ) and the guest's platform, following Cuckoo 2.0.7's GuestManager
// (Cuckoo 2.0.7's cuckoo/core/guest.py and its agents): the analyzer in a fresh folder of 5–10 random lowercase
// letters at the root of the system drive on Windows (the rule of Cuckoo's agent 0.x
// add_analyzer; Aviary names the folder itself and uses /mkdir, which every agent has, rather
// than /mkdtemp) or under /tmp elsewhere, and the sample in %TEMP% (/tmp elsewhere) under the
// same name analysis.conf gives as file_name.
import { randomInt } from 'node:crypto'

export interface GuestLayout {
  /** The analyzer folder, e.g. `C:\qwzkrt` or `/tmp/qwzkrt`. */
  analyzerDir: string
  /** Where samples go: `%TEMP%` on Windows, `/tmp` elsewhere. */
  tempDir: string
  /** True when the folder was named by the task (option `analpath`) and may already exist. */
  fixedName: boolean
}

export function isWindows(platform: string): boolean {
  return platform.toLowerCase() === 'windows'
}

/** Joins guest path pieces with the guest's separator. */
export function guestJoin(platform: string, dir: string, name: string): string {
  const sep = isWindows(platform) ? '\\' : '/'
  return dir.endsWith('\\') || dir.endsWith('/') ? `${dir}${name}` : `${dir}${sep}${name}`
}

/** The folder part of a guest path (either separator), or null for a bare name. */
export function guestDirname(p: string): string | null {
  const i = Math.max(p.lastIndexOf('/'), p.lastIndexOf('\\'))
  if (i <= 0) return null
  const dir = p.slice(0, i)
  return /^[A-Za-z]:$/.test(dir) ? null : dir // "C:" is a drive, not a folder to create
}

export function randomFolderName(): string {
  const len = randomInt(5, 11)
  let s = ''
  for (let i = 0; i < len; i++) s += String.fromCharCode(97 + randomInt(0, 26))
  return s
}

/** A variable of the guest's environment; Windows names are case-insensitive. */
function env(environ: Record<string, unknown>, name: string): string | null {
  for (const [k, v] of Object.entries(environ)) {
    if (k.toUpperCase() === name && typeof v === 'string' && v !== '') return v
  }
  return null
}

export function guestLayout(platform: string, environ: Record<string, unknown>, analpath: string | null): GuestLayout {
  // `analpath` names the folder (Cuckoo: SYSTEMDRIVE + analpath); only a plain name is accepted.
  const fixed = analpath !== null && /^[A-Za-z0-9_.-]+$/.test(analpath) && !/^\.+$/.test(analpath)
  const name = fixed ? analpath : randomFolderName()
  if (!isWindows(platform)) return { analyzerDir: `/tmp/${name}`, tempDir: '/tmp', fixedName: fixed }
  const drive = env(environ, 'SYSTEMDRIVE') ?? 'C:'
  const temp = env(environ, 'TEMP') ?? env(environ, 'TMP') ?? `${drive}\\Windows\\Temp`
  return { analyzerDir: `${drive}\\${name}`, tempDir: temp, fixedName: fixed }
}
