// GET /aviary/routes: the routes this host offers tasks (machines.json `routing`), for the Submit
// form and `aviary submit`: a task names one with the option route=<name>.
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { RoutesAnswer } from '../../../shared/api/ui-schemas'
import { routeKind } from '../../../shared/route-kinds'

export const aviaryRoutesRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/aviary/routes', {
    schema: { tags: ['aviary'], summary: 'The network routes this host offers tasks (option route=<name>), and the default', response: { 200: RoutesAnswer } }
  }, async () => {
    const r = ctx.routing()
    if (r === null) return { routed: false, default: null, routes: [], mitm: { available: false, default: false } }
    return {
      routed: true,
      default: r.default,
      routes: r.routes.map((x) => ({ name: x.name, kind: x.kind, description: x.description })),
      // The proxy can decrypt on any route that lets traffic out (shared/route-kinds.ts).
      mitm: { available: r.routes.some((x) => !routeKind(x.kind).closed), default: r.mitm.default }
    }
  })
}
