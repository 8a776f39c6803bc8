// Service status, machines, VPN status and the debug-only /exit.
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody, ServiceStatus } from '../../../shared/api/schemas'
import { MachineList, MachineView, VpnStatus } from '../../../shared/api/responses'
import { MachineNameParams } from '../../../shared/api/requests'
import { ApiError, notFound } from '../../errors'
import { ErrorCodes } from '../../../shared/errors'
import { toApiMachine } from '../../db/machine-view'

export const statusRoutes = (ctx: ApiContext, opts: { debug: boolean }): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()

  for (const url of ['/cuckoo/status', '/sandbox/status']) {
    app.get(url, { schema: { tags: ['status'], summary: 'Service status', response: { 200: ServiceStatus } } },
      async () => ctx.status.status())
  }

  app.get('/machines/list', { schema: { tags: ['machines'], summary: 'Configured analysis machines', response: { 200: MachineList } } },
    async () => ({ machines: ctx.machines.list().map(toApiMachine) }))
  app.get('/machines/view/:name', {
    schema: { tags: ['machines'], summary: 'One machine, by name', params: MachineNameParams, response: { 200: MachineView, 404: ErrorBody } }
  }, async (request) => {
    const row = ctx.machines.findByName(request.params.name)
    if (!row) throw notFound('Machine not found', ErrorCodes.MACHINE_NOT_FOUND)
    return { machine: toApiMachine(row) }
  })

  app.get('/vpn/status', {
    schema: {
      tags: ['status'], summary: 'VPN status: no VPN is configured in Aviary',
      response: { 200: VpnStatus }
    }
  }, async () => ({ vpns: {}, message: 'No VPN is configured' }))

  app.get('/exit', {
    schema: { tags: ['status'], summary: 'Stop the service (debug mode only)', response: { 200: ErrorBody, 403: ErrorBody } }
  }, async (_request, reply) => {
    if (!opts.debug) throw new ApiError(403, 'This call can only be used in debug mode', ErrorCodes.FORBIDDEN)
    reply.raw.once('finish', () => ctx.requestExit())
    return { message: 'Server stopped' }
  })
}
