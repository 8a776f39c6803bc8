// The small words request schemas are written with, on both servers: `x-allowed` (what a field
// accepts, in words: what a 400 tells the client), optional fields, flags and bounded text.
import { Type, type TSchema } from 'typebox'

export const allowed = <T extends TSchema>(schema: T, text: string): T => ({ ...schema, 'x-allowed': text })

/** Every field of `fields` made optional (form fields: an empty one counts as absent). */
export const optionalFields = <T extends Record<string, TSchema>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Type.Optional(v)])) as { [K in keyof T]: ReturnType<typeof Type.Optional<T[K]>> }

/** The spellings of a boolean form field, as Cuckoo's clients send them. */
export const BOOLEAN_PATTERN = '^(?:[01]|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[Yy][Ee][Ss]|[Nn][Oo]|[Oo][Nn]|[Oo][Ff][Ff])$'

export const Flag = (description: string) =>
  allowed(Type.String({ pattern: BOOLEAN_PATTERN, description, examples: ['yes'] }), 'one of 1/0, true/false, yes/no, on/off (any case); empty means false')

export const Text = (description: string, maxLength = 4096) =>
  allowed(Type.String({ maxLength, description }), `text of at most ${maxLength} characters`)
