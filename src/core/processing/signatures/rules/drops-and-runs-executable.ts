// Fires when the run starts a program from a file the run itself wrote: a dropper writing its
// payload and executing it, the step that separates "drops an executable" (drops_executable) from
// installing and running one. Matched on each process's executable path, else the program of its
// command line, against the written paths (behavior.summary and dropped[]), case-insensitively on
// Windows paths. The sample itself is not a match: the analyzer's file monitor saw it before the
// run, so it is not among the written paths (a copy of itself elsewhere is).
import type { SignatureRule } from '../signature'
import { objs, str, writtenPaths } from '../../../reporting/report-view'

/** The program of a command line: its first word, quotes honoured. */
function program(commandLine: string): string {
  const m = /^\s*(?:"([^"]*)"|(\S+))/.exec(commandLine)
  return m === null ? '' : (m[1] ?? m[2] ?? '')
}

/** Windows paths compare without case and with one kind of separator; POSIX paths as they are. */
function norm(p: string): string {
  return /^[A-Za-z]:[\\/]|^\\\\/.test(p) ? p.replace(/\//g, '\\').toLowerCase() : p
}

export const dropsAndRunsExecutable: SignatureRule = {
  name: 'drops_and_runs_executable',
  description: 'Starts a program it wrote to disk itself',
  severity: 3,
  categories: ['dropper'],
  ttp: ['T1105', 'T1106'],
  run(report, mark) {
    const written = new Map(writtenPaths(report).map((p) => [norm(p), p]))
    if (written.size === 0) return
    const marked = new Set<string>()
    for (const p of objs(report, 'behavior', 'processes')) {
      const path = str(p, 'process_path') || program(str(p, 'command_line'))
      const key = norm(path)
      const file = written.get(key)
      if (file === undefined || marked.has(key)) continue
      marked.add(key)
      mark.ioc('file', file, `started as ${str(p, 'process_name') || 'a process'} (pid ${String(p.pid)})`)
    }
  }
}
