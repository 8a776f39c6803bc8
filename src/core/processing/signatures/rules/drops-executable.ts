// Fires when the run leaves an executable behind: a dropped file whose type is PE or ELF, or a
// written path with an executable extension. Droppers and downloaders are the usual reason.
import type { SignatureRule } from '../signature'
import { objs, str, writtenPaths } from '../../../reporting/report-view'

const EXEC_EXT = /\.(exe|dll|scr|sys|com|pif|cpl|ocx|elf|so|bin)$/i
const EXEC_TYPE = /\b(PE32\+?|MS-DOS executable|ELF (32|64)-bit)/

export const dropsExecutable: SignatureRule = {
  name: 'drops_executable',
  description: 'Writes an executable file to disk',
  severity: 2,
  categories: ['dropper'],
  ttp: ['T1105'],
  run(report, mark) {
    const marked = new Set<string>()
    for (const d of objs(report, 'dropped')) {
      const path = str(d, 'filepath') || str(d, 'path') || str(d, 'name')
      const type = str(d, 'type')
      if (EXEC_TYPE.test(type) || EXEC_EXT.test(path)) {
        marked.add(path)
        mark.ioc('file', path, type || undefined)
      }
    }
    for (const p of writtenPaths(report)) {
      if (!marked.has(p) && EXEC_EXT.test(p)) { marked.add(p); mark.ioc('file', p) }
    }
  }
}
