// Maps every failure to Cuckoo's error shape, {"message": "..."}, plus a code. Validation
// failures name the field and what it accepts; framework errors become the 4xx they are;
// anything unexpected is logged and answered with a 500 that says nothing about internals.
// It also keeps the table of routes that tells a wrong method (405, as Flask answers) from an
// unknown path (404), and holds integer path parameters to Flask's int converter.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import FindMyWay, { type HTTPMethod } from 'find-my-way'
import { ApiError } from '../errors'
import { ErrorCodes, type ErrorCode } from '../../shared/errors'
import { ErrorBody } from '../../shared/api/schemas'
import { frameworkError, printable, validatedPart, validationMessage, type AjvError } from '../../shared/api/request-errors'
import { TooLargeError, formatBytes } from '../storage/ingest'

export interface RouteEntry {
  method: string
  url: string
  /** schema.hide: left out of /openapi.json on purpose */
  hidden: boolean
}

const routeTables = new WeakMap<FastifyInstance, RouteEntry[]>()

/** Every route registered on an app since installErrorHandling (HEAD twins included). */
export function routesOf(app: FastifyInstance): readonly RouteEntry[] {
  return routeTables.get(app) ?? []
}

export const METHOD_NOT_ALLOWED = 'The method is not allowed for the requested URL.'

/** Longest path parameter the router takes (names, hashes and ids are far shorter). */
export const MAX_PARAM_LENGTH = 1024

/**
 * Errors the router raises before any route or hook runs (Fastify's `frameworkErrors`): a path
 * that is not valid percent-encoding is a 400, a path segment longer than any name is no route.
 */
export function routerErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const path = printable(request.url.split('?')[0] ?? '')
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    send(reply, 404, `No such endpoint: ${request.method} ${path} (a path segment is longer than ${MAX_PARAM_LENGTH} characters)`, ErrorCodes.NOT_FOUND)
  } else if (error.code === 'FST_ERR_BAD_URL') {
    send(reply, 400, `path: not valid percent-encoding (${path})`, ErrorCodes.BAD_REQUEST)
  } else {
    send(reply, 400, `request: ${error.message}`, ErrorCodes.BAD_REQUEST)
  }
}

export function installErrorHandling(app: FastifyInstance, maxUploadBytes: number): void {
  const routes: RouteEntry[] = []
  routeTables.set(app, routes)
  // Fastify answers 404 for a known path with another method and offers no lookup by concrete
  // path, so a second find-my-way (Fastify's own router, same options) mirrors the routes only to
  // say which methods a path has.
  const mirror = FindMyWay({ ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH })
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      routes.push({ method, url: route.url, hidden: route.schema?.hide === true })
      if (!mirror.hasRoute(method as HTTPMethod, route.url)) mirror.on(method as HTTPMethod, route.url, () => undefined, { url: route.url })
    }
    if (![route.preValidation ?? []].flat().some((h) => (h as unknown as Record<symbol, boolean>)[INT_CHECK])) {
      holdIntParams(route)
      holdIntFields(route)
    }
  })
  app.setErrorHandler((error: FastifyError & { part?: unknown }, request, reply) => {
    if (error instanceof ApiError) return send(reply, error.statusCode, error.message, error.code)
    if (error.validation) {
      return send(reply, 400, validationMessage(error.validation as AjvError[], error.validationContext, validatedPart(error.validationContext, request)), ErrorCodes.BAD_REQUEST)
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
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    const allowed = allowedMethods(mirror, path)
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      return send(reply.header('Allow', allowed.join(', ')), 405, METHOD_NOT_ALLOWED, ErrorCodes.METHOD_NOT_ALLOWED)
    }
    return send(reply, 404, `No such endpoint: ${request.method} ${printable(path)}`, ErrorCodes.NOT_FOUND)
  })
}

/** The methods a concrete path has a route for; catch-all (`*`) routes do not make a path known. */
function allowedMethods(mirror: FindMyWay.Instance<FindMyWay.HTTPVersion.V1>, path: string): string[] {
  const out: string[] = []
  for (const method of KNOWN_METHODS) {
    const found = mirror.find(method, path)
    if (found && !String((found.store as { url?: string } | null)?.url ?? '').endsWith('*')) out.push(method)
  }
  return out
}

const KNOWN_METHODS: HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

const INT_CHECK = Symbol('aviary.intParams')

/**
 * Flask's `<int:x>` matches only decimal digits, so `1e5`, `1.0`, `+1`, ` 1`, `0x1` or `1e309`
 * are no route at all there: 404. Ajv's coercion would take most of them as numbers (and
 * 1e309 as Infinity), so integer path parameters are checked on their raw text first; digit
 * strings beyond 2^53 cannot name anything this service made either, and get the same 404.
 * Ranges below that (id 0, limits) are still the schema's 400s.
 */
function holdIntParams(route: RouteOptions): void {
  const props = (route.schema?.params as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties
  const names = Object.entries(props ?? {}).filter(([, s]) => s.type === 'integer').map(([k]) => k)
  if (names.length === 0) return
  const check = async (request: FastifyRequest): Promise<void> => {
    const params = request.params as Record<string, unknown>
    for (const name of names) {
      const raw = params[name]
      if (typeof raw !== 'string') continue
      if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
        throw new ApiError(404, `No such endpoint: ${request.method} ${printable(request.url.split('?')[0] ?? '')} (${name} must be decimal digits, at most ${Number.MAX_SAFE_INTEGER})`, ErrorCodes.NOT_FOUND)
      }
    }
  }
  Object.assign(check, { [INT_CHECK]: true })
  install(route, check)
  // The 404 is part of the route's contract: document it where the route did not.
  const response = route.schema?.response as Record<string, unknown> | undefined
  if (response && !('404' in response)) response['404'] = ErrorBody
}

/**
 * Integer fields of queries and bodies: Ajv's coercion takes '1e309' as Infinity and lets it pass
 * `maximum` (and '0x1', ' 1', '1.0' as 1), so their raw text must be decimal digits (a sign
 * allowed) and a safe integer; anything else is the 400 that names the field.
 */
function holdIntFields(route: RouteOptions): void {
  const fields = (where: 'querystring' | 'body') => {
    const props = (route.schema?.[where] as { properties?: Record<string, { type?: unknown; 'x-allowed'?: unknown }> } | undefined)?.properties
    return Object.entries(props ?? {}).filter(([, s]) => s.type === 'integer')
  }
  const query = fields('querystring')
  const body = fields('body')
  if (query.length === 0 && body.length === 0) return
  const check = async (request: FastifyRequest): Promise<void> => {
    for (const [bag, list] of [[request.query, query], [request.body, body]] as const) {
      if (!bag || typeof bag !== 'object') continue
      for (const [name, schema] of list) {
        const raw = (bag as Record<string, unknown>)[name]
        const ok = raw === undefined || (typeof raw === 'number' && Number.isSafeInteger(raw)) ||
          (typeof raw === 'string' && /^-?[0-9]+$/.test(raw) && Number.isSafeInteger(Number(raw)))
        if (!ok && (typeof raw === 'string' || typeof raw === 'number')) {
          const allowed = typeof schema['x-allowed'] === 'string' ? schema['x-allowed'] : 'a whole number'
          throw new ApiError(400, `${name}: ${allowed} (got '${printable(String(raw))}')`, ErrorCodes.BAD_REQUEST)
        }
      }
    }
  }
  Object.assign(check, { [INT_CHECK]: true })
  install(route, check)
  const response = route.schema?.response as Record<string, unknown> | undefined
  if (response && !('400' in response)) response['400'] = ErrorBody
}

function install(route: RouteOptions, check: (request: FastifyRequest) => Promise<void>): void {
  const existing = [route.preValidation ?? []].flat()
  route.preValidation = [...existing, check] as RouteOptions['preValidation']
}

export function send(reply: FastifyReply, status: number, message: string, code: ErrorCode): FastifyReply {
  return reply.code(status).type('application/json').send({ message, code })
}
