// The signatures module as the pipeline sees it: run the rule set over the assembled report.
export { runSignatures, scoreOf, MAX_MARKS, MAX_SCORE } from './engine'
export type { RunSignaturesOptions } from './engine'
export type { Mark, IocMark, CallMark, GenericMark, Marker, Severity, Signature, SignatureRule } from './signature'
export { RULES } from './rules/index'
