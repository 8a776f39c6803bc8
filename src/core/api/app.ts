// The HTTP application of the analysis API. It never listens itself: the composition root
// (service.ts) or a test does. Both generations of Cuckoo's API are served at once.
import Fastify, { LogController, type FastifyInstance, type RouteOptions } from 'fastify'
import formbody from '@fastify/formbody'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { MAX_PARAM_LENGTH, installErrorHandling, routerErrors } from './error-handler'
import { installSecurity } from './security'
import { stripEmptyFields } from './empty-fields'
import { V1_PATHS } from './routes/paths'
import { openApiOptions } from './openapi'
import type { ApiContext } from './context'
import { createRoutes } from './routes/create.routes'
import { tasksRoutes } from './routes/tasks.routes'
import { resultsRoutes } from './routes/results.routes'
import { filesRoutes } from './routes/files.routes'
import { statusRoutes } from './routes/status.routes'
import { eventsRoutes } from './routes/events.routes'
import { aviaryStatsRoutes } from './routes/aviary-stats.routes'
import { aviaryTasksRoutes } from './routes/aviary-tasks.routes'
import { aviaryRoutesRoutes } from './routes/aviary-routes.routes'
import { aviaryMachinesRoutes } from './routes/aviary-machines.routes'
import { aviaryConnectionsRoutes } from './routes/aviary-connections.routes'
import { aviaryCallsRoutes } from './routes/aviary-calls.routes'
import { aviaryRetentionRoutes } from './routes/aviary-retention.routes'
import { aviaryIdsRoutes } from './routes/aviary-ids.routes'
import { aviaryMachineBuildsRoutes } from './routes/aviary-machine-builds.routes'
import { isPublicUiRequest, uiStaticRoutes } from './ui-static'
import { SessionStore, sessionRoutes } from './session'
import websocket from '@fastify/websocket'
import { aviaryConsoleRoutes, consoleProtocol } from './routes/aviary-console.routes'
import { MAX_FRAME_BYTES } from '../console/console-session'

export type App = FastifyInstance

export interface AppOptions {
  logLevel?: string
  maxUploadBytes: number
  apiToken?: string | undefined
  allowedOrigins?: string[]
  debug?: boolean
  /** The built renderer served at `/`; null: a page saying how to build it. */
  uiDir?: string | null
}

export async function buildApp(ctx: ApiContext, opts: AppOptions): Promise<App> {
  const app = Fastify({
    logger: { level: opts.logLevel ?? 'info' },
    logController: new LogController({ disableRequestLogging: !opts.debug }),
    bodyLimit: 4 * 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: routerErrors,
    ajv: {
      customOptions: {
        coerceTypes: true,
        removeAdditional: true,
        useDefaults: true,
        allErrors: false,
        verbose: true,
        keywords: ['x-allowed', 'x-file', 'example']
      }
    }
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Response schemas document the API and type the shared client; they do not serialize. Bodies
  // are small (tasks come pre-serialized), so plain JSON.stringify serves them without generating
  // a serializer per route, and never drops a field a schema forgot: client-answers.test.ts
  // checks instead that every answer has exactly its schema's shape.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))
  // Every route's conventions, so that no route file repeats them (routes/README.md).
  stripEmptyFields(app)
  installV1Aliases(app)

  installErrorHandling(app, opts.maxUploadBytes)
  // The live console's websockets. ws refuses (closes with 1009) a frame over MAX_FRAME_BYTES
  // before it is buffered; no compression (a small frame must not inflate into a large one).
  // Registered before the security hooks, so that its own hook marks an upgrade request first
  // and the socket of a refused upgrade (401, 403, 409) is closed after the answer: otherwise a
  // client could hold it open, and the service would wait for it when it stops.
  // A client that breaks the websocket protocol (a frame over the cap, a bad opcode) is the
  // client's doing, and ws has already closed it: a line, not an error with a stack.
  await app.register(websocket, {
    options: { maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false, handleProtocols: consoleProtocol },
    errorHandler: (err, _socket, request) => {
      if (typeof (err as NodeJS.ErrnoException).code === 'string' && (err as NodeJS.ErrnoException).code!.startsWith('WS_ERR_')) request.log.info(`console websocket cut off: ${err.message}`)
      else request.log.error(err)
    }
  })
  // Browser sign-ins live as long as this app: a restart signs every browser out.
  const sessions = new SessionStore()
  installSecurity(app, { apiToken: opts.apiToken, allowedOrigins: opts.allowedOrigins, isPublic: isPublicUiRequest, sessions })
  await app.register(swagger, openApiOptions(ctx.version))
  await app.register(formbody, { bodyLimit: 4 * 1024 * 1024 })
  await app.register(createRoutes(ctx, opts.maxUploadBytes))
  await app.register(tasksRoutes(ctx))
  await app.register(resultsRoutes(ctx))
  await app.register(filesRoutes(ctx))
  await app.register(statusRoutes(ctx, { debug: opts.debug ?? false }))
  await app.register(eventsRoutes(ctx))
  for (const routes of [aviaryStatsRoutes, aviaryTasksRoutes, aviaryMachinesRoutes, aviaryRoutesRoutes, aviaryCallsRoutes, aviaryRetentionRoutes, aviaryIdsRoutes, aviaryMachineBuildsRoutes]) await app.register(routes(ctx))
  await app.register(aviaryConnectionsRoutes(ctx))
  await app.register(aviaryConsoleRoutes(ctx))
  await app.register(sessionRoutes(opts.apiToken, sessions))
  await app.register(uiStaticRoutes(opts.uiDir ?? null))
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  return app
}

/**
 * Cuckoo's /v1 aliases (routes/paths.ts): each route whose path is listed gets a second one at
 * /v1<path>, added in the plugin that registered it (same hooks, parsers and schemas). A GET's
 * alias brings its own HEAD. The app refuses to start when a listed path was never registered.
 */
function installV1Aliases(app: FastifyInstance): void {
  const seen = new Set<string>()
  app.addHook('onRoute', function (route) {
    if (route.method === 'HEAD' || !V1_PATHS.has(route.url)) return
    if (route.prefix) throw new Error(`the /v1 alias of ${route.url} would go under the prefix ${route.prefix}`)
    seen.add(route.url)
    this.route({ ...route, url: `/v1${route.url}`, path: undefined, prefix: undefined } as RouteOptions)
  })
  app.addHook('onReady', async () => {
    const missing = [...V1_PATHS].filter((p) => !seen.has(p))
    if (missing.length > 0) throw new Error(`routes/paths.ts lists paths no route registers: ${missing.join(', ')}`)
  })
}
