// Multipart samples go straight to the samples directory as they arrive (flat memory for any
// size), under a random name as Cuckoo's mkstemp did; the body field then holds the stored file.
// A request that did not turn its upload into a task (bad fields, errors, aborts) has the file
// removed before the answer leaves, so a client that sees a 4xx leaves nothing behind.
import { createWriteStream } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import multipart from '@fastify/multipart'
import { badRequest } from './errors'

const UPLOAD = Symbol('dist.upload')

export interface StoredUpload {
  [UPLOAD]: true
  path: string
  filename: string
  size: number
  /** Set once a task owns the file, so it is kept. */
  kept: boolean
}

type WithUploads = Record<symbol, StoredUpload[] | undefined>

const isUpload = (v: unknown): v is StoredUpload => typeof v === 'object' && v !== null && UPLOAD in v

/** The one upload of a body field, undefined when absent; a text value or several files are a 400. */
export function uploadOf(value: unknown, field: string): StoredUpload | undefined {
  if (value === undefined) return undefined
  const all = Array.isArray(value) ? value : [value]
  if (!all.every(isUpload)) throw badRequest(field, 'must be a file part of a multipart/form-data body')
  if (all.length > 1) throw badRequest(field, 'one file per task')
  return all[0]
}

export async function registerUploads(app: FastifyInstance, samplesDir: string, maxUploadBytes: number): Promise<void> {
  await app.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: { fileSize: maxUploadBytes, files: 4, fields: 100, fieldSize: 1024 * 1024, parts: 110, headerPairs: 100 },
    onFile: async function (part) {
      await mkdir(samplesDir, { recursive: true })
      const stored: StoredUpload = {
        [UPLOAD]: true,
        path: path.join(samplesDir, `upload-${randomBytes(12).toString('hex')}`),
        filename: path.basename(part.filename || 'sample').slice(0, 255) || 'sample',
        size: 0,
        kept: false
      }
      const request = this as unknown as WithUploads
      ;(request[UPLOAD] ??= []).push(stored)
      const count = new Transform({
        transform(chunk: Buffer, _enc, done) {
          stored.size += chunk.length
          done(null, chunk)
        }
      })
      await pipeline(part.file, count, createWriteStream(stored.path, { flags: 'wx', mode: 0o600 }))
      ;(part as unknown as { value: unknown }).value = stored
      if (part.file.truncated) throw Object.assign(new Error('too large'), { code: 'FST_REQ_FILE_TOO_LARGE' })
    }
  })
  const discard = async (request: FastifyRequest) => {
    const uploads = (request as unknown as WithUploads)[UPLOAD]
    if (uploads) await Promise.all(uploads.filter((u) => !u.kept).map((u) => rm(u.path, { force: true })))
  }
  app.addHook('onSend', async (request) => discard(request))
  app.addHook('onRequestAbort', async (request) => discard(request))
}
