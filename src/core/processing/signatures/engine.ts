// Runs the signature rules over an assembled report and gives report.json's `signatures` and the
// score. Cuckoo 2's RunSignatures keeps, per signature, the first 50 marks and their count, and sets
// `info.score` to the sum of the fired signatures' severities divided by 5; Aviary does the same and
// caps the score at 10, so one danger (3) scores 0.6, five dangers 3.0, and seventeen 10. A rule that
// throws is reported in the log and skipped, as Cuckoo does: one broken rule never costs the report.
import { RULES } from './rules/index'
import type { Mark, Marker, Signature, SignatureRule } from './signature'
import { ttpOf } from './attack'

export type { Mark, Signature, SignatureRule } from './signature'

/** Marks kept per signature (Cuckoo's `Signature.markcount` default); `markcount` counts them all. */
export const MAX_MARKS = 50
export const MAX_SCORE = 10
/** An ATT&CK technique or sub-technique id. */
const TECHNIQUE_ID = /^T\d{4}(\.\d{3})?$/

export interface RunSignaturesOptions {
  /** The rule set; defaults to every rule of rules/index.ts. */
  rules?: readonly SignatureRule[]
  /** Where a failing rule is reported. */
  log?: (msg: string) => void
}

export function runSignatures(
  report: Record<string, unknown>,
  o: RunSignaturesOptions = {}
): { signatures: Signature[]; score: number } {
  const fired: Signature[] = []
  for (const rule of o.rules ?? RULES) {
    const marks: Mark[] = []
    const techniques = new Set(rule.ttp)
    let count = 0
    const keep = (m: Mark): void => { count++; if (marks.length < MAX_MARKS) marks.push(m) }
    const marker: Marker = {
      ioc: (category, ioc, description) => keep({ type: 'ioc', category, ioc, description: description ?? null }),
      call: (pid, cid, call) => keep({ type: 'call', pid, cid, call }),
      generic: (fields) => keep({ ...fields, type: 'generic' }),
      technique: (id) => { if (TECHNIQUE_ID.test(id)) techniques.add(id) }
    }
    try {
      rule.run(report, marker)
    } catch (err) {
      o.log?.(`signature ${rule.name} failed: ${err instanceof Error ? err.message : String(err)}`)
      continue
    }
    if (count === 0) continue
    fired.push({
      name: rule.name,
      description: rule.description,
      severity: rule.severity,
      families: [...(rule.families ?? [])],
      references: [...(rule.references ?? [])],
      ttp: ttpOf([...techniques]),
      marks,
      markcount: count
    })
  }
  // Cuckoo 2's order (RunSignatures sorts by severity, ascending), which report consumers may rely
  // on; rules of equal severity keep the rule set's order (sort is stable). Views show the most
  // severe first themselves (the HTML report does).
  fired.sort((a, b) => a.severity - b.severity)
  return { signatures: fired, score: scoreOf(fired) }
}

/** Cuckoo 2's score: sum of severities / 5, here capped at 10 and kept to one decimal. */
export function scoreOf(signatures: readonly Pick<Signature, 'severity'>[]): number {
  const sum = signatures.reduce((acc, s) => acc + s.severity, 0)
  return Math.min(MAX_SCORE, Math.round((sum / 5) * 10) / 10)
}
