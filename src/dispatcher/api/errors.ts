// Error bodies of both dispatcher generations: the older routes answer {"message": ...} (Flask-
// RESTful's abort), the newer ones under /api {"success": false, "message": ...}. Bad input is a
// 400 naming the field (Cuckoo answered 500 or 404); anything unexpected is logged and answered
// with a 500 that says nothing about internals.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

export class DistError extends Error {
  constructor(readonly statusCode: number, message: string) {
    super(message)
  }
}

export const badRequest = (field: string, what: string): DistError => new DistError(400, `${field}: ${what}`)
export const notFound = (message: string): DistError => new DistError(404, message)

/** Newer generation: every path under /api (and /api/v1). */
export const isNewer = (url: string): boolean => url === '/api' || url.startsWith('/api/') || url.startsWith('/api?')

export function sendError(request: FastifyRequest, reply: FastifyReply, status: number, message: string): FastifyReply {
  const body = isNewer(request.url) ? { success: false, message } : { message }
  return reply.code(status).type('application/json').send(body)
}

interface AjvError {
  instancePath: string
  keyword: string
  message?: string
  params: Record<string, unknown>
  parentSchema?: Record<string, unknown>
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof DistError) return sendError(request, reply, error.statusCode, error.message)
    if (error.validation) return sendError(request, reply, 400, validationMessage(error.validation as AjvError[], error.validationContext))
    if (error.code === 'FST_REQ_FILE_TOO_LARGE') return sendError(request, reply, 413, 'file: the upload exceeds the size limit')
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendError(request, reply, 413, 'body: the request body is too large')
    if (error.code === 'FST_PROTO_VIOLATION') return sendError(request, reply, 400, 'body: a field name is not allowed')
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return sendError(request, reply, 400, 'body: unsupported content type; send multipart/form-data, application/x-www-form-urlencoded or application/json')
    }
    // Malformed multipart or JSON and other client errors carry a 4xx status of their own.
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) return sendError(request, reply, status === 415 ? 400 : status, `body: ${error.message}`)
    if (/multipart|boundary|Unexpected end of form|Part terminated early|Malformed/i.test(error.message)) {
      return sendError(request, reply, 400, `body: malformed multipart data (${error.message})`)
    }
    // A client that went away gets no answer (its socket is gone); anything else is our fault.
    if (error.code === 'ECONNRESET' || request.raw.socket?.destroyed) return reply
    request.log.error({ err: error }, 'request failed')
    return sendError(request, reply, 500, 'Internal error: the request could not be completed (see the dispatcher log)')
  })
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    return sendError(request, reply, 404, `No such endpoint: ${request.method} ${printable(path)}`)
  })
}

function validationMessage(errors: AjvError[], context: string | undefined): string {
  const e = errors[0]
  if (!e) return 'the request is not valid'
  const field = e.keyword === 'required' ? String(e.params.missingProperty) : e.instancePath.split('/').filter(Boolean)[0] ?? context ?? 'request'
  const schema = e.keyword === 'required'
    ? (e.parentSchema?.properties as Record<string, Record<string, unknown>> | undefined)?.[field]
    : e.parentSchema
  const allowed = typeof schema?.['x-allowed'] === 'string' ? schema['x-allowed'] : e.message ?? 'not valid'
  return e.keyword === 'required' ? `${field}: required; ${allowed}` : `${field}: ${allowed}`
}

export function printable(s: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = s.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')
  return clean.length > 64 ? `${clean.slice(0, 64)}…` : clean
}

/** Path ids are decimal digits (Flask's int converter); anything else is no route: 404. */
export function pathId(raw: string, request: FastifyRequest): number {
  const n = Number(raw)
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(n)) {
    throw notFound(`No such endpoint: ${request.method} ${printable(request.url.split('?')[0] ?? '')} (the id must be decimal digits)`)
  }
  return n
}
