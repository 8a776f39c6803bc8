// Saved connections to remote instances and dispatchers (/aviary/connections), and the proxy the
// UI reaches them through (/aviary/connections/<id>/proxy/<path>): the page talks only to the
// local service, so it needs no CORS and never sees a remote's token.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { Readable } from 'node:stream'
import { Type } from 'typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { ConnectionList, ConnectionView } from '../../../shared/api/responses'
import { notFound } from '../../errors'
import { forward, remoteUrl, responseHeaders, unreachableReason, type ProxyExchange } from '../../connections/proxy'

const Field = (description: string) => Type.Optional(Type.String({ description }))
const TokenField = Type.Optional(Type.Union([Type.String({ writeOnly: true }), Type.Null()], { writeOnly: true, description: 'API token sent as Bearer; empty or null removes it' }))
const CreateBody = Type.Object({
  name: Field('a name for the connection (required)'),
  url: Field('http(s) address of the remote API (required), e.g. http://10.0.0.5:8090'),
  token: TokenField
})
const UpdateBody = Type.Object({ name: Field('a new name'), url: Field('a new address'), token: TokenField })
const IdParams = Type.Object({ id: Type.String({ description: 'connection id' }) })
const ProxyParams = Type.Object({ id: Type.String({ description: 'connection id' }), '*': Type.String({ description: 'path of the remote API' }) })
const tags = ['connections']
const consumes = ['application/json', 'application/x-www-form-urlencoded']
const PROXY_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/** Ids are decimal digits (as Flask's int converter takes them); anything else is not found. */
function parseId(raw: string): number {
  const id = /^[0-9]{1,15}$/.test(raw) ? Number(raw) : NaN
  if (!Number.isSafeInteger(id) || id < 1) throw notFound(`Connection ${raw.slice(0, 40)} not found`)
  return id
}

export const aviaryConnectionsRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()

  app.get('/aviary/connections', {
    schema: { tags, summary: 'Saved remote instances and dispatchers', response: { 200: ConnectionList } }
  }, async () => ({ connections: ctx.connections.list() }))

  app.post('/aviary/connections', {
    schema: {
      tags, summary: 'Save a connection; the server must answer (its kind is detected)', consumes,
      body: CreateBody, response: { 200: ConnectionView, 400: ErrorBody }
    }
  }, async (request) => ({ connection: await ctx.connections.create(request.body ?? {}) }))

  app.get('/aviary/connections/:id', {
    schema: { tags, summary: 'One saved connection', params: IdParams, response: { 200: ConnectionView, 404: ErrorBody } }
  }, async (request) => ({ connection: ctx.connections.view(parseId(request.params.id)) }))

  app.put('/aviary/connections/:id', {
    schema: {
      tags, summary: 'Rename a connection, or give it a new address or token (checked again)', consumes,
      params: IdParams, body: UpdateBody, response: { 200: ConnectionView, 400: ErrorBody, 404: ErrorBody }
    }
  }, async (request) => ({ connection: await ctx.connections.update(parseId(request.params.id), request.body ?? {}) }))

  app.delete('/aviary/connections/:id', {
    schema: { tags, summary: 'Forget a connection', params: IdParams, response: { 200: ErrorBody, 404: ErrorBody } }
  }, async (request) => {
    const id = parseId(request.params.id)
    ctx.connections.delete(id)
    return { message: `Connection ${id} deleted` }
  })

  await app.register(async (proxy) => {
    // Bodies pass through untouched and unbuffered: no parser reads them here, the raw request
    // stream is handed to the remote as it arrives (bodyLimit does not apply to a stream).
    proxy.removeAllContentTypeParsers()
    proxy.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
    const summary = 'Any call of the remote API of a saved connection, with its token added'
    const response = { 404: ErrorBody, 502: ErrorBody }
    for (const [url, params] of [['/aviary/connections/:id/proxy', IdParams], ['/aviary/connections/:id/proxy/*', ProxyParams]] as const) {
      proxy.route({ method: PROXY_METHODS, url, schema: { tags, summary, params, response }, handler: (request, reply) => proxyHandler(ctx, request, reply) })
    }
  })
}

const PROXY_PREFIX = /^\/aviary\/connections\/[^/?]*\/proxy(?=\/|\?|$)/

async function proxyHandler(ctx: ApiContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const conn = ctx.connections.row(parseId((request.params as { id: string }).id))
  // The raw URL, not the decoded wildcard: path and query go on exactly as the page encoded them.
  const tail = (request.raw.url ?? '').replace(PROXY_PREFIX, '') || '/'
  const body = request.body instanceof Readable ? request.body : null
  // The page may go away before the remote answers (a cancelled request, a closed tab): the remote
  // request goes too, instead of holding a connection, and the service's stop, for the idle timeout.
  const gone = new AbortController()
  const onClose = (): void => gone.abort()
  reply.raw.once('close', onClose)
  let exchange: ProxyExchange
  try {
    exchange = await forward(remoteUrl(conn.url, tail), { method: request.method, headers: request.headers, body, token: conn.token, signal: gone.signal })
  } catch (err) {
    if (gone.signal.aborted) return reply

    // Not the page's fault: the remote is down or unreachable, hence 502 rather than 400.
    return reply.code(502).type('application/json').send({
      message: `Connection "${conn.name}" (${conn.url}): the remote server cannot be reached (${unreachableReason(err)})`,
      code: 'AVIARY_REMOTE_UNREACHABLE'
    })
  }
  const res = exchange.response
  reply.raw.off('close', onClose)
  // The page went away (a closed event stream, a cancelled download): close the remote side too.
  reply.raw.once('close', () => { if (!res.complete) exchange.abort() })
  reply.code(res.statusCode ?? 502).headers(responseHeaders(res))
  if (request.method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304) {
    res.resume()
    return reply.send()
  }
  return reply.send(res)
}
