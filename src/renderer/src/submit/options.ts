// The submission options of the analysis API (the task fields of src/shared/api/task-fields.ts, and
// create/file's `unique`) as the form holds them, and the form fields they become.
import { TASK_FIELDS, TASK_FLAGS, type TaskField } from '../../../shared/api/task-fields'

type Flag = (typeof TASK_FLAGS)[number]

/** Each task field as the form holds it: flags as checkboxes, the rest as typed text. */
export type SubmitOptions = { [K in TaskField]: K extends Flag ? boolean : string } & {
  /** Files only: refuse a sample submitted before. */
  unique: boolean
  /** The network route (GET /aviary/routes); '' = the host's default. Sent inside `options` (network.ts). */
  route: string
  /** Decrypt HTTPS (mitm=1); null = the host's default. */
  mitm: boolean | null
  /** Cuckoo's and CAPE's interactive=1: the machine is kept until the timeout or Finish now (the Live tab). Sent inside `options`. */
  interactive: boolean
}
// `clock` is a datetime-local value (YYYY-MM-DDTHH:MM[:SS]); empty = the host's time.

export const DEFAULT_OPTIONS: SubmitOptions = {
  package: '', options: '', timeout: '', priority: '1', machine: '', platform: '', tags: '', custom: '', owner: '',
  memory: false, enforce_timeout: false, clock: '', unique: false, route: '', mitm: null, interactive: false
}

/** "2026-11-23T10:04" → "11-23-2026 10:04:00", the API's (Cuckoo's) %m-%d-%Y %H:%M:%S. */
export function apiClock(local: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?/.exec(local)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s] = m
  return `${mo}-${d}-${y} ${h}:${mi}:${s ?? '00'}`
}

/** The form fields for a create route; empty options are left out (the server's defaults apply). */
export function toFields(o: SubmitOptions, kind: 'file' | 'url' | 'submit'): Record<string, string> {
  const f: Record<string, string> = {}
  for (const k of TASK_FIELDS) {
    const v = o[k]
    if (typeof v === 'boolean') {
      if (v) f[k] = '1'
    } else if (k === 'clock') {
      const clock = apiClock(v)
      if (clock) f.clock = clock
    } else if (v.trim() !== '') {
      f[k] = v.trim()
    }
  }
  if (kind === 'file' && o.unique) f.unique = '1'
  return f
}

export function toForm(fields: Record<string, string>): FormData {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  return form
}

const HASH = /^(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{128})$/i

const URL_SCHEMES = new Set(['http:', 'https:', 'ftp:'])

/**
 * Whether a line is a URL to analyse: an http(s) or ftp URL, or a host name with a dot (or an
 * address) and maybe a path, which the guest's browser opens over http. Anything with a blank in it,
 * or another scheme (javascript:, file:), is not.
 */
export function isTargetUrl(line: string): boolean {
  if (line === '' || /\s/.test(line)) return false
  if (/^[a-z][a-z0-9+.-]*:/i.test(line) && !/^[^:/]+:\d+(\/|$)/.test(line)) {
    try {
      const u = new URL(line)
      return URL_SCHEMES.has(u.protocol) && u.hostname !== ''
    } catch {
      return false
    }
  }
  try {
    const host = new URL(`http://${line}`).hostname
    return host.includes('.') || host === 'localhost' || host.startsWith('[')
  } catch {
    return false
  }
}

/**
 * Splits pasted text (one target a line) into hashes of known samples and URLs; the other lines
 * (comments apart) are `invalid`: neither counted nor sent, shown to be fixed.
 */
export function parseTargets(text: string): { urls: string[]; hashes: string[]; invalid: string[] } {
  const urls: string[] = []
  const hashes: string[] = []
  const invalid: string[] = []
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    if (HASH.test(line)) hashes.push(line.toLowerCase())
    else if (isTargetUrl(line)) urls.push(line)
    else invalid.push(line)
  }
  return { urls, hashes, invalid }
}
