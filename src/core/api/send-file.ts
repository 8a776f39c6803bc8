// Sends a file or a stream from the analysis storage: streamed (flat memory for multi-GiB
// memory dumps), with Range and conditional requests handled by @fastify/send.
import send from '@fastify/send'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FileResult, StreamResult } from '../results/results.service'

export async function sendResult(request: FastifyRequest, reply: FastifyReply, result: FileResult | StreamResult): Promise<FastifyReply> {
  if (result.kind === 'stream') {
    if (result.downloadName) reply.header('Content-Disposition', `attachment; filename="${result.downloadName}"`)
    // A client that goes away must stop the archiver and its bzip2 child.
    request.raw.once('close', () => { if (!result.stream.readableEnded) result.stream.destroy() })
    return reply.type(result.contentType).send(result.stream)
  }
  const { statusCode, headers, stream } = await send(request.raw, result.path, {
    contentType: false,
    cacheControl: false,
    dotfiles: 'allow',
    index: false,
    acceptRanges: true,
    etag: true,
    lastModified: true
  })
  reply.code(statusCode).headers(headers)
  if (statusCode === 200 || statusCode === 206) {
    reply.type(result.contentType)
    if (result.downloadName) reply.header('Content-Disposition', `attachment; filename="${result.downloadName}"`)
  }
  return reply.send(stream)
}
