// The report.json fields that Cuckoo report consumers read (issue 7's list: what tools built on
// Cuckoo 2's report take from it), as paths; `[]` means every element of an array. A test gives a
// real run's report and expects nothing missing.
type Json = unknown

const FILE_TASK = [
  'info.id', 'info.score', 'info.duration', 'info.started', 'info.ended', 'info.machine', 'info.category',
  'target.category',
  'target.file.name', 'target.file.size', 'target.file.md5', 'target.file.sha1', 'target.file.sha256',
  'target.file.sha512', 'target.file.ssdeep', 'target.file.type', 'target.file.yara',
  'signatures[].name', 'signatures[].description', 'signatures[].severity', 'signatures[].marks',
  'network.hosts', 'network.domains[].domain', 'network.domains[].ip',
  'network.dns[].request', 'network.dns[].answers',
  'network.http[].uri', 'network.http[].host', 'network.http[].method', 'network.http[].user-agent',
  'network.tcp', 'network.udp',
  'behavior.processes', 'behavior.processtree', 'behavior.summary',
  'dropped', 'static', 'strings', 'screenshots', 'procmemory', 'debug'
]
const URL_TASK = FILE_TASK.filter((p) => !p.startsWith('target.file.')).concat('target.url')

function missingAt(value: Json, parts: string[], at: string, out: string[]): void {
  if (parts.length === 0) return
  const [head, ...rest] = parts as [string, ...string[]]
  const each = head.endsWith('[]')
  const key = each ? head.slice(0, -2) : head
  if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) { out.push(`${at}${key}`); return }
  const child = (value as Record<string, Json>)[key]
  if (!each) { missingAt(child, rest, `${at}${key}.`, out); return }
  if (!Array.isArray(child)) { out.push(`${at}${key} (not an array)`); return }
  child.forEach((item, i) => missingAt(item, rest, `${at}${key}[${i}].`, out))
}

/** Paths of consumer fields missing from `report` (empty when all are there). */
export function missingConsumerFields(report: Json, category: 'file' | 'url'): string[] {
  const out: string[] = []
  for (const p of category === 'file' ? FILE_TASK : URL_TASK) missingAt(report, p.split('.'), '', out)
  return out
}
