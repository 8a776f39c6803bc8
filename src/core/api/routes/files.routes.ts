// Samples: their hashes and their bytes.
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody, type Sample } from '../../../shared/api/schemas'
import { SampleView } from '../../../shared/api/responses'
import { FileIdParams, Md5Params, Sha256Params } from '../../../shared/api/requests'
import { ApiError, notFound } from '../../errors'
import { ErrorCodes } from '../../../shared/errors'
import { sendResult } from '../send-file'

const errors = { 400: ErrorBody, 404: ErrorBody }

export const filesRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['files']
  const view = (sample: Sample | undefined) => {
    if (!sample) throw notFound('File not found', ErrorCodes.FILE_NOT_FOUND)
    const tasks = ctx.taskRows.idsOfSample(sample.id)
    return { sample: { ...sample, tasks } }
  }

  app.get('/files/view/md5/:md5', { schema: { tags, summary: 'A sample by md5', params: Md5Params, response: { 200: SampleView, ...errors } } },
    async (request) => view(ctx.samples.findByHash('md5', request.params.md5)))
  app.get('/files/view/sha256/:sha256', { schema: { tags, summary: 'A sample by sha256', params: Sha256Params, response: { 200: SampleView, ...errors } } },
    async (request) => view(ctx.samples.findByHash('sha256', request.params.sha256)))
  app.get('/files/view/id/:id', { schema: { tags, summary: 'A sample by id', params: FileIdParams, response: { 200: SampleView, ...errors } } },
    async (request) => {
      if (request.params.id === 0) throw new ApiError(400, 'Invalid lookup term: id must be a whole number from 1', ErrorCodes.BAD_REQUEST)
      return view(ctx.samples.get(request.params.id))
    })
  app.get('/files/get/:sha256', {
    schema: { tags, summary: 'The bytes of a sample', params: Sha256Params, response: { 200: Type.Unsafe({ type: 'string', format: 'binary' }), ...errors } }
  }, async (request, reply) => sendResult(request, reply, await ctx.results.sampleFile(request.params.sha256)))
}
