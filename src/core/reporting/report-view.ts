// Typed, defensive reads of an assembled report, for the signature rules and the HTML report. The
// report is built from what a hostile guest sent, and modules may be missing (a URL task has no
// dropped files, a failed pcap no network), so every accessor tolerates absent keys and wrong
// types instead of throwing.
import { isIP } from 'node:net'
import { objs, valueAt, type Obj } from '../../shared/report-access'

export { isObj, obj, objs, type Obj } from '../../shared/report-access'

/** `report[a][b]...` as an array of strings (non-strings dropped), or []. */
export function strs(root: unknown, ...keys: string[]): string[] {
  const v = valueAt(root, keys)
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []
}

export function str(o: Obj, key: string): string {
  const v = o[key]
  return typeof v === 'string' ? v : ''
}

export function num(o: Obj, key: string): number | null {
  const v = o[key]
  return typeof v === 'number' && Number.isFinite(v) ? v : null
}

/** Values of one behavior.summary category (Cuckoo: category → unique strings). */
export function summary(report: Obj, category: string): string[] {
  return strs(report, 'behavior', 'summary', category)
}

/** Every file path the sample created or wrote, from the summary and from dropped[]. */
export function writtenPaths(report: Obj): string[] {
  const out = new Set<string>([
    ...summary(report, 'file_created'), ...summary(report, 'file_written'),
    ...summary(report, 'file_recreated'), ...summary(report, 'file_moved'), ...summary(report, 'file_copied')
  ])
  for (const d of objs(report, 'dropped')) {
    const p = str(d, 'filepath') || str(d, 'path')
    if (p) out.add(p)
  }
  return [...out]
}

/** Command lines of the run: each process's and the summary's, de-duplicated. */
export function commandLines(report: Obj): { pid: number | null; cmd: string }[] {
  const seen = new Set<string>()
  const out: { pid: number | null; cmd: string }[] = []
  for (const p of objs(report, 'behavior', 'processes')) {
    const cmd = str(p, 'command_line') || str(p, 'process_path')
    if (cmd && !seen.has(cmd)) { seen.add(cmd); out.push({ pid: num(p, 'pid'), cmd }) }
  }
  for (const cmd of summary(report, 'command_line')) {
    if (!seen.has(cmd)) { seen.add(cmd); out.push({ pid: null, cmd }) }
  }
  return out
}

/** The last path component of a Windows or POSIX path, lower-cased. */
export function baseName(p: string): string {
  const parts = p.split(/[\\/]/)
  return (parts[parts.length - 1] ?? '').toLowerCase()
}

/**
 * True for a globally routable IPv4/IPv6 address — the reverse of the private ranges Cuckoo's
 * network module leaves out of `hosts` (RFC 1918, loopback, link-local, CGNAT, multicast, test nets).
 */
export function isPublicIp(ip: string): boolean {
  const v = isIP(ip)
  if (v === 4) {
    const o = ip.split('.').map(Number) as [number, number, number, number]
    const [a, b, c] = o
    if (a === 0 || a === 10 || a === 127 || a >= 224) return false
    if (a === 100 && b >= 64 && b <= 127) return false
    if (a === 169 && b === 254) return false
    if (a === 172 && b >= 16 && b <= 31) return false
    if (a === 192 && b === 168) return false
    if (a === 192 && b === 0 && (c === 0 || c === 2)) return false
    if (a === 198 && (b === 18 || b === 19)) return false
    if (a === 198 && b === 51 && c === 100) return false
    if (a === 203 && b === 0 && c === 113) return false
    return true
  }
  if (v === 6) {
    const l = ip.toLowerCase()
    if (l === '::1' || l === '::') return false
    if (/^(fe[89ab]|fc|fd|ff)/.test(l)) return false
    if (l.startsWith('2001:db8')) return false
    if (l.startsWith('::ffff:')) return isPublicIp(l.slice(7))
    return true
  }
  return false
}

/** Every address some DNS answer (or domains[] entry) of the run gave. */
export function resolvedIps(report: Obj): Set<string> {
  const out = new Set<string>()
  for (const d of objs(report, 'network', 'dns')) {
    for (const a of objs(d, 'answers')) {
      const data = str(a, 'data')
      if (isIP(data)) out.add(data)
    }
  }
  for (const d of objs(report, 'network', 'domains')) {
    const ip = str(d, 'ip')
    if (ip) out.add(ip)
  }
  return out
}
