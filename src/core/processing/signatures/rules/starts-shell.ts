// Fires when a process of the run is a command interpreter: cmd.exe, PowerShell, wscript/cscript,
// or a Unix shell (sh/bash/dash/zsh, with -c or not). Samples shell out to run the next stage.
// The interpreter the analysis package itself used to start a script sample (the root of the tree:
// `sh sample.sh`, `cmd.exe /c sample.bat`, `powershell -File sample.ps1`) does not count.
import type { SignatureRule } from '../signature'
import { baseName, commandLines, obj, objs, num, str } from '../../../reporting/report-view'

const SHELLS = new Set([
  'cmd.exe', 'powershell.exe', 'pwsh.exe', 'pwsh', 'wscript.exe', 'cscript.exe', 'mshta.exe',
  'sh', 'bash', 'dash', 'zsh', 'ksh', 'busybox'
])

/** The program a command line starts: its first word, unquoted, as a lower-cased base name. */
function program(cmd: string): string {
  const t = cmd.trimStart()
  if (t.startsWith('"')) {
    const end = t.indexOf('"', 1)
    return baseName(end > 0 ? t.slice(1, end) : t.slice(1))
  }
  return baseName(t.split(/\s+/)[0] ?? '')
}

/** True when one of the first arguments of `cmd` is the sample itself (the package's launcher). */
function launchesSample(cmd: string, sample: string): boolean {
  if (sample === '') return false
  const words = cmd.trim().split(/\s+/).slice(1, 5).map((w) => baseName(w.replace(/^["']|["']$/g, '')))
  return words.includes(sample)
}

export const startsShell: SignatureRule = {
  name: 'starts_shell',
  description: 'Starts a command shell or script interpreter',
  severity: 2,
  categories: ['execution'],
  ttp: ['T1059'],
  run(report, mark) {
    const seen = new Set<string>()
    const sample = baseName(str(obj(report, 'target', 'file'), 'name'))
    const processes = objs(report, 'behavior', 'processes')
    const pids = new Set(processes.map((p) => num(p, 'pid')))
    for (const p of processes) {
      const name = str(p, 'process_name').toLowerCase() || baseName(str(p, 'process_path'))
      const isRoot = !pids.has(num(p, 'ppid'))
      if (isRoot || launchesSample(str(p, 'command_line'), sample)) { seen.add(str(p, 'command_line')); continue }
      if (SHELLS.has(name)) {
        const cmd = str(p, 'command_line') || name
        seen.add(cmd)
        mark.generic({ pid: num(p, 'pid'), process_name: str(p, 'process_name'), command_line: cmd })
      }
    }
    for (const { cmd } of commandLines(report)) {
      if (!seen.has(cmd) && SHELLS.has(program(cmd)) && !launchesSample(cmd, sample)) { seen.add(cmd); mark.ioc('cmdline', cmd) }
    }
  }
}
