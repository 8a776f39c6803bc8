// Reading and managing tasks. Destructive actions are GETs, as in Cuckoo's API.
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { TaskDeleted, TaskList, TaskRebooted, TaskRereported, TaskRescheduled, TaskView } from '../../../shared/api/responses'
import { ListParams, ListQuery, RescheduleParams, SampleIdParams, TaskIdParams } from '../../../shared/api/requests'
import type { FastifyReply } from 'fastify'

// Tasks come serialized from the database (task_json); the response schemas document them.
const sendJson = (reply: FastifyReply, body: string | Buffer) => reply.type('application/json; charset=utf-8').send(body)

const e400 = { 400: ErrorBody }
const e404 = { 400: ErrorBody, 404: ErrorBody }

export const tasksRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['tasks']

  for (const url of ['/tasks/list', '/tasks/list/:limit', '/tasks/list/:limit/:offset']) {
    app.get(url, {
      schema: {
        tags, summary: 'List tasks: unfinished first by id, then finished by completion time',
        params: ListParams, querystring: ListQuery, response: { 200: TaskList, ...e400 }
      }
    }, async (request, reply) => sendJson(reply, ctx.tasks.listBody({ ...request.query, ...request.params })))
  }

  app.get('/tasks/sample/:sample_id', {
    schema: { tags, summary: 'Tasks that analyze a sample', params: SampleIdParams, querystring: ListQuery, response: { 200: TaskList, ...e400 } }
  }, async (request, reply) => sendJson(reply, ctx.tasks.listBody(request.query, request.params.sample_id)))

  app.get('/tasks/view/:id', {
    schema: { tags, summary: 'One task', params: TaskIdParams, response: { 200: TaskView, ...e404 } }
  }, async (request, reply) => sendJson(reply, ctx.tasks.viewBody(request.params.id)))

  app.get('/tasks/delete/:id', {
    schema: {
      tags, summary: 'Delete a task and its results (refused while it runs; waits for its processing to end)', params: TaskIdParams,
      response: { 200: TaskDeleted, ...e404, 500: ErrorBody }
    }
  }, async (request) => {
    await ctx.tasks.delete(request.params.id)
    return { status: 'OK' }
  })

  for (const url of ['/tasks/reschedule/:id', '/tasks/reschedule/:id/:priority']) {
    app.get(url, {
      schema: {
        tags, summary: 'Queue a copy of a task; the old one becomes recovered (each call makes a copy; refused while it runs)',
        params: RescheduleParams,
        response: { 200: TaskRescheduled, ...e404, 409: ErrorBody }
      }
    }, async (request) => ({ status: 'OK', task_id: ctx.tasks.reschedule(request.params.id, request.params.priority) }))
  }

  app.get('/tasks/reboot/:id', {
    schema: {
      tags, summary: 'Analyze the same file again after a guest reboot', params: TaskIdParams,
      response: { 200: TaskRebooted, ...e404 }
    }
  }, async (request) => ({ reboot_id: await ctx.tasks.reboot(request.params.id), task_id: request.params.id }))

  app.get('/tasks/rereport/:id', {
    schema: {
      tags, summary: 'Run processing and reporting again (reported tasks only)', params: TaskIdParams,
      response: { 200: TaskRereported, ...e404 }
    }
  }, async (request) => ({ success: ctx.tasks.rereport(request.params.id) }))
}
