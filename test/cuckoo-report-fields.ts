// The report.json fields that real Cuckoo report consumers read, as paths, per consumer, taken from
// their code (facts, not their code):
//   MISP      misp-modules import_mod/cuckooimport.py (a Cuckoo archive → MISP objects)
//   Cortex    Cortex-Analyzers CuckooSandbox/cuckoosandbox_analyzer.py (the report → a Cortex report)
//   FAME      fame_modules processing/cuckoo/cuckoo.py (streams the report with ijson)
//   CuckooWeb Cuckoo 2.0.7's web interface templates (analysis/pages/*.html at tag 2.0.7): the keys its
//             pages read outside `{% if %}` guards, plus the ones this project names (buffer,
//             extracted, metadata.output, http_ex/https_ex, the ELF tables, static.office's macros
//             and static.pdf's rows, which _office.html and _pdf.html iterate). Its pages read the
//             MongoDB document, which adds storage ids (pcap_id, file_id, object_id): not report.json's.
// Path grammar: `a.b` a key, `a[]` every element of an array, `a{}` every value of a map, and a
// final `:type` (string, number, integer, boolean, object, array) for what the consumer does with
// the value: MISP's `desc["short"]` on a signature's ttp needs an object, `proc["children"]` an array.
// A path whose array is empty or whose map has no values asks nothing of its elements; a test gives
// reports of real runs, where they are not empty. `?` after a key: the consumer checks for the key
// first (it may be absent, but when present it must have that shape).
type Json = unknown

export type Consumer = 'MISP' | 'Cortex' | 'FAME' | 'CuckooWeb'

const COMMON_FILE = ['target.file.name:string']

export const CONSUMER_FIELDS: Record<Consumer, { file: string[]; url: string[]; any: string[] }> = {
  MISP: {
    file: [...COMMON_FILE],
    url: ['target.url:string'],
    any: [
      'info.score:number', 'info.duration:number', 'info.machine.started_on', 'info.machine.name', 'info.machine.label',
      'target.category:string',
      'network.http[].host', 'network.http[].method', 'network.http[].uri', 'network.http[].user-agent:string',
      'network.http[].count', 'network.http[].port',
      'network.tcp:array', 'network.tcp[].src', 'network.tcp[].dst', 'network.tcp[].sport', 'network.tcp[].dport', 'network.tcp[].time:number',
      'network.udp:array', 'network.udp[].src', 'network.udp[].dst', 'network.udp[].sport', 'network.udp[].dport', 'network.udp[].time:number',
      'network.dns:array', 'network.dns[].type', 'network.dns[].request', 'network.dns[].answers?[].type', 'network.dns[].answers?[].data',
      'signatures:array', 'signatures[].marks:array', 'signatures[].marks[].type:string', 'signatures[].description:string',
      'signatures[].ttp?:object', 'signatures[].ttp?{}.short:string',
      'behavior.processtree:array', 'behavior.processtree[].pid', 'behavior.processtree[].command_line', 'behavior.processtree[].process_name',
      'behavior.processtree[].ppid', 'behavior.processtree[].children?:array',
      'screenshots:array', 'screenshots[].path:string',
      'dropped:array', 'dropped[].name?:string', 'dropped[].filepath?:string', 'dropped[].sha256?:string', 'dropped[].path:string',
      'dropped[].yara?[].name', 'dropped[].yara?[].meta?:object', 'dropped[].pids?:array',
      'buffer:array', 'buffer[].path:string', 'buffer[].yara?[].name'
    ]
  },
  Cortex: {
    file: ['target.file.type', 'target.file.yara:array', 'target.file.yara[].name:string', 'target.file.yara[].meta:object'],
    url: ['target.url:string'],
    any: [
      'signatures:array', 'signatures[].description:string', 'network:object', 'network.domains?:array', 'network.domains?[].ip',
      'network.domains?[].domain', 'network.http?:array', 'network.http?[].uri', 'info.score?:number',
      // Its Suricata branch for Cuckoo 2's keys (dst_port present): (signature, dst_ip, dst_port, severity) of each alert.
      'suricata?.alerts?[].signature', 'suricata?.alerts?[].dst_ip', 'suricata?.alerts?[].dst_port', 'suricata?.alerts?[].severity'
    ]
  },
  FAME: {
    file: [],
    url: [],
    any: [
      'signatures[].name:string', 'signatures[].severity:integer', 'signatures[].description:string', 'info.score:number',
      'network.domains[].domain:string', 'network.http[].uri:string'
    ]
  },
  CuckooWeb: {
    file: [
      ...COMMON_FILE, 'target.file.size:integer', 'target.file.md5:string', 'target.file.sha1:string', 'target.file.sha256:string',
      'target.file.sha512:string', 'target.file.ssdeep', 'target.file.crc32:string', 'target.file.type', 'target.file.yara:array',
      'target.file.urls:array'
    ],
    url: ['target.url:string'],
    any: [
      'info.id:integer', 'info.category:string', 'info.package', 'info.started', 'info.ended', 'info.duration', 'info.route', 'info.score:number',
      'debug.action:array', 'debug.cuckoo:array', 'extracted[].category', 'extracted[].program',
      'network.dns[].request', 'network.dns[].answers[].data', 'network.domains[].domain', 'network.domains[].ip',
      'behavior.processes[].calls[].api:string', 'behavior.processes[].calls[].arguments:object', 'behavior.processes[].calls[].return_value',
      'behavior.processes[].calls[].time:number', 'behavior.processtree[].command_line', 'behavior.processtree[].ppid',
      'signatures[].marks[].call?.api:string', 'signatures[].marks[].call?.arguments:object', 'signatures[].marks[].call?.time:number',
      'info.version:string', 'info.machine', 'info.options', 'info.platform',
      'metadata.output:object', 'metadata.output.memdumps:array', 'metadata.output.buffers:array', 'metadata.output.dropped:array',
      'metadata.output.pcap?.basename:string', 'metadata.output.pcap?.dirname:string', 'metadata.output.pcap?.sha256:string',
      'signatures[].name:string', 'signatures[].description:string', 'signatures[].severity:integer', 'signatures[].marks:array',
      'signatures[].markcount:integer', 'signatures[].families:array', 'signatures[].references:array',
      'static:object', 'static.elf?.file_header:object', 'static.elf?.section_headers:array', 'static.elf?.program_headers:array',
      'static.elf?.dynamic_tags:array', 'static.elf?.symbol_tables:array', 'static.elf?.symbol_tables[].value', 'static.elf?.symbol_tables[].type',
      'static.elf?.symbol_tables[].bind', 'static.elf?.symbol_tables[].ndx_name', 'static.elf?.relocations:array', 'static.elf?.relocations[].name',
      'static.elf?.relocations[].entries:array', 'static.elf?.notes:array', 'static.elf?.notes[].owner', 'static.elf?.notes[].size',
      'static.elf?.notes[].note', 'static.elf?.notes[].name',
      'static.office?.macros:array', 'static.office?.macros[].filename:string', 'static.office?.macros[].stream:string',
      'static.office?.macros[].orig_code:string', 'static.office?.macros[].deobf:string',
      'static.pdf?:array', 'static.pdf?[].version', 'static.pdf?[].creator', 'static.pdf?[].creation', 'static.pdf?[].title',
      'static.pdf?[].subject', 'static.pdf?[].producer', 'static.pdf?[].author', 'static.pdf?[].modification', 'static.pdf?[].urls:array',
      'static.pdf?[].javascript:array', 'static.pdf?[].javascript[].orig_code:string', 'static.pdf?[].javascript[].beautified:string',
      'strings:array',
      'behavior.processtree:array', 'behavior.processes:array', 'behavior.processes[].pid', 'behavior.processes[].process_name',
      'behavior.processes[].calls:array', 'behavior.summary:object', 'behavior.generic:array', 'behavior.apistats:object',
      'network.hosts:array', 'network.domains:array', 'network.dns:array', 'network.http:array', 'network.tcp:array', 'network.udp:array',
      'network.http_ex:array', 'network.https_ex:array', 'network.http_ex[].host', 'network.http_ex[].uri', 'network.http_ex[].method',
      'network.http_ex[].status', 'network.http_ex[].req:object', 'network.http_ex[].resp:object', 'network.https_ex[].host',
      'network.https_ex[].uri', 'network.https_ex[].req:object', 'network.https_ex[].resp:object', 'network.pcap_sha256:string',
      'dropped:array', 'dropped[].name:string', 'dropped[].size:integer', 'dropped[].sha256:string', 'dropped[].type', 'dropped[].yara:array',
      'buffer:array', 'extracted:array', 'procmemory:array', 'screenshots:array', 'debug.errors:array', 'debug.log:array'
    ]
  }
}

const TYPES: Record<string, (v: Json) => boolean> = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number',
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === 'boolean',
  object: (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
  array: (v) => Array.isArray(v)
}

function check(value: Json, parts: string[], type: string | null, at: string, out: string[]): void {
  if (parts.length === 0) {
    if (type !== null && !TYPES[type]!(value)) out.push(`${at.replace(/\.$/, '')} (not ${type})`)
    return
  }
  const [head, ...rest] = parts as [string, ...string[]]
  const m = /^([^[{?]+)(\?)?(\[\]|\{\})?$/.exec(head)
  if (m === null) throw new Error(`bad path segment ${head}`)
  const [, key = '', optional, each] = m
  if (value === null || typeof value !== 'object' || Array.isArray(value)) { out.push(`${at}${key} (parent not an object)`); return }
  if (!Object.hasOwn(value, key)) { if (optional === undefined) out.push(`${at}${key}`); return }
  const child = (value as Record<string, Json>)[key]
  if (each === undefined) { check(child, rest, type, `${at}${key}.`, out); return }
  if (each === '[]') {
    if (!Array.isArray(child)) { out.push(`${at}${key} (not an array)`); return }
    child.forEach((item, i) => check(item, rest, type, `${at}${key}[${i}].`, out))
    return
  }
  if (child === null || typeof child !== 'object' || Array.isArray(child)) { out.push(`${at}${key} (not a map)`); return }
  for (const [k, item] of Object.entries(child)) check(item, rest, type, `${at}${key}{${k}}.`, out)
}

/** Fields of `consumer` (all consumers by default) missing from `report`, or of the wrong type. */
export function missingConsumerFields(report: Json, category: 'file' | 'url', consumers: readonly Consumer[] = Object.keys(CONSUMER_FIELDS) as Consumer[]): string[] {
  const out: string[] = []
  for (const c of consumers) {
    const lists = CONSUMER_FIELDS[c]
    for (const p of [...lists.any, ...(category === 'file' ? lists.file : lists.url)]) {
      const [path = '', type = null] = p.split(':') as [string, string?]
      const before = out.length
      check(report, path.split('.'), type ?? null, '', out)
      for (let i = before; i < out.length; i++) out[i] = `${c}: ${out[i]}`
    }
  }
  return out
}
