// The dispatcher's HTTP application: both generations at once (older without prefix, newer under
// /api and /api/v1). It never listens itself: startDispatcher (../index.ts) or a test does.
import Fastify, { LogController, type FastifyInstance } from 'fastify'
import formbody from '@fastify/formbody'
import swagger from '@fastify/swagger'
import type { DistStore } from '../store/types'
import { DispatcherService } from './dispatcher.service'
import { installErrorHandling, sendError } from './errors'
import { registerUploads } from './uploads'
import { nodesRoutes } from './nodes.routes'
import { tasksRoutes } from './tasks.routes'
import { reportsRoutes } from './reports.routes'
import { openApiOptions } from './openapi'

export interface DistAppOptions {
  samplesDir: string
  reportsDir: string
  maxUploadBytes: number
  version: string
  debug?: boolean
  logLevel?: string
  nodeTimeoutMs?: number
}

export async function buildDistApp(store: DistStore, opts: DistAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: { level: opts.logLevel ?? 'info' },
    logController: new LogController({ disableRequestLogging: !opts.debug }),
    bodyLimit: 4 * 1024 * 1024,
    routerOptions: { maxParamLength: 1024 },
    // Errors of the router itself (before any route): our shapes, not Fastify's default body.
    frameworkErrors: (error, request, reply) => {
      if (error.code === 'FST_ERR_BAD_URL') return void sendError(request, reply, 400, 'path: not valid percent-encoding')
      if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return void sendError(request, reply, 404, 'No such endpoint (a path segment is too long)')
      return void sendError(request, reply, 400, `request: ${error.message}`)
    },
    ajv: { customOptions: { coerceTypes: true, removeAdditional: true, allErrors: false, verbose: true, keywords: ['x-allowed', 'x-file', 'example'] } }
  })
  // Bodies are small plain objects; the response schemas are documentation only.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))
  installErrorHandling(app)
  installGuards(app)
  await app.register(swagger, openApiOptions(opts.version))
  await app.register(formbody, { bodyLimit: 4 * 1024 * 1024 })
  await registerUploads(app, opts.samplesDir, opts.maxUploadBytes)
  // Cuckoo's clients send empty fields to mean "default": before validation they count as absent.
  app.addHook('preValidation', async (request) => {
    for (const bag of [request.body, request.query]) {
      if (bag && typeof bag === 'object') for (const [k, v] of Object.entries(bag)) if (v === '') delete (bag as Record<string, unknown>)[k]
    }
  })
  const svc = new DispatcherService(store, { samplesDir: opts.samplesDir, reportsDir: opts.reportsDir, ...(opts.nodeTimeoutMs ? { nodeTimeoutMs: opts.nodeTimeoutMs } : {}) })
  nodesRoutes(app, svc)
  tasksRoutes(app, svc)
  reportsRoutes(app, svc)
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  return app
}

/**
 * The dispatcher has no token (as Cuckoo's had none), so it binds localhost by default; what a
 * web page could still do is POST a form to it from the analyst's browser. Requests that a
 * browser marks as coming from another site are refused.
 */
function installGuards(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin
    const site = request.headers['sec-fetch-site']
    const foreignOrigin = origin !== undefined && !sameOrigin(origin, request.headers.host)
    if (foreignOrigin || site === 'cross-site' || site === 'same-site') {
      return sendError(request, reply, 403, 'Cross-site requests are refused; call the dispatcher from a client, not a web page')
    }
  })
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('X-Content-Type-Options', 'nosniff')
    reply.header('Cache-Control', 'no-cache')
    return payload
  })
}

function sameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host
  } catch {
    return false
  }
}
