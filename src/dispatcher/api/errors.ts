// Error bodies of both dispatcher generations: the older routes answer {"message": ...} (Flask-
// RESTful's abort), the newer ones under /api {"success": false, "message": ...}. Bad input is a
// 400 naming the field (Cuckoo answered 500 or 404); anything unexpected is logged and answered
// with a 500 that says nothing about internals.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { frameworkError, printable, validatedPart, validationMessage, type AjvError } from '../../shared/api/request-errors'

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

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof DistError) return sendError(request, reply, error.statusCode, error.message)
    if (error.validation) {
      return sendError(request, reply, 400, validationMessage(error.validation as AjvError[], error.validationContext, validatedPart(error.validationContext, request)))
    }
    if (error.code === 'FST_REQ_FILE_TOO_LARGE') return sendError(request, reply, 413, 'file: the upload exceeds the size limit')
    const mapped = frameworkError(error)
    if (mapped) return sendError(request, reply, mapped[0], mapped[1])
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

/** Path ids are decimal digits (Flask's int converter); anything else is no route: 404. */
export function pathId(raw: string, request: FastifyRequest): number {
  const n = Number(raw)
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(n)) {
    throw notFound(`No such endpoint: ${request.method} ${printable(request.url.split('?')[0] ?? '')} (the id must be decimal digits)`)
  }
  return n
}
