// Maps every failure to Cuckoo's error shape, {"message": "..."}, plus a code. Validation
// failures name the field and what it accepts; framework errors become the 4xx they are;
// anything unexpected is logged and answered with a 500 that says nothing about internals.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors'
import { ErrorCodes, type ErrorCode } from '../../shared/errors'
import { TooLargeError, formatBytes } from '../storage/ingest'

interface AjvError {
  instancePath: string
  keyword: string
  message?: string
  params: Record<string, unknown>
  parentSchema?: Record<string, unknown>
  schema?: unknown
}

export function installErrorHandling(app: FastifyInstance, maxUploadBytes: number): void {
  app.setErrorHandler((error: FastifyError & { part?: unknown }, request, reply) => {
    if (error instanceof ApiError) return send(reply, error.statusCode, error.message, error.code)
    if (error.validation) {
      return send(reply, 400, validationMessage(error.validation as AjvError[], error.validationContext, request), ErrorCodes.BAD_REQUEST)
    }
    if (error instanceof TooLargeError || error.code === 'FST_REQ_FILE_TOO_LARGE') {
      return send(reply, 413, `file: the upload exceeds the limit of ${formatBytes(maxUploadBytes)}`, ErrorCodes.TOO_LARGE)
    }
    const mapped = frameworkError(error)
    if (mapped) return send(reply, mapped[0], mapped[1], mapped[0] === 413 ? ErrorCodes.TOO_LARGE : ErrorCodes.BAD_REQUEST)
    if (error.code === 'ECONNRESET' || request.raw.destroyed) {
      request.log.info('client went away during the request')
      return reply
    }
    request.log.error({ err: error }, 'request failed')
    return send(reply, 500, 'Internal error: the request could not be completed (see the service log)', ErrorCodes.INTERNAL)
  })
  app.setNotFoundHandler((request, reply) =>
    send(reply, 404, `No such endpoint: ${request.method} ${request.url.split('?')[0]}`, ErrorCodes.NOT_FOUND))
}

export function send(reply: FastifyReply, status: number, message: string, code: ErrorCode): FastifyReply {
  return reply.code(status).type('application/json').send({ message, code })
}

function frameworkError(error: FastifyError): [number, string] | null {
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

function validationMessage(errors: AjvError[], context: string | undefined, request: FastifyRequest): string {
  const e = errors[0]
  if (!e) return 'the request is not valid'
  const field = e.keyword === 'required' ? String(e.params.missingProperty) : e.instancePath.split('/').filter(Boolean)[0] ?? context ?? 'request'
  const schema = e.keyword === 'required'
    ? ((e.parentSchema?.properties as Record<string, Record<string, unknown>> | undefined)?.[field])
    : e.parentSchema
  const allowed = typeof schema?.['x-allowed'] === 'string' ? schema['x-allowed'] : e.message ?? 'not valid'
  if (e.keyword === 'required') return `${field}: required; ${allowed}`
  const source = (context === 'params' ? request.params : context === 'querystring' ? request.query : request.body) as Record<string, unknown> | undefined
  const got = source?.[field]
  const shown = typeof got === 'string' || typeof got === 'number' ? ` (got '${printable(String(got))}')` : ''
  return `${field}: ${allowed}${shown}`
}

function printable(s: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = s.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')
  return clean.length > 64 ? `${clean.slice(0, 64)}…` : clean
}
