// Fires when the run leaves an executable behind: a dropped file whose content is a PE, ELF or
// Mach-O program (by its file type, never by its name: random bytes called payload.exe are data), or,
// for a written path the guest did not upload, a Windows executable extension. Droppers and
// downloaders are the usual reason. A program a system linker wrote (ld, collect2, lld, mold: `cc`,
// `make`) is a build's output, not a drop: compilers write executables by design. A sample that
// brings source and builds its payload with the guest's compiler is therefore not marked here; it
// still is when it runs what it built (drops_and_runs_executable).
import type { SignatureRule } from '../signature'
import { baseName, num, objs, str, strs, writtenPaths, type Obj } from '../../../reporting/report-view'

const WINDOWS_EXEC_EXT = /\.(exe|dll|scr|sys|com|pif|cpl|ocx)$/i
const EXEC_TYPE = /^(PE32\+? executable|MS-DOS executable|ELF (32|64)-bit \S+ (executable|shared object|pie executable)|Mach-O )/
/** Linkers (and gcc's collect2, which runs one), by program name, with or without a target prefix. */
const LINKER = /^(?:[\w.-]+-)?(?:ld(?:\.(?:bfd|gold|lld))?|lld|ld64\.lld|mold|collect2)$/

export const dropsExecutable: SignatureRule = {
  name: 'drops_executable',
  description: 'Writes an executable file to disk',
  severity: 2,
  categories: ['dropper'],
  ttp: ['T1105'],
  run(report, mark) {
    const written = new Set(writtenPaths(report))
    const processes = new Map<number, Obj>()
    for (const p of objs(report, 'behavior', 'processes')) { const pid = num(p, 'pid'); if (pid !== null) processes.set(pid, p) }
    // An installed linker: its name says so, and the run did not write its image.
    const isLinker = (pid: number): boolean => {
      const p = processes.get(pid)
      if (p === undefined) return false
      const path = str(p, 'process_path')
      return LINKER.test(str(p, 'process_name')) && (path === '' || LINKER.test(baseName(path))) && !written.has(path)
    }
    // Who wrote each path, from the processes' own summaries.
    const writers = new Map<string, number[]>()
    for (const g of objs(report, 'behavior', 'generic')) {
      const pid = num(g, 'pid')
      if (pid === null) continue
      for (const key of ['file_written', 'file_created']) for (const f of strs(g, 'summary', key)) writers.set(f, [...(writers.get(f) ?? []), pid])
    }
    const built = (path: string, pids: number[]): boolean => {
      const all = [...new Set([...pids, ...(writers.get(path) ?? [])])]
      return all.length > 0 && all.every(isLinker)
    }
    const uploaded = new Set<string>()
    for (const d of objs(report, 'dropped')) {
      const path = str(d, 'filepath') || str(d, 'path') || str(d, 'name')
      uploaded.add(path)
      const type = str(d, 'type')
      const pids = (Array.isArray(d.pids) ? d.pids : []).filter((x): x is number => typeof x === 'number')
      if (EXEC_TYPE.test(type) && !built(path, pids)) mark.ioc('file', path, type)
    }
    for (const p of written) {
      if (!uploaded.has(p) && WINDOWS_EXEC_EXT.test(p) && !built(p, [])) mark.ioc('file', p, 'written with an executable extension, content not uploaded')
    }
  }
}
