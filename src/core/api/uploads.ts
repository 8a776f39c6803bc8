// Multipart file parts, once ingested, stand in the request body as UploadedPart objects. The
// brand is a symbol, which no JSON or form body can forge, so a text field named `file` is
// told apart from a real upload.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import multipart from '@fastify/multipart'
import type { IngestedFile } from '../storage/ingest'
import type { SampleStore } from '../samples/sample-store'
import { badRequest } from '../errors'

export const UPLOAD_KEY = Symbol('aviary.upload')

export interface UploadedPart {
  [UPLOAD_KEY]: true
  file: IngestedFile
  filename: string
}

const isUpload = (v: unknown): v is UploadedPart => typeof v === 'object' && v !== null && UPLOAD_KEY in v

/** The uploads of a body field (none when absent); a text value is a 400 naming the field. */
export function uploadsOf(value: unknown, field: string): UploadedPart[] {
  if (value === undefined) return []
  const all = Array.isArray(value) ? value : [value]
  if (!all.every(isUpload)) throw badRequest(field, 'must be a file part of a multipart/form-data body')
  return all
}

type WithUploads = Record<symbol, UploadedPart[] | undefined>

/**
 * Multipart parsing for the routes of one plugin: each file part is streamed to the data dir
 * and hashed as it arrives, and the body field then holds the ingested file, not its bytes.
 * Uploads a request did not turn into samples (bad fields, errors, aborts) are removed before
 * the answer leaves, so a client that sees a 4xx sees nothing kept.
 */
export async function registerUploads(app: FastifyInstance, store: SampleStore, maxUploadBytes: number): Promise<void> {
  await app.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: { fileSize: maxUploadBytes, files: 1000, fields: 100, fieldSize: 1024 * 1024, parts: 1100, headerPairs: 100 },
    onFile: async function (part) {
      const file = await store.ingest(part.file, maxUploadBytes)
      const uploaded: UploadedPart = { [UPLOAD_KEY]: true, file, filename: part.filename }
      const request = this as unknown as WithUploads
      ;(request[UPLOAD_KEY] ??= []).push(uploaded)
      ;(part as unknown as { value: unknown }).value = uploaded
      if (part.file.truncated) throw Object.assign(new Error('too large'), { code: 'FST_REQ_FILE_TOO_LARGE' })
    }
  })
  const discard = async (request: FastifyRequest) => {
    const uploads = (request as unknown as WithUploads)[UPLOAD_KEY]
    if (uploads) await Promise.all(uploads.map((u) => store.discard(u.file)))
  }
  app.addHook('onSend', async (request) => discard(request))
  app.addHook('onRequestAbort', async (request) => discard(request))
}
