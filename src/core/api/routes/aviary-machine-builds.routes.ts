// Machines made and kept by Aviary, for the Machines page: a Linux build started in the background
// (202 and its job; the page follows its events here, from a seq on, or as `build` events on
// GET /events), a machine deleted or rebuilt, each machine's and image's disk use, what a crash
// left behind, and prepare mode (the machine started for the user to change, then kept or
// discarded). docs/api.md, "Making and keeping machines"; docs/machines.md.
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { MachineNameParams } from '../../../shared/api/requests'
import { MachineAnswer } from '../../../shared/api/ui-schemas'
import {
  BuildAnswer, BuildIdParams, BuildSinceQuery, BuildsAnswer, DeleteAnswer, DiskUseAnswer, LeftoversAnswer, LinuxBuildBody, PrepareAnswer,
  PreparingAnswer, RemoveLeftoversBody, RemovedLeftoversAnswer, type BuildJobView
} from '../../../shared/api/machine-builds'
import { ApiError, badRequest, notFound } from '../../errors'
import { ErrorCodes } from '../../../shared/errors'
import { conflict, engineNotRunning } from '../../fleet/fleet-errors'
import { toApiMachine } from '../../db/machine-view'
import { BuildBusyError, type BuildJob } from '../../builder/machine-builds'
import { BuildInputError, type LinuxMachinesRequest } from '../../builder/linux-plan'
import { UpkeepError } from '../../builder/upkeep'

const tags = ['machines']
const errors = { 400: ErrorBody, 404: ErrorBody, 409: ErrorBody }

/** A job as the API shows it: its events after `since`, and the last seq to ask from next. */
export function jobView(job: BuildJob, since = 0): BuildJobView {
  const { result, ...rest } = job
  return {
    ...rest,
    request: { ...job.request },
    events: job.events.filter((e) => e.seq > since),
    last_seq: job.events.at(-1)?.seq ?? 0,
    result: result ? { ...result, doctor: undefined } as unknown as BuildJobView['result'] : null
  }
}

const upkeepError = (err: unknown): unknown => {
  if (err instanceof UpkeepError) return err.status === 404 ? notFound(err.message, ErrorCodes.MACHINE_NOT_FOUND) : err.status === 409 ? conflict(err.message) : badRequest(err.field, err.message)
  return err
}

export const aviaryMachineBuildsRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()

  const start = (request: LinuxMachinesRequest, o?: Parameters<typeof ctx.builds.startLinux>[1]): BuildJob => {
    try {
      return ctx.builds.startLinux(request, o)
    } catch (err) {
      if (err instanceof BuildBusyError) throw conflict(err.message)
      if (err instanceof BuildInputError) throw new ApiError(400, err.message, ErrorCodes.BAD_REQUEST)
      throw err
    }
  }

  /** A machine no task or action holds (a task's lock, prepare mode): deleting it is safe. */
  const idle = (name: string): void => {
    const row = ctx.machines.findByName(name)
    if (row?.locked) throw conflict(`${name} is in use (a task, a start, stop or revert, or prepare mode): try again when it is released`)
  }

  app.post('/aviary/machines/builds', {
    schema: {
      tags, summary: 'Start making Linux machines (as `aviary machines create linux`); 202 with the build, which runs in the background',
      body: LinuxBuildBody, response: { 202: BuildAnswer, ...errors }
    }
  }, async (request, reply) => {
    const b = request.body ?? {}
    const job = start({ name: b.name, count: b.count, memoryMiB: b.memory, vcpus: b.vcpus, network: b.network, rebuild: b.rebuild, refresh: b.refresh })
    return reply.code(202).header('location', `/aviary/machines/builds/${job.id}`).send({ build: jobView(job) })
  })

  app.get('/aviary/machines/builds', {
    schema: { tags, summary: 'The last builds (without their events) and whether one runs', response: { 200: BuildsAnswer } }
  }, async () => ({ builds: ctx.builds.list().map((j) => ({ ...jobView(j), events: [] })).reverse(), running: ctx.builds.busy() }))

  app.get('/aviary/machines/builds/:id', {
    schema: {
      tags, summary: 'A build: its state, its events after `since` (every step, notes, the last 200 lines of tool output), its result or error',
      params: BuildIdParams, querystring: BuildSinceQuery, response: { 200: BuildAnswer, 400: ErrorBody, 404: ErrorBody }
    }
  }, async (request) => {
    const job = ctx.builds.get(request.params.id)
    if (!job) throw notFound('Build not found')
    return { build: jobView(job, request.query.since ?? 0) }
  })

  app.get('/aviary/machines/disk', {
    schema: { tags, summary: "Disk use of each machine's folder (its overlay), of each image and of the package cache", response: { 200: DiskUseAnswer, 400: ErrorBody } }
  }, async () => ctx.upkeep.diskUse())

  app.get('/aviary/machines/leftovers', {
    schema: { tags, summary: 'What a crash or an interrupted build left: folders, domains, snapshots, images nothing in machines.json uses', response: { 200: LeftoversAnswer, 400: ErrorBody } }
  }, async () => ({ leftovers: await ctx.upkeep.leftovers() }))

  app.post('/aviary/machines/leftovers/remove', {
    schema: { tags, summary: 'Remove the leftovers found now (only those named in `names`, when given)', body: RemoveLeftoversBody, response: { 200: RemovedLeftoversAnswer, 400: ErrorBody, 409: ErrorBody } }
  }, async (request) => {
    if (ctx.builds.busy()) throw conflict('a machine build is running: what it is making would look left over; try again when it ends')
    return ctx.upkeep.removeLeftovers(request.body?.names)
  })

  app.delete('/aviary/machines/:name', {
    schema: {
      tags, summary: 'Delete a machine: its machines.json entry, and for one Aviary made its domain, snapshots and disk',
      params: MachineNameParams, response: { 200: DeleteAnswer, ...errors }
    }
  }, async (request) => {
    const name = request.params.name
    if (ctx.builds.busy()) throw conflict('a machine build is running: try again when it ends')
    idle(name)
    return ctx.upkeep.deleteMachine(name).catch((err: unknown) => { throw upkeepError(err) })
  })

  app.post('/aviary/machines/:name/rebuild', {
    schema: {
      tags, summary: 'Delete a machine Aviary made and make it again under its name (a build: 202, followed as any)',
      params: MachineNameParams, response: { 202: BuildAnswer, ...errors }
    }
  }, async (request, reply) => {
    const name = request.params.name
    const disk = (await ctx.upkeep.diskUse()).machines.find((m) => m.name === name)
    if (!disk) throw notFound('Machine not found', ErrorCodes.MACHINE_NOT_FOUND)
    if (!disk.built) throw conflict(`${name} was not made by Aviary (it has no folder under machines/): rebuild it by hand`)
    idle(name)
    const job = start({ name }, {
      kind: 'rebuild',
      before: async (_c, note) => {
        const { removed } = await ctx.upkeep.deleteMachine(name)
        note(`deleted ${name}: ${removed.join(', ')}`)
      }
    })
    return reply.code(202).header('location', `/aviary/machines/builds/${job.id}`).send({ build: jobView(job) })
  })

  app.get('/aviary/machines/preparing', {
    schema: { tags, summary: 'The machines in prepare mode now, with how to reach each', response: { 200: PreparingAnswer } }
  }, async () => ({ preparing: ctx.fleet?.preparing() ?? [] }))

  app.post('/aviary/machines/:name/prepare', {
    schema: {
      tags, summary: 'Prepare mode: revert and start the machine for you to change (no task gets it meanwhile); then keep or discard',
      params: MachineNameParams, response: { 200: PrepareAnswer, ...errors }
    }
  }, async (request) => {
    if (!ctx.machines.findByName(request.params.name)) throw notFound('Machine not found', ErrorCodes.MACHINE_NOT_FOUND)
    if (!ctx.fleet) throw engineNotRunning()
    return ctx.fleet.prepare(request.params.name)
  })

  for (const how of ['keep', 'discard'] as const) {
    app.post(`/aviary/machines/:name/${how}`, {
      schema: {
        tags, params: MachineNameParams, response: { 200: MachineAnswer, ...errors },
        summary: how === 'keep' ? 'End prepare mode keeping the change: the machine as it runs now becomes its snapshot' : 'End prepare mode dropping the change: back to its snapshot, powered off'
      }
    }, async (request) => {
      if (!ctx.machines.findByName(request.params.name)) throw notFound('Machine not found', ErrorCodes.MACHINE_NOT_FOUND)
      if (!ctx.fleet) throw engineNotRunning()
      return { machine: toApiMachine(await ctx.fleet.endPrepare(request.params.name, how)) }
    })
  }
}
