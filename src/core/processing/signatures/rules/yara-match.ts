// Fires when a YARA rule of the user's rule folder matched the sample, a dropped file or a process
// memory dump. One mark per (file, rule); the severity of a match is left to the rule's meta
// (`severity` 1–3) only in its mark — the signature itself is a danger. Its ATT&CK ids are the ones
// the matched rules name in their meta (`mitre_attack`, `attack_id`, `ttp`: one id or several,
// separated by commas or spaces), as rule sets such as signature-base write them.
import type { SignatureRule } from '../signature'
import { obj, objs, str } from '../../../reporting/report-view'

export const yaraMatch: SignatureRule = {
  name: 'yara_match',
  description: 'A YARA rule matched the sample, a dropped file or a memory dump',
  severity: 3,
  categories: ['yara'],
  ttp: [],
  run(report, mark) {
    const each = (where: string, file: string, matches: Record<string, unknown>[]): void => {
      for (const m of matches) {
        const name = str(m, 'name')
        if (!name) continue
        const meta = obj(m, 'meta')
        mark.generic({ rule: name, where, file, meta })
        for (const key of ['mitre_attack', 'attack_id', 'ttp']) {
          const v = meta[key]
          if (typeof v === 'string') for (const id of v.split(/[\s,;]+/)) mark.technique(id.toUpperCase())
        }
      }
    }
    const target = obj(report, 'target', 'file')
    each('target', str(target, 'name'), objs(target, 'yara'))
    for (const d of objs(report, 'dropped')) each('dropped', str(d, 'filepath') || str(d, 'name'), objs(d, 'yara'))
    for (const p of objs(report, 'procmemory')) each('procmemory', str(p, 'file'), objs(p, 'yara'))
  }
}
