// The HTTP application of the analysis API. It never listens itself: the composition root
// (service.ts) or a test does. Both generations of Cuckoo's API are served at once.
import Fastify, { LogController, type FastifyInstance } from 'fastify'
import formbody from '@fastify/formbody'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { MAX_PARAM_LENGTH, installErrorHandling, routerErrors } from './error-handler'
import { installSecurity } from './security'
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
import { aviaryMachineBuildsRoutes } from './routes/aviary-machine-builds.routes'
import { isPublicUiRequest, uiStaticRoutes } from './ui-static'
import { SessionStore, sessionRoutes } from './session'

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

  // Response schemas document the API; bodies are small (tasks come pre-serialized), so plain
  // JSON.stringify serves them without generating a serializer per route.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))

  installErrorHandling(app, opts.maxUploadBytes)
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
  for (const routes of [aviaryStatsRoutes, aviaryTasksRoutes, aviaryMachinesRoutes, aviaryRoutesRoutes, aviaryCallsRoutes, aviaryRetentionRoutes, aviaryMachineBuildsRoutes]) await app.register(routes(ctx))
  await app.register(aviaryConnectionsRoutes(ctx))
  await app.register(sessionRoutes(opts.apiToken, sessions))
  await app.register(uiStaticRoutes(opts.uiDir ?? null))
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  return app
}
