// How the analysis API and the dispatcher word a refused request: the field at fault first, then
// what it allows (a schema's `x-allowed`, else Ajv's message), and what was sent. Both servers are
// Fastify; the types here are the few fields they read, so this file needs no Fastify import.
import { replaceInvisible } from '../invisible'

/** One of Ajv's validation errors, as Fastify hands them to the error handler. */
export interface AjvError {
  instancePath: string
  keyword: string
  message?: string
  params: Record<string, unknown>
  parentSchema?: Record<string, unknown>
  schema?: unknown
}

/** What a framework or parser error carries (FastifyError). */
export interface FrameworkError {
  code?: string
  message: string
  statusCode?: number
}

/**
 * A value as it can be quoted in a message (a 400's, a log's, a terminal's): each character of the
 * invisible set (../invisible.ts: controls, bidi overrides, zero-width characters) becomes `?`, and
 * it is cut at `max` characters.
 */
export function printable(s: string, max = 64): string {
  const cut = s.length > max
  const clean = replaceInvisible(cut ? s.slice(0, max) : s, () => '?')
  return cut ? `${clean}…` : clean
}

/**
 * `field: what it allows (got '…')` for the first error. `sent` is the part of the request the
 * error is about (params, query or body), to quote the refused value.
 */
export function validationMessage(errors: AjvError[], context: string | undefined, sent?: Record<string, unknown>): string {
  const e = errors[0]
  if (!e) return 'the request is not valid'
  const field = e.keyword === 'required' ? String(e.params.missingProperty) : e.instancePath.split('/').filter(Boolean)[0] ?? context ?? 'request'
  const schema = e.keyword === 'required'
    ? ((e.parentSchema?.properties as Record<string, Record<string, unknown>> | undefined)?.[field])
    : e.parentSchema
  const allowed = typeof schema?.['x-allowed'] === 'string' ? schema['x-allowed'] : e.message ?? 'not valid'
  if (e.keyword === 'required') return `${field}: required; ${allowed}`
  // A secret (`writeOnly` in the schema, as OpenAPI marks passwords and tokens) is not repeated.
  const got = schema?.writeOnly === true ? undefined : sent?.[field]
  const shown = typeof got === 'string' || typeof got === 'number' ? ` (got '${printable(String(got))}')` : ''
  return `${field}: ${allowed}${shown}`
}

/** The part of a request that a validation context names. */
export function validatedPart(context: string | undefined, request: { params: unknown; query: unknown; body: unknown }): Record<string, unknown> | undefined {
  return (context === 'params' ? request.params : context === 'querystring' ? request.query : request.body) as Record<string, unknown> | undefined
}

/** Status and message for the errors of Fastify's body parsers and multipart; null: not the client's. */
export function frameworkError(error: FrameworkError): [number, string] | null {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return [400, 'body: unsupported content type; send multipart/form-data, application/x-www-form-urlencoded or application/json']
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return [400, 'body: the JSON body is empty']
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return [400, `body: ${error.message}`]
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return [413, 'body: the request body is too large']
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return [413, `body: ${error.message.toLowerCase()}`]
    case 'FST_PROTO_VIOLATION':
      return [400, 'body: a field name is not allowed']
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return [400, 'body: expected multipart/form-data']
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return [400, 'body: a field marked application/json is not valid JSON']
  }
  // Malformed multipart (busboy) and other client-side errors carry a 4xx status.
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) return [status === 406 || status === 415 ? 400 : status, `body: ${error.message}`]
  if (/multipart|boundary|Unexpected end of form|Part terminated early|Malformed/i.test(error.message)) {
    return [400, `body: malformed multipart data (${error.message})`]
  }
  return null
}
