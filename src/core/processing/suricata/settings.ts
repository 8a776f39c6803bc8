// The IDS step's settings: <data>/suricata/suricata.json (every key optional; docs/network.md
// "The IDS step"). A mistake in the file skips the step with a reason naming the field, as the
// rest of Aviary's config files do: a wrong suppress list must not silently let the noise back.
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { parseSize } from '../../config'

export interface SuricataSettings {
  enabled: boolean
  /** The suricata binary, a path or a name looked up in PATH. */
  binary: string
  /** Seconds one run of Suricata may take before it is killed (the step then says so). */
  timeout: number
  /** Larger captures are not given to Suricata (bytes). */
  maxPcapSize: number
  /** The folder of the protocol-event rules Debian's package ships; null: not loaded. */
  bundledRules: string | null
  /** Alerts left out of the report: by sid, and by the start of their signature text. */
  suppressSids: number[]
  suppressPrefixes: string[]
}

/**
 * Cuckoo 2.0.7's suppressions (processing/suricata.py): sids 2200074 (TCPv4 invalid checksum),
 * 2200075 (UDPv4 invalid checksum), 2017363 (ET INFO InetSim response, Cuckoo's own fake
 * internet), and every "SURICATA STREAM" event (TCP stream anomalies a capture's start and end
 * produce by nature).
 */
export const DEFAULT_SUPPRESS_SIDS = [2200074, 2200075, 2017363]
export const DEFAULT_SUPPRESS_PREFIXES = ['SURICATA STREAM']

export const DEFAULT_SETTINGS: SuricataSettings = {
  enabled: true,
  binary: 'suricata',
  timeout: 120,
  maxPcapSize: 512 * 1024 ** 2,
  bundledRules: '/etc/suricata/rules',
  suppressSids: DEFAULT_SUPPRESS_SIDS,
  suppressPrefixes: DEFAULT_SUPPRESS_PREFIXES
}

export const SETTINGS_FILE = 'suricata.json'
export const RULES_DIR = 'rules'

export class SuricataSettingsError extends Error {}

/** Bounds of a rule set's import (rulesets.ts): the archive's rule files together, and how many. */
export const MAX_IMPORT_BYTES = 256 * 1024 ** 2
export const MAX_IMPORT_FILES = 2_000
/** A rule set that cannot be imported; the message starts with the field at fault (`file:`, `name:`). */
export class RuleImportError extends Error {}

type Json = Record<string, unknown>

/** The settings of a data folder's suricata/ (defaults where the file or a key is missing). */
export function loadSuricataSettings(dir: string | null): SuricataSettings {
  const file = dir === null ? null : path.join(dir, SETTINGS_FILE)
  if (file === null || !existsSync(file)) return { ...DEFAULT_SETTINGS }
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new SuricataSettingsError(`${SETTINGS_FILE}: not JSON (${(err as Error).message})`)
  }
  return parseSuricataSettings(raw)
}

export function parseSuricataSettings(raw: unknown): SuricataSettings {
  const bad = (field: string, what: string): never => { throw new SuricataSettingsError(`${SETTINGS_FILE}: ${field}: ${what}`) }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) bad('(top)', 'must be an object')
  const o = raw as Json
  const known = new Set(['enabled', 'binary', 'timeout', 'max_pcap_size', 'bundled_rules', 'suppress'])
  for (const k of Object.keys(o)) if (!known.has(k)) bad(k, 'unknown key')
  const s: SuricataSettings = { ...DEFAULT_SETTINGS }
  if (o.enabled !== undefined) s.enabled = typeof o.enabled === 'boolean' ? o.enabled : bad('enabled', 'must be true or false')
  if (o.binary !== undefined) s.binary = typeof o.binary === 'string' && o.binary !== '' ? o.binary : bad('binary', 'must be a path or a command name')
  if (o.timeout !== undefined) {
    s.timeout = typeof o.timeout === 'number' && Number.isFinite(o.timeout) && o.timeout > 0 && o.timeout <= 86_400 ? o.timeout : bad('timeout', 'must be seconds, 1..86400')
  }
  if (o.max_pcap_size !== undefined) {
    const v = o.max_pcap_size
    const n = typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : typeof v === 'string' ? parseSize(v) : null
    s.maxPcapSize = n ?? bad('max_pcap_size', 'must be a size such as 512M or a number of bytes')
  }
  if (o.bundled_rules !== undefined) {
    const v = o.bundled_rules
    s.bundledRules = v === false || v === null ? null : typeof v === 'string' && path.isAbsolute(v) ? v : bad('bundled_rules', 'must be an absolute folder, or false')
  }
  if (o.suppress !== undefined) {
    const sup = o.suppress
    if (sup === null || typeof sup !== 'object' || Array.isArray(sup)) bad('suppress', 'must be an object {sids, signatures}')
    const x = sup as Json
    for (const k of Object.keys(x)) if (k !== 'sids' && k !== 'signatures') bad(`suppress.${k}`, 'unknown key')
    if (x.sids !== undefined) {
      if (!Array.isArray(x.sids) || !x.sids.every((n) => Number.isSafeInteger(n) && (n as number) > 0)) bad('suppress.sids', 'must be a list of signature ids')
      s.suppressSids = x.sids as number[]
    }
    if (x.signatures !== undefined) {
      if (!Array.isArray(x.signatures) || !x.signatures.every((t) => typeof t === 'string' && t !== '')) bad('suppress.signatures', 'must be a list of signature text beginnings')
      s.suppressPrefixes = x.signatures as string[]
    }
  }
  return s
}

/** Whether an alert is noise by the settings' lists. */
export function isSuppressed(s: Pick<SuricataSettings, 'suppressSids' | 'suppressPrefixes'>, sid: number, signature: string): boolean {
  return s.suppressSids.includes(sid) || s.suppressPrefixes.some((p) => signature.startsWith(p))
}
