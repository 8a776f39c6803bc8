// GET /aviary/tasks: the UI's task list, filtered, searched and paged, with the total count.
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody, type TaskStatus } from '../../../shared/api/schemas'
import { TaskSearchQuery, TaskSearchResult } from '../../../shared/api/ui-schemas'
import { stripEmptyFields } from '../empty-fields'

export const aviaryTasksRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  stripEmptyFields(app)
  app.get('/aviary/tasks', {
    schema: {
      tags: ['aviary'],
      summary: 'Tasks by id, filtered by status and searched by id, hash (or a prefix of 6+ hex digits), file name or URL',
      querystring: TaskSearchQuery, response: { 200: TaskSearchResult, 400: ErrorBody }
    }
  }, async (request, reply) => {
    const q = request.query
    // Tasks come serialized from the database (task_json), as in tasks.routes.ts.
    const body = ctx.taskSearch.body({
      statuses: q.status?.split(',') as TaskStatus[] | undefined,
      q: q.q, offset: q.offset ?? 0, limit: q.limit ?? 100, order: q.order === 'asc' ? 'asc' : 'desc'
    })
    return (reply as FastifyReply).type('application/json; charset=utf-8').send(body)
  })
}
