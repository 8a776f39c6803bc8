// POST /tasks/create/file, /tasks/create/url and /tasks/create/submit (the app adds their /v1 aliases).
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { CreateFileBody, CreateUrlBody, SubmitBody } from '../../../shared/api/requests'
import { ErrorBody } from '../../../shared/api/schemas'
import { SubmitResult, TaskCreated } from '../../../shared/api/responses'
import { registerUploads, uploadsOf } from '../uploads'
import { badRequest } from '../../errors'

const errors = { 400: ErrorBody, 413: ErrorBody }

export const createRoutes = (ctx: ApiContext, maxUploadBytes: number): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['tasks']
  await registerUploads(app, ctx.store, maxUploadBytes)

  app.post('/tasks/create/file', {
    schema: { tags, summary: 'Submit a file', consumes: ['multipart/form-data'], body: CreateFileBody, response: { 200: TaskCreated, ...errors } }
  }, async (request) => {
    const [upload, ...extra] = uploadsOf(request.body.file, 'file')
    if (!upload) throw badRequest('file', 'required; a file part of a multipart/form-data body')
    if (extra.length) throw badRequest('file', 'one file per request here; use /tasks/create/submit for several')
    const { file: _f, ...fields } = request.body
    return { task_id: await ctx.submit.createFile({ file: upload.file, filename: upload.filename }, fields) }
  })

  app.post('/tasks/create/url', {
    schema: {
      tags, summary: 'Submit a URL',
      consumes: ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'],
      body: CreateUrlBody, response: { 200: TaskCreated, ...errors }
    }
  }, async (request) => {
    const { url: target, ...fields } = request.body
    if (typeof target !== 'string') throw badRequest('url', 'required; an http or https URL')
    return { task_id: ctx.submit.createUrl(target, fields) }
  })

  app.post('/tasks/create/submit', {
    schema: {
      tags, summary: 'Submit several files (archives are unpacked), URLs or hashes',
      consumes: ['multipart/form-data', 'application/x-www-form-urlencoded'],
      body: SubmitBody, response: { 200: SubmitResult, ...errors }
    }
  }, async (request) => {
    const body = request.body ?? {}
    const { file, files, strings, ...fields } = body
    const uploads = [...uploadsOf(file, 'file'), ...uploadsOf(files, 'files')]
    return ctx.submit.submit(uploads.map((u) => ({ file: u.file, filename: u.filename })), strings, fields)
  })
}
