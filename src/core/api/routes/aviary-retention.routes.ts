// Retention (/aviary/retention/...): the rules and the schedule, the dry run, the run and its
// record. Everything goes through ctx.retention (src/core/retention); docs/retention.md.
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import {
  OneRule, Preview, PreviewQuery, RetentionSettings, RuleFields, RuleIdParams, RunBody, RunList, RunRecord, RunsQuery, ScheduleFields
} from '../../../shared/api/retention'

const tags = ['retention']
const e400 = { 400: ErrorBody, 500: ErrorBody }
const e404 = { 400: ErrorBody, 404: ErrorBody, 500: ErrorBody }

export const aviaryRetentionRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const r = ctx.retention
  // A field sent as null or "" is a field not sent: coerced, either would read as 0, and a rule
  // "older than 0 days" is a rule that deletes everything finished.
  app.addHook('preValidation', async (request) => {
    const body = request.body
    if (!body || typeof body !== 'object' || Array.isArray(body)) return
    for (const [k, v] of Object.entries(body)) if (v === null || v === '') delete (body as Record<string, unknown>)[k]
  })

  app.get('/aviary/retention', {
    schema: { tags, summary: 'The retention rules and the schedule (with its next and last run)', response: { 200: RetentionSettings, 500: ErrorBody } }
  }, async () => r.settings())

  app.put('/aviary/retention/schedule', {
    schema: {
      tags, summary: 'Turn the schedule on or off, or change its interval; turned on, the first run is one interval later',
      body: ScheduleFields, response: { 200: RetentionSettings, ...e400 }
    }
  }, async (request) => r.setSchedule(request.body ?? {}))

  app.post('/aviary/retention/rules', {
    schema: { tags, summary: 'Add a rule', body: RuleFields, response: { 200: OneRule, ...e400 } }
  }, async (request) => ({ rule: r.rules.add(request.body) }))

  app.put('/aviary/retention/rules/:id', {
    schema: { tags, summary: 'Replace a rule (every field; the ones left out take their defaults)', params: RuleIdParams, body: RuleFields, response: { 200: OneRule, ...e404 } }
  }, async (request) => ({ rule: r.rules.replace(request.params.id, request.body) }))

  app.delete('/aviary/retention/rules/:id', {
    schema: { tags, summary: 'Delete a rule (nothing else)', params: RuleIdParams, response: { 200: ErrorBody, ...e404 } }
  }, async (request) => {
    r.rules.remove(request.params.id)
    return { message: `Retention rule ${request.params.id} deleted` }
  })

  app.get('/aviary/retention/preview', {
    schema: {
      tags, summary: 'Dry run: every task a saved rule (or every enabled rule) would delete now, the samples that would go, and the disk freed',
      querystring: PreviewQuery, response: { 200: Preview, ...e404 }
    }
  }, async (request) => r.preview({ rule: request.query.rule }))

  app.post('/aviary/retention/preview', {
    schema: { tags, summary: 'Dry run of a rule not saved (rule 0 in the answer)', body: RuleFields, response: { 200: Preview, ...e400 } }
  }, async (request) => r.preview({ draft: request.body }))

  app.post('/aviary/retention/run', {
    schema: {
      tags, summary: 'Delete what the preview lists now (only the given task ids of it, if any), one task at a time as /tasks/delete does; answers the record of the run',
      body: RunBody, response: { 200: RunRecord, ...e404 }
    },
    // No body at all means every enabled rule, as an empty object does.
    preValidation: async (request) => { if (request.body === undefined || request.body === null) request.body = {} }
  }, async (request) => r.run(request.body ?? {}, 'api'))

  app.get('/aviary/retention/runs', {
    schema: { tags, summary: 'The record of the latest runs, newest first', querystring: RunsQuery, response: { 200: RunList, ...e400 } }
  }, async (request) => ({ runs: r.history.recent(request.query.limit ?? 20) }))
}
