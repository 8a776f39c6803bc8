// The `analysis.conf` the host drops next to the analyzer in the guest: the INI text Cuckoo
// 2.0.7 writes (Cuckoo 2.0.7's scheduler.py build_options + guest.py add_config), so
// Cuckoo's unchanged analyzer (and Aviary's, which reads the same file) finds every key it
// needs. Values are written as Cuckoo's `str()` would; unlike Cuckoo, line breaks in values are
// replaced, so a task's options or URL can never add keys or sections to the guest's config.
import type { GuestStartSpec } from './start-spec'
import { RUN_CONF_KEY } from '../../guest-protocol/run-identity'

/** The name the sample gets in the guest (also `file_name` in analysis.conf): no folders, no characters Windows refuses. */
export function guestFileName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? ''
  // eslint-disable-next-line no-control-regex -- control characters are exactly what must go
  const clean = base.replace(/[\x00-\x1f\x7f<>:"|?*]/g, '_').replace(/^[. ]+|[. ]+$/g, '')
  return clean === '' ? 'sample.bin' : clean
}

/** Cuckoo's task options (`k=v,k=v`) as pairs; items without `=` are dropped, as Cuckoo's parse_options does. */
export function parseOptions(options: string | null): Map<string, string> {
  const out = new Map<string, string>()
  for (const item of (options ?? '').split(',')) {
    const eq = item.indexOf('=')
    if (eq <= 0) continue
    const key = item.slice(0, eq).trim()
    if (key !== '') out.set(key, item.slice(eq + 1).trim())
  }
  return out
}

/** Cuckoo's emit_options: `k=v` pairs sorted by key, joined with commas. */
function emitOptions(options: Map<string, string>): string {
  return [...options.keys()].sort().map((k) => `${k}=${options.get(k) ?? ''}`).join(',')
}

/**
 * Python's strftime("%Y%m%dT%H:%M:%S") of the clock in the host's local time, as Cuckoo's naive
 * `datetime.now()` clock is (the analyzer sets the guest clock to it).
 */
export function cuckooClock(d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0')
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

function pyBool(b: boolean): string {
  return b ? 'True' : 'False'
}

/** One line: no CR, LF or NUL can survive into an INI value. */
function oneLine(v: string): string {
  return v.replace(/[\r\n\0\u2028\u2029\u0085]+/g, ' ')
}

/** `run`: this run's id (run-identity.ts), for Aviary's analyzer; Cuckoo's ignores the key. */
export function analysisConf(spec: GuestStartSpec, run: string | null = null): string {
  const entries: [string, string][] = []
  const options = parseOptions(spec.options)
  // A member of a submitted archive is stored and sent unpacked, so the guest sees a file task:
  // Cuckoo's analyzer, given category `archive`, expects the target to be a zip to extract
  // `filename` from. The task keeps category `archive` in the API, as Cuckoo's does.
  const category = spec.category === 'archive' ? 'file' : spec.category
  if (category === 'file') {
    // Cuckoo injects the APK entry point for every file task; it is ":" for anything but an APK.
    if (!options.has('apk_entry')) options.set('apk_entry', ':')
    entries.push(
      ['file_name', guestFileName(spec.file?.name ?? spec.target)],
      ['file_type', spec.file?.type ?? ''],
      ['pe_exports', (spec.file?.peExports ?? []).join(',')]
    )
  }
  entries.push(
    ['id', String(spec.taskId)],
    ['ip', spec.resultserver.ip],
    ['port', String(spec.resultserver.port)],
    ['category', category],
    ['target', spec.target],
    ['package', spec.package ?? ''],
    ['options', emitOptions(options)],
    ['enforce_timeout', pyBool(spec.enforceTimeout)],
    ['clock', cuckooClock(spec.clock)],
    ['terminate_processes', pyBool(spec.terminateProcesses)],
    ['timeout', String(spec.timeout)]
  )
  if (run !== null) entries.push([RUN_CONF_KEY, run])
  // Like Cuckoo: "[analysis]" then "key = value" lines joined with "\n", no trailing newline.
  return ['[analysis]', ...entries.map(([k, v]) => `${k} = ${oneLine(v)}`)].join('\n')
}
