// Reads analysis.conf, the INI file the host stores next to the analyzer (`[analysis]` then
// `key = value` lines, written by Python's str(): booleans are "True"/"False"). Values stay strings
// here; the getters convert the way Cuckoo's analyzer does. `options` is "k=v,k=v".
import { readFileSync } from 'node:fs'
import { isRunId, RUN_CONF_KEY } from '../../guest-protocol/run-identity.js'

export interface AnalysisConfig {
  id: string
  category: string
  target: string
  fileName: string
  fileType: string
  package: string
  options: Map<string, string>
  timeout: number
  enforceTimeout: boolean
  terminateProcesses: boolean
  clock: string
  ip: string
  port: number
  /** This run's id (analysis.conf `aviary_run`); null from a host that sends none. */
  run: string | null
  raw: Map<string, string>
}

export function parseIni(text: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim()
    if (trimmed === '' || trimmed.startsWith('[') || trimmed.startsWith('#') || trimmed.startsWith(';')) continue
    const eq = trimmed.search(/[=:]/)
    if (eq < 0) continue
    out.set(trimmed.slice(0, eq).trim(), trimmed.slice(eq + 1).trim())
  }
  return out
}

export function parseOptions(text: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const item of text.split(',')) {
    const eq = item.indexOf('=')
    if (eq > 0) out.set(item.slice(0, eq).trim(), item.slice(eq + 1).trim())
  }
  return out
}

export function truthy(v: string | undefined): boolean {
  return v !== undefined && /^(1|yes|true|on)$/i.test(v.trim())
}

export function parseConfig(text: string): AnalysisConfig {
  const raw = parseIni(text)
  const s = (k: string): string => raw.get(k) ?? ''
  const timeout = Number.parseInt(s('timeout'), 10)
  return {
    id: s('id'),
    category: s('category') || 'file',
    target: s('target'),
    fileName: s('file_name'),
    fileType: s('file_type'),
    package: s('package'),
    options: parseOptions(s('options')),
    timeout: Number.isFinite(timeout) && timeout > 0 ? timeout : 120,
    enforceTimeout: truthy(s('enforce_timeout')),
    terminateProcesses: truthy(s('terminate_processes')),
    clock: s('clock'),
    ip: s('ip'),
    port: Number.parseInt(s('port'), 10) || 2042,
    run: isRunId(s(RUN_CONF_KEY)) ? s(RUN_CONF_KEY) : null,
    raw
  }
}

export function readConfig(path: string): AnalysisConfig {
  return parseConfig(readFileSync(path, 'utf8'))
}
