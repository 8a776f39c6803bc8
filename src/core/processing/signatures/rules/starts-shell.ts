// Fires when the sample starts a command shell or script interpreter to run commands of its own:
// cmd.exe, PowerShell, the script hosts, mshta, or a Unix shell. Samples shell out to run the next
// stage. What the shell runs decides whether it is the sample's doing:
// - commands (`sh -c CMD`, `cmd /c CMD`, or on its standard input as in `curl x | sh`) count when
//   the sample's own code started the shell (the process running the sample, a program the run
//   wrote, or a shell that counted), or when CMD is in the command line of the program that started
//   it (the sample handed it over: `timeout 5 sh -c CMD`, `find / -exec sh -c CMD`);
// - a script file counts when the run wrote it.
// Not counted: a shell an installed program starts for its own work with a command the sample did
// not give it (GNU tar runs `/bin/sh -c gzip` for -z, make runs recipes with `sh -c`); a program
// that is itself a shell script (gunzip, zgrep, ldd, a tool's wrapper: an interpreter running an
// installed file, and its subshells, which are forks of it); and the interpreter the analysis
// package started the sample with (the tree's root: `sh sample.sh`, `cmd.exe /c sample.bat`).
import type { SignatureRule } from '../signature'
import { baseName, commandLines, obj, objs, num, str, writtenPaths, type Obj } from '../../../reporting/report-view'

const UNIX_SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'csh', 'tcsh', 'fish', 'busybox'])
/** Windows interpreters, and the ATT&CK sub-technique each one is. */
const WINDOWS_SHELLS = new Map([
  ['cmd.exe', 'T1059.003'], ['powershell.exe', 'T1059.001'], ['pwsh.exe', 'T1059.001'], ['pwsh', 'T1059.001'],
  ['wscript.exe', ''], ['cscript.exe', ''], ['mshta.exe', 'T1218.005']
])

/** The words of a command line: blanks separate them, double quotes group (as Windows quotes). */
function words(cmd: string): string[] {
  return [...cmd.matchAll(/"([^"]*)"?|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '')
}

/** The program a command line starts, as a lower-cased base name. */
function program(cmd: string): string {
  return baseName(words(cmd)[0] ?? '')
}

/** True when one of the first arguments of `cmd` is the sample itself (the package's launcher). */
function launchesSample(cmd: string, sample: string): boolean {
  if (sample === '') return false
  return words(cmd).slice(1, 5).map((w) => baseName(w.replace(/^'|'$/g, ''))).includes(sample)
}

/** What a shell process was given to run: commands (with their text), or a script file. */
type ShellInput = { kind: 'commands'; text: string } | { kind: 'script'; file: string }

function unixInput(args: string[]): ShellInput {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (a === '--') return args[i + 1] === undefined ? { kind: 'commands', text: '' } : { kind: 'script', file: args[i + 1]! }
    // -c, or options joined with it (-ec, -xc): the next words are the commands.
    if (/^-[A-Za-z]*c[A-Za-z]*$/.test(a)) return { kind: 'commands', text: args.slice(i + 1).join(' ') }
    if (a === '-o' || a === '+o' || a === '-O' || a === '+O') { i++; continue }
    if (/^[-+]/.test(a)) continue
    return { kind: 'script', file: a }
  }
  // No command and no script: it reads its commands from its standard input.
  return { kind: 'commands', text: '' }
}

function windowsInput(name: string, args: string[]): ShellInput {
  if (name === 'wscript.exe' || name === 'cscript.exe') {
    const file = args.find((a) => !a.startsWith('/'))
    return file === undefined ? { kind: 'commands', text: '' } : { kind: 'script', file }
  }
  if (name.startsWith('powershell') || name.startsWith('pwsh')) {
    const f = args.findIndex((a) => /^-f(ile)?$/i.test(a))
    if (f >= 0 && args[f + 1] !== undefined) return { kind: 'script', file: args[f + 1]! }
  }
  const c = args.findIndex((a) => /^\/[ck]$/i.test(a) || /^-(c|command|e|enc|encodedcommand)$/i.test(a))
  return { kind: 'commands', text: (c >= 0 ? args.slice(c + 1) : args).join(' ') }
}

/** `text` appears in `cmd` as whole words (not inside a longer name or path). */
function handedOver(text: string, cmd: string): boolean {
  const t = text.trim().replace(/^["']|["']$/g, '')
  if (t === '') return false
  for (let at = cmd.indexOf(t); at >= 0; at = cmd.indexOf(t, at + 1)) {
    const before = cmd[at - 1] ?? ' '
    const after = cmd[at + t.length] ?? ' '
    if (!/[\w./-]/.test(before) && !/[\w./-]/.test(after)) return true
  }
  return false
}

/** Windows paths compare without case and with one kind of separator; POSIX paths as they are. */
function norm(p: string): string {
  return /^[A-Za-z]:[\\/]|^\\\\/.test(p) ? p.replace(/\//g, '\\').toLowerCase() : p
}

export const startsShell: SignatureRule = {
  name: 'starts_shell',
  description: 'Starts a command shell or script interpreter to run commands of its own',
  severity: 2,
  categories: ['execution'],
  ttp: ['T1059'],
  techniques: ['T1059.001', 'T1059.003', 'T1059.004', 'T1059.005', 'T1059.007', 'T1218.005'],
  run(report, mark) {
    const sample = baseName(str(obj(report, 'target', 'file'), 'name'))
    const written = new Set(writtenPaths(report).map(norm))
    const isWritten = (file: string): boolean =>
      file !== '' && (written.has(norm(file)) || (!/^[\\/]|^[A-Za-z]:/.test(file) && [...written].some((w) => w.endsWith(`/${file}`) || w.endsWith(`\\${norm(file)}`))))
    const processes = objs(report, 'behavior', 'processes')
    const byPid = new Map<number, Obj>()
    for (const p of processes) { const pid = num(p, 'pid'); if (pid !== null && !byPid.has(pid)) byPid.set(pid, p) }
    const seen = new Set(processes.map((p) => str(p, 'command_line')))
    const sampleCode = new Map<number, boolean>()
    const fired = new Map<number, string>()

    /** The shell this process is and what it was given, or null when it is no shell. */
    const shellOf = (p: Obj): { name: string; technique: string; input: ShellInput } | null => {
      const cmd = str(p, 'command_line')
      const name = str(p, 'process_name').toLowerCase() || baseName(str(p, 'process_path'))
      let args = words(cmd).slice(1)
      if (WINDOWS_SHELLS.has(name)) {
        const input = windowsInput(name, args)
        let technique = WINDOWS_SHELLS.get(name)!
        if (technique === '' && input.kind === 'script') technique = /\.(js|jse)$/i.test(input.file) ? 'T1059.007' : /\.(vbs|vbe)$/i.test(input.file) ? 'T1059.005' : ''
        return { name, technique, input }
      }
      if (!UNIX_SHELLS.has(name)) return null
      if (name === 'busybox') {
        if (!UNIX_SHELLS.has(baseName(args[0] ?? ''))) return null
        args = args.slice(1)
      }
      return { name, technique: 'T1059.004', input: unixInput(args) }
    }

    /** Does this process run the sample's own code (see the header)? */
    const isSampleCode = (p: Obj, depth = 0): boolean => {
      const pid = num(p, 'pid')
      if (pid !== null && sampleCode.has(pid)) return sampleCode.get(pid)!
      const cmd = str(p, 'command_line')
      const parent = byPid.get(num(p, 'ppid') ?? -1)
      let yes = parent === undefined || launchesSample(cmd, sample) || (sample !== '' && (program(cmd) === sample || baseName(str(p, 'process_path')) === sample)) ||
        isWritten(str(p, 'process_path')) || isWritten(words(cmd)[0] ?? '')
      if (!yes && depth < 64) yes = counts(p, depth + 1) !== null
      if (pid !== null) sampleCode.set(pid, yes)
      return yes
    }

    /** Why this shell counts, or null when it does not. */
    const counts = (p: Obj, depth: number): string | null => {
      const shell = shellOf(p)
      const parent = byPid.get(num(p, 'ppid') ?? -1)
      if (shell === null || parent === undefined || launchesSample(str(p, 'command_line'), sample)) return null
      if (shell.input.kind === 'script') return isWritten(shell.input.file) ? `runs ${shell.input.file}, which the run wrote` : null
      if (depth < 64 && isSampleCode(parent, depth)) return 'started by the sample'
      return handedOver(shell.input.text, str(parent, 'command_line')) ? `commands handed over by ${str(parent, 'process_name') || 'its parent'}` : null
    }

    for (const p of processes) {
      const pid = num(p, 'pid')
      if (pid === null || fired.has(pid)) continue
      const why = counts(p, 0)
      if (why === null) continue
      fired.set(pid, why)
      const technique = shellOf(p)!.technique
      if (technique !== '') mark.technique(technique)
      mark.generic({ pid, process_name: str(p, 'process_name'), command_line: str(p, 'command_line') || str(p, 'process_name'), why })
    }
    // Command lines no process of the report has (a monitor's CreateProcess of a process it did not
    // follow): the sample's processes started them.
    for (const { cmd } of commandLines(report)) {
      if (seen.has(cmd)) continue
      seen.add(cmd)
      const name = program(cmd)
      if ((UNIX_SHELLS.has(name) || WINDOWS_SHELLS.has(name)) && !launchesSample(cmd, sample)) {
        const technique = UNIX_SHELLS.has(name) ? 'T1059.004' : WINDOWS_SHELLS.get(name)!
        if (technique !== '') mark.technique(technique)
        mark.ioc('cmdline', cmd)
      }
    }
  }
}
