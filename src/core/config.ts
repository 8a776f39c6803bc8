// Defaults of a service instance.
import envPaths from 'env-paths'
import pkg from '../../package.json'

export const VERSION: string = pkg.version
export const DEFAULT_HOST = '127.0.0.1'
export const DEFAULT_PORT = 8090
export const DEFAULT_MAX_UPLOAD = 1024 ** 3

/** Per-user data directory: $AVIARY_DATA, else the platform's (XDG_DATA_HOME/aviary on Linux). */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.AVIARY_DATA || envPaths('aviary', { suffix: '' }).data
}

/** Parses sizes such as 1073741824, 512M, 1G, 2GiB. */
export function parseSize(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(text.trim())
  if (!m) return null
  const unit = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g' | 't']
  const n = Math.floor(Number(m[1]) * unit)
  return n > 0 && Number.isSafeInteger(n) ? n : null
}
