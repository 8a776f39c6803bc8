// Fires when the sample deletes its own file: droppers and installers remove the original to leave
// fewer traces. Matched on the deleted path's base name against the sample's name (the guest runs
// the sample under its submitted name, in a folder the host does not know in advance).
import type { SignatureRule } from '../signature'
import { baseName, obj, str, summary } from '../../../reporting/report-view'

export const deletesSelf: SignatureRule = {
  name: 'deletes_self',
  description: 'Deletes its own executable file',
  severity: 3,
  categories: ['stealth'],
  ttp: ['T1070', 'T1070.004'],
  run(report, mark) {
    const file = obj(report, 'target', 'file')
    const names = new Set([baseName(str(file, 'name')), baseName(str(file, 'path'))].filter((n) => n !== ''))
    if (names.size === 0) return
    for (const p of summary(report, 'file_deleted')) {
      if (names.has(baseName(p))) mark.ioc('file', p, 'the sample\'s own file')
    }
  }
}
