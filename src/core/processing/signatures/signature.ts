// The shape of a signature rule and of what it reports, as Cuckoo 2's report.json carries them
// (`signatures[]`: name, description, severity, families, references, ttp, marks, markcount) — so
// existing Cuckoo report consumers read Aviary's signatures unchanged. A rule is a plain object in
// its own file under rules/; it reads the assembled report (never the analysis folder) and calls
// `mark` for every piece of evidence. A rule that marked nothing did not fire.

import { Closed, Nullable, Type, type Static } from '../schema'

/** Cuckoo's severities: 1 informational, 2 warning (suspicious), 3 danger (malicious). */
export type Severity = 1 | 2 | 3

/** An indicator: a value of a category (file, domain, ip, url, cmdline, registry, yara, …). */
export const IocMarkSchema = Closed({ type: Type.Literal('ioc'), category: Type.String(), ioc: Type.String(), description: Nullable(Type.String()) })
export type IocMark = Static<typeof IocMarkSchema>

/** An API call of a monitored process: `call` is the behavior.processes[].calls[] entry, `cid` its index. */
export const CallMarkSchema = Closed({ type: Type.Literal('call'), pid: Type.Integer(), cid: Type.Integer(), call: Type.Record(Type.String(), Type.Unknown()) })
export type CallMark = Static<typeof CallMarkSchema>

/** Anything else worth pointing at, as free keys (Cuckoo's `mark(**kwargs)`). */
export const GenericMarkSchema = Type.Object({ type: Type.Literal('generic') }, { additionalProperties: true })
export type GenericMark = { type: 'generic'; [key: string]: unknown }

export type Mark = IocMark | CallMark | GenericMark

/** One fired signature in report.json's `signatures[]`. */
export const SignatureSchema = Closed({
  name: Type.String(),
  description: Type.String(),
  severity: Type.Union([Type.Literal(1), Type.Literal(2), Type.Literal(3)]),
  families: Type.Array(Type.String()),
  references: Type.Array(Type.String()),
  /** Cuckoo 2.0.7's shape: technique id → its name (`short`) and a sentence on it (`long`). */
  ttp: Type.Record(Type.String({ pattern: '^T\\d{4}(\\.\\d{3})?$' }), Closed({ short: Type.String(), long: Type.String() })),
  /** The first MAX_MARKS marks (Cuckoo keeps 50); `markcount` is how many there were in all. */
  marks: Type.Array(Type.Union([IocMarkSchema, CallMarkSchema, GenericMarkSchema])),
  markcount: Type.Integer()
})
export interface Signature extends Omit<Static<typeof SignatureSchema>, 'marks' | 'severity'> {
  severity: Severity
  marks: Mark[]
}

/** What a rule calls for each piece of evidence. */
export interface Marker {
  ioc(category: string, ioc: string, description?: string): void
  call(pid: number, cid: number, call: Record<string, unknown>): void
  generic(fields: Record<string, unknown>): void
  /** A technique this evidence is (one of the rule's `techniques`, or a YARA rule's ATT&CK meta), added to its `ttp`. */
  technique(id: string): void
}

/** A rule: metadata plus `run`, which inspects the report and marks what it found. */
export interface SignatureRule {
  name: string
  description: string
  severity: Severity
  /** Cuckoo's signature categories (e.g. "network", "persistence", "dropper"); for the reader. */
  categories: string[]
  families?: string[]
  references?: string[]
  /** MITRE ATT&CK technique ids (attack.ts names them) every firing carries; the report's `ttp` starts from these. */
  ttp: readonly string[]
  /**
   * Technique ids its evidence may add (`mark.technique`): a Run key is T1547.001, a service
   * T1543.003. Declared here so that the tests can check each one against what the rule detects.
   */
  techniques?: readonly string[]
  run(report: Record<string, unknown>, mark: Marker): void
  /**
   * Evidence in the processes' calls (Cuckoo's `on_call`): `onCall` sees each call whose api is in
   * `apis`, of every process, in order. The engine reads the calls once for all rules, from the
   * calls store a page at a time, and skips processes whose apistats show none of the apis.
   */
  calls?: {
    apis: readonly string[]
    onCall(call: CallView, pid: number, index: number, mark: Marker): void
  }
}

/** A call as onCall sees it (behavior.processes[].calls[]: Cuckoo's keys). */
export interface CallView {
  api: string
  category: string
  arguments: Record<string, unknown>
  return_value: unknown
  status: unknown
  [key: string]: unknown
}
