// Checks a report against the contract: the JSON Schema of report.json (src/core/processing/
// report-schema.ts, published as docs/report.schema.json). Used by the tests that produce reports
// from real runs and real inputs; returns what does not fit, as readable lines, [] when it all does.
import Ajv, { type ValidateFunction } from 'ajv'
import type { TSchema } from 'typebox'
import { ReportSchema } from '../src/core/processing/report-schema'

const compiled = new WeakMap<TSchema, ValidateFunction>()

/** Where `value` does not fit `schema` (the whole report's by default). */
export function schemaProblems(value: unknown, schema: TSchema = ReportSchema): string[] {
  let validate = compiled.get(schema)
  if (validate === undefined) {
    // One Ajv per schema: schemas that share a nested $id (the process tree's) cannot share one.
    validate = new Ajv({ allErrors: true, strict: true }).compile(schema)
    compiled.set(schema, validate)
  }
  if (validate(value)) return []
  return (validate.errors ?? []).slice(0, 50).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}${e.params && 'additionalProperty' in e.params ? `: ${String(e.params.additionalProperty)}` : ''}`)
}
