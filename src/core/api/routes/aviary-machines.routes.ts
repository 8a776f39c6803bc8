// Machine controls for the UI (local drivers): start, stop, revert, a live screenshot, and the
// doctor's findings. Everything goes through ctx.fleet, which the running engine provides.
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { MachineNameParams } from '../../../shared/api/requests'
import { DoctorAnswer, DoctorQuery, MachineAnswer, isTrue } from '../../../shared/api/ui-schemas'
import { toApiMachine } from '../../db/machine-view'
import { notFound } from '../../errors'
import { ErrorCodes } from '../../../shared/errors'
import type { Fleet } from '../../fleet/fleet.service'
import { engineNotRunning } from '../../fleet/fleet-errors'
import { ControlledMachines } from '../../../shared/api/machine-controls'
import { withControls } from '../../fleet/machine-controls'

const errors = { 400: ErrorBody, 404: ErrorBody, 409: ErrorBody }

export const aviaryMachinesRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['aviary']

  /** 404 for an unknown machine comes first, then 409 when there is no engine. */
  const fleetFor = (name: string): Fleet => {
    if (!ctx.machines.findByName(name)) throw notFound('Machine not found', ErrorCodes.MACHINE_NOT_FOUND)
    if (!ctx.fleet) throw engineNotRunning()
    return ctx.fleet
  }

  app.get('/aviary/machines', {
    schema: {
      tags, summary: 'The machines (as /machines/list) with what may be done to each here: start, stop, revert, a live screen; and why not',
      response: { 200: ControlledMachines }
    }
  }, async () => {
    const engine = ctx.fleet !== null
    return { engine, machines: ctx.machines.list().map((m) => withControls(toApiMachine(m), engine)) }
  })

  const actions = {
    start: 'Start a machine (from its snapshot when it is off)',
    stop: 'Power a machine off',
    revert: 'Revert a machine to its snapshot'
  } as const
  for (const [action, summary] of Object.entries(actions) as [keyof typeof actions, string][]) {
    app.post(`/aviary/machines/:name/${action}`, {
      schema: { tags, summary, params: MachineNameParams, response: { 200: MachineAnswer, ...errors } }
    }, async (request) => ({ machine: toApiMachine(await fleetFor(request.params.name)[action](request.params.name)) }))
  }

  app.get('/aviary/machines/:name/screenshot', {
    schema: {
      tags, summary: "A live JPEG of a running machine's display", params: MachineNameParams,
      response: {
        200: { description: 'the display now', content: { 'image/jpeg': { schema: Type.Unsafe({ type: 'string', format: 'binary' }) } } },
        ...errors
      }
    }
  }, async (request, reply) => {
    const jpeg = await fleetFor(request.params.name).screenshot(request.params.name)
    return reply.type('image/jpeg').header('cache-control', 'no-store').send(jpeg)
  })

  app.get('/aviary/doctor', {
    schema: {
      tags, summary: "`aviary doctor`'s findings (quick checks; deep=1 also reverts, starts and stops idle machines)",
      querystring: DoctorQuery, response: { 200: DoctorAnswer, 400: ErrorBody, 409: ErrorBody }
    }
  }, async (request) => {
    if (!ctx.fleet) throw engineNotRunning()
    return ctx.fleet.doctor(isTrue(request.query.deep))
  })
}
