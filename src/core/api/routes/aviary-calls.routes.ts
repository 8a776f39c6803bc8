// The calls of a task's processes, for the UI's calls view: which processes have calls (with
// counts per category and API), and one page of one process's calls, filtered by category, API
// and text. Served from the calls store processing wrote (src/core/results/calls.service.ts).
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { CallsListing, CallsPage, ErrorBody } from '../../../shared/api/schemas'
import { CallsParams, CallsQuery, TaskIdParams } from '../../../shared/api/requests'
import { taskNotFound } from '../../errors'
import { analysisFromReport, CallsService } from '../../results/calls.service'

const errors = { 400: ErrorBody, 404: ErrorBody }
const list = (v: string | undefined): string[] => (v === undefined ? [] : [...new Set(v.split(','))])

export const aviaryCallsRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const calls = new CallsService(analysisFromReport((id) => ctx.results.report(id, 'json', 'none')))
  const existing = (id: number): number => {
    if (!ctx.taskRows.exists(id)) throw taskNotFound()
    return id
  }

  app.get('/aviary/tasks/:id/calls', {
    schema: {
      tags: ['aviary'],
      summary: 'The processes of a task that have calls: calls kept, calls dropped beyond the cap, counts per category and API',
      params: TaskIdParams, response: { 200: CallsListing, ...errors }
    }
  }, async (request) => calls.listing(existing(request.params.id)))

  app.get('/aviary/tasks/:id/calls/:pid', {
    schema: {
      tags: ['aviary'],
      summary: 'One page of a process\'s calls, filtered by category, API and text (any case, in the API, argument values and return value)',
      params: CallsParams, querystring: CallsQuery, response: { 200: CallsPage, ...errors }
    }
  }, async (request) => {
    const q = request.query
    return calls.page(existing(request.params.id), request.params.pid, q.offset ?? 0, q.limit ?? 200, {
      categories: list(q.category), apis: list(q.api), q: q.q ?? ''
    })
  })
}
