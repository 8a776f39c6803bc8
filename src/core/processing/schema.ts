// Building blocks of the report's schema (report-schema.ts). Each processing module declares the
// shape of what it gives the report as a TypeBox schema next to its code, and takes its TypeScript
// type from that schema: the JSON Schema published in docs/report.schema.json and the types the
// code is checked against are then one definition. Objects of Aviary's own making are closed
// (`additionalProperties: false`), so a key added or renamed without the schema fails the report
// tests; maps (summary categories, flags, arguments) stay open.
import { Type, type TProperties, type TSchema } from 'typebox'

export { Type, type Static } from 'typebox'

/** The value, or null. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** An object with exactly these keys (optional ones marked with Type.Optional). */
export const Closed = <P extends TProperties>(properties: P, options: { description?: string } = {}) =>
  Type.Object(properties, { additionalProperties: false, ...options })

/** Epoch seconds, as report.json writes datetimes (Cuckoo's jsondump). */
export const Epoch = Type.Number({ description: 'seconds since the Unix epoch' })

/** A hex string as Python writes numbers in Cuckoo's reports (`0x0040a000`). */
export const Hex = Type.String({ pattern: '^0x[0-9a-f]+$' })
