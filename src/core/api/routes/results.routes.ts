// What an analysis produced: reports and archives, screenshots, memory dumps, the pcap.
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { ArchiveQuery, MemoryParams, PcapParams, ReportParams, ScreenshotParams, TaskIdParams } from '../../../shared/api/requests'
import { sendResult } from '../send-file'
import { MemoryList } from '../../../shared/api/responses'
import { ARTIFACTS } from '../../storage/layout'

const Binary = Type.Unsafe<unknown>({ type: 'string', format: 'binary' })

/** One dropped file: its folder in the analysis (files/ or package_files/) and its name there (report.json's dropped[].relpath). */
const DroppedFileParams = Type.Object({
  ...TaskIdParams.properties,
  folder: { ...Type.String({ enum: [ARTIFACTS.dropped, ARTIFACTS.packageFiles] }), 'x-allowed': `${ARTIFACTS.dropped} or ${ARTIFACTS.packageFiles} (the first part of a dropped file's relpath)` },
  name: {
    ...Type.String({ minLength: 1, maxLength: 255, pattern: '^[^/\\\\\\u0000]+$' }),
    'x-allowed': 'a file name in that folder, as in the dropped file\'s relpath (at most 255 characters, no slash)'
  }
})
const errors = { 400: ErrorBody, 404: ErrorBody }

export const resultsRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()

  for (const url of ['/tasks/report/:id', '/tasks/report/:id/:format']) {
    app.get(url, {
      schema: {
        tags: ['reports'],
        summary: 'A report (json, html, maec, metadata) or an archive of results (all, dropped, package_files)',
        params: ReportParams, querystring: ArchiveQuery, response: { 200: Binary, ...errors }
      }
    }, async (request, reply) => {
      const tar = request.query.tar === 'gz' ? 'gz' : request.query.tar === 'tar' ? 'none' : 'bz2'
      const result = await ctx.results.report(request.params.id, request.params.format ?? 'json', tar, request.query.elements)
      return sendResult(request, reply, result)
    })
  }

  app.get('/tasks/summary/:id', {
    schema: { tags: ['reports'], summary: 'report.json without its heaviest parts', params: TaskIdParams, response: { 200: Binary, ...errors } }
  }, async (request, reply) => sendResult(request, reply, await ctx.results.summary(request.params.id)))

  for (const url of ['/tasks/screenshots/:id', '/tasks/screenshots/:id/:screenshot']) {
    app.get(url, {
      schema: {
        tags: ['reports'], summary: 'One screenshot (JPEG), or all of them as a zip',
        params: ScreenshotParams, response: { 200: Binary, ...errors }
      }
    }, async (request, reply) => {
      const { id, screenshot } = request.params
      return sendResult(request, reply, screenshot === undefined ? await ctx.results.screenshots(id) : await ctx.results.screenshot(id, screenshot))
    })
  }

  app.get('/memory/list/:id', {
    schema: {
      tags: ['memory'], summary: 'Process memory dumps of a task', params: TaskIdParams,
      response: { 200: MemoryList, ...errors }
    }
  }, async (request) => ({ dump_files: await ctx.results.memoryList(request.params.id) }))

  app.get('/memory/get/:id/:pid', {
    schema: { tags: ['memory'], summary: 'One process memory dump', params: MemoryParams, response: { 200: Binary, ...errors } }
  }, async (request, reply) => sendResult(request, reply, await ctx.results.memoryDump(request.params.id, request.params.pid)))

  app.get('/aviary/tasks/:id/flows', {
    schema: {
      tags: ['reports'], summary: 'The decrypted HTTPS flows of a task (mitm=1), in mitmproxy\'s format: mitmproxy -r <file>',
      params: TaskIdParams, response: { 200: Binary, ...errors }
    }
  }, async (request, reply) => sendResult(request, reply, await ctx.results.flows(request.params.id)))

  app.get('/aviary/tasks/:id/dropped/:folder/:name', {
    schema: {
      tags: ['reports'], summary: 'One dropped file (an entry of the report\'s dropped[], by its relpath), as an attachment',
      params: DroppedFileParams, response: { 200: Binary, ...errors }
    }
  }, async (request, reply) => {
    const { id, folder, name } = request.params
    return sendResult(request, reply, await ctx.results.droppedFile(id, folder as typeof ARTIFACTS.dropped | typeof ARTIFACTS.packageFiles, name))
  })

  app.get('/pcap/get/:task', {
    schema: { tags: ['reports'], summary: 'The packet capture of a task', params: PcapParams, response: { 200: Binary, ...errors } }
  }, async (request, reply) => sendResult(request, reply, await ctx.results.pcap(request.params.task)))
}
