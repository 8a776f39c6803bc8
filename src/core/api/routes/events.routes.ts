// The live side of the API: a task's timeline (GET /tasks/timeline/<id>) and one server-sent
// events stream of task, stage and machine changes (GET /events), which the UI follows instead of
// polling. Events come from the event bus, which the database's own triggers feed.
import type { FastifyPluginAsync } from 'fastify'
import type { ServerResponse } from 'node:http'
import { Type } from 'typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { Timeline } from '../../../shared/api/responses'
import { TaskIdParams } from '../../../shared/api/requests'
import { taskNotFound } from '../../errors'
import { formatDatetime } from '../../../shared/time'

const HEARTBEAT_MS = 15_000
const EventsQuery = Type.Object({
  task: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, 'x-allowed': 'a task id: only that task\'s events' }))
})

export const eventsRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const streams = new Set<ServerResponse>()

  app.get('/tasks/timeline/:id', {
    schema: {
      tags: ['tasks'], summary: 'Every stage of a task with its time, and the reasons of failures',
      params: TaskIdParams, response: { 200: Timeline, 404: ErrorBody }
    }
  }, async (request) => {
    const id = request.params.id
    if (!ctx.tasks.exists(id)) throw taskNotFound()
    return {
      timeline: ctx.timeline.list(id).map((e) => ({ stage: e.stage, at: formatDatetime(new Date(e.at)), time: e.at, message: e.message }))
    }
  })

  app.get('/events', {
    schema: {
      tags: ['status'],
      summary: 'Server-sent events: `task` ({"task": Task}), `task_deleted` ({"id"}), `stage` (a timeline entry with task_id), `machine` ({"machine": Machine}), `build` ({"build": id, "event": BuildEvent}), `build_ended` ({"build", "state", "error"})',
      querystring: EventsQuery,
      response: {
        200: { description: 'the event stream', content: { 'text/event-stream': { schema: Type.String() } } },
        400: { description: 'a bad query', content: { 'application/json': { schema: ErrorBody } } }
      }
    }
  }, (request, reply) => {
    const only = request.query.task
    reply.hijack()
    const res = reply.raw
    res.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      'X-Accel-Buffering': 'no', // nginx in front must not buffer the stream
      Connection: 'keep-alive'
    })
    res.write('retry: 3000\n\n')
    const send = (event: string, data: string) => {
      if (!res.writableEnded) res.write(`event: ${event}\ndata: ${data}\n\n`)
    }
    const onTask = (e: { id: number; json: string }) => { if (!only || e.id === only) send('task', `{"task":${e.json}}`) }
    const onDeleted = (e: { id: number }) => { if (!only || e.id === only) send('task_deleted', JSON.stringify(e)) }
    const onStage = (e: { task_id: number }) => { if (!only || e.task_id === only) send('stage', JSON.stringify(e)) }
    const onMachine = (m: object) => { if (!only) send('machine', JSON.stringify({ machine: m })) }
    // Machine builds (the Machines page's progress): each event, and the job once it ends.
    const onBuild = (build: number, event: object) => { if (!only) send('build', JSON.stringify({ build, event })) }
    const onBuildEnded = (job: { id: number; state: string; error: unknown }) => { if (!only) send('build_ended', JSON.stringify({ build: job.id, state: job.state, error: job.error })) }
    ctx.builds.on('progress', onBuild)
    ctx.builds.on('ended', onBuildEnded)
    ctx.bus.on('task', onTask)
    ctx.bus.on('task.deleted', onDeleted)
    ctx.bus.on('stage', onStage)
    ctx.bus.on('machine', onMachine)
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS)
    streams.add(res)
    res.on('close', () => {
      clearInterval(heartbeat)
      streams.delete(res)
      ctx.builds.off('progress', onBuild)
      ctx.builds.off('ended', onBuildEnded)
      ctx.bus.off('task', onTask)
      ctx.bus.off('task.deleted', onDeleted)
      ctx.bus.off('stage', onStage)
      ctx.bus.off('machine', onMachine)
    })
  })

  // Open streams never finish by themselves: end them so that closing the server does not wait.
  app.addHook('preClose', (done) => {
    for (const res of streams) res.end()
    done()
  })
}
