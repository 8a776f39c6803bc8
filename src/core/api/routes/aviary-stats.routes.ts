// GET /aviary/stats: the dashboard's numbers (Aviary only; Cuckoo's status routes are status.routes.ts).
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { AviaryStats, StatsQuery } from '../../../shared/api/ui-schemas'

export const aviaryStatsRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/aviary/stats', {
    schema: {
      tags: ['aviary'], summary: 'Task counts by status and per day, machines, disk, CPU and memory',
      querystring: StatsQuery, response: { 200: AviaryStats, 400: ErrorBody }
    }
  }, async (request) => ctx.aviaryStats.stats(request.query.days ?? 30))
}
