// Fires when the run leaves an executable behind: a dropped file whose content is a PE, ELF or
// Mach-O program (by its file type, never by its name: random bytes called payload.exe are data), or,
// for a written path the guest did not upload, a Windows executable extension. Droppers and
// downloaders are the usual reason.
import type { SignatureRule } from '../signature'
import { objs, str, writtenPaths } from '../../../reporting/report-view'

const WINDOWS_EXEC_EXT = /\.(exe|dll|scr|sys|com|pif|cpl|ocx)$/i
const EXEC_TYPE = /^(PE32\+? executable|MS-DOS executable|ELF (32|64)-bit \S+ (executable|shared object|pie executable)|Mach-O )/

export const dropsExecutable: SignatureRule = {
  name: 'drops_executable',
  description: 'Writes an executable file to disk',
  severity: 2,
  categories: ['dropper'],
  ttp: ['T1105'],
  run(report, mark) {
    const uploaded = new Set<string>()
    for (const d of objs(report, 'dropped')) {
      const path = str(d, 'filepath') || str(d, 'path') || str(d, 'name')
      uploaded.add(path)
      const type = str(d, 'type')
      if (EXEC_TYPE.test(type)) mark.ioc('file', path, type)
    }
    for (const p of writtenPaths(report)) {
      if (!uploaded.has(p) && WINDOWS_EXEC_EXT.test(p)) mark.ioc('file', p, 'written with an executable extension, content not uploaded')
    }
  }
}
