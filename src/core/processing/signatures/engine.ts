// Runs the signature rules over an assembled report and gives report.json's `signatures` and the
// score. Cuckoo 2's RunSignatures keeps, per signature, the first 50 marks and their count, and sets
// `info.score` to the sum of the fired signatures' severities divided by 5; Aviary does the same and
// caps the score at 10, so one danger (3) scores 0.6, five dangers 3.0, and seventeen 10. A rule that
// throws is reported in the log and skipped, as Cuckoo does: one broken rule never costs the report.
import { RULES } from './rules/index'
import type { CallView, Mark, Marker, Signature, SignatureRule } from './signature'
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

interface RuleState {
  rule: SignatureRule
  marks: Mark[]
  count: number
  techniques: Set<string>
  marker: Marker
  failed: boolean
}

function stateOf(rule: SignatureRule): RuleState {
  const s: RuleState = { rule, marks: [], count: 0, techniques: new Set(rule.ttp), marker: null as unknown as Marker, failed: false }
  const keep = (m: Mark): void => { s.count++; if (s.marks.length < MAX_MARKS) s.marks.push(m) }
  s.marker = {
    ioc: (category, ioc, description) => keep({ type: 'ioc', category, ioc, description: description ?? null }),
    call: (pid, cid, call) => keep({ type: 'call', pid, cid, call }),
    generic: (fields) => keep({ ...fields, type: 'generic' }),
    technique: (id) => { if (TECHNIQUE_ID.test(id)) s.techniques.add(id) }
  }
  return s
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * One pass over every process's calls for the rules that look at calls. `calls` may be the calls
 * store's view (an array read from disk a page at a time): it is indexed, never copied, and a
 * process whose apistats name none of the wanted apis is not read at all.
 */
function callsPass(report: Record<string, unknown>, states: RuleState[], log?: (msg: string) => void): void {
  const byApi = new Map<string, RuleState[]>()
  for (const s of states) for (const api of s.rule.calls?.apis ?? []) byApi.set(api, [...(byApi.get(api) ?? []), s])
  if (byApi.size === 0) return
  const behavior = isRecord(report.behavior) ? report.behavior : {}
  const apistats = isRecord(behavior.apistats) ? behavior.apistats : {}
  const processes = Array.isArray(behavior.processes) ? behavior.processes : []
  for (const p of processes) {
    if (!isRecord(p) || typeof p.pid !== 'number' || !Array.isArray(p.calls)) continue
    const stats = apistats[String(p.pid)]
    if (isRecord(stats) && ![...byApi.keys()].some((api) => api in stats)) continue
    const calls = p.calls as readonly unknown[]
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i]
      if (!isRecord(c) || typeof c.api !== 'string') continue
      const rules = byApi.get(c.api)
      if (rules === undefined) continue
      const call = { ...c, arguments: isRecord(c.arguments) ? c.arguments : {} } as CallView
      for (const s of rules) {
        if (s.failed) continue
        try {
          s.rule.calls!.onCall(call, p.pid, i, s.marker)
        } catch (err) {
          s.failed = true
          log?.(`signature ${s.rule.name} failed: ${err instanceof Error ? err.message : String(err)}`)
        }
      }
    }
  }
}

export function runSignatures(
  report: Record<string, unknown>,
  o: RunSignaturesOptions = {}
): { signatures: Signature[]; score: number } {
  const states = (o.rules ?? RULES).map(stateOf)
  for (const s of states) {
    try {
      s.rule.run(report, s.marker)
    } catch (err) {
      s.failed = true
      o.log?.(`signature ${s.rule.name} failed: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  callsPass(report, states, o.log)
  const fired: Signature[] = []
  for (const s of states) {
    if (s.failed || s.count === 0) continue
    fired.push({
      name: s.rule.name,
      description: s.rule.description,
      severity: s.rule.severity,
      families: [...(s.rule.families ?? [])],
      references: [...(s.rule.references ?? [])],
      ttp: ttpOf([...s.techniques]),
      marks: s.marks,
      markcount: s.count
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
