// GET /aviary/tasks: the UI's task list, filtered, searched (the query language of
// shared/search-query.ts), sorted and paged, with the total count.
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody, type TaskStatus } from '../../../shared/api/schemas'
import { TaskSearchQuery, TaskSearchResult, type TaskSort } from '../../../shared/api/ui-schemas'
import { SearchSyntaxError } from '../../../shared/search-query'
import { badRequest } from '../../errors'

export const aviaryTasksRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/aviary/tasks', {
    schema: {
      tags: ['aviary'],
      summary: 'Tasks filtered by status and category, searched by id, hash, name, URL, domain, IP, signature, dropped-file hash, tag or machine, sorted by id, time added or score',
      querystring: TaskSearchQuery, response: { 200: TaskSearchResult, 400: ErrorBody }
    }
  }, async (request, reply) => {
    const q = request.query
    let body: string
    try {
      // Tasks come serialized from the database (task_json), as in tasks.routes.ts.
      body = ctx.taskSearch.body({
        statuses: q.status?.split(',') as TaskStatus[] | undefined,
        categories: q.category?.split(','),
        q: q.q, sort: q.sort as TaskSort | undefined,
        offset: q.offset ?? 0, limit: q.limit ?? 100, order: q.order === 'asc' ? 'asc' : 'desc'
      })
    } catch (err) {
      if (err instanceof SearchSyntaxError) throw badRequest('q', err.message)
      throw err
    }
    return (reply as FastifyReply).type('application/json; charset=utf-8').send(body)
  })
}
