// Reads a POST body the way Cuckoo's agent.py (cgi.FieldStorage) and CAPE's agent do: either
// application/x-www-form-urlencoded or multipart/form-data. A multipart part with a filename is
// a file, any other part a text field; blank values are dropped like cgi's keep_blank_values=0.
// File parts are streamed to a private temporary folder (never held in memory), because /store
// and /extract may receive files far larger than RAM ("largefile"), and a multipart body may
// carry the file before the field that says where it goes. @fastify/busboy does the parsing.
import { Busboy } from '@fastify/busboy'
import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import type { IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { MAX_FORM_FIELD } from '../guest-protocol/agent-api.js'
import { HttpError } from './http-error.js'

export { HttpError }

export interface UploadedFile {
  /** Where the part's bytes were written. */
  tempPath: string
  filename: string
  size: number
}

export interface FormBody {
  fields: Map<string, string>
  files: Map<string, UploadedFile>
  /** Removes the temporary files that the handler did not move away. */
  dispose(): Promise<void>
}

function emptyBody(): FormBody {
  return { fields: new Map(), files: new Map(), dispose: async () => {} }
}

export async function readForm(req: IncomingMessage): Promise<FormBody> {
  const type = req.headers['content-type'] ?? ''
  if (req.method !== 'POST' || !/^(multipart\/form-data|application\/x-www-form-urlencoded)/i.test(type)) {
    req.resume()
    return emptyBody()
  }
  const fields = new Map<string, string>()
  const files = new Map<string, UploadedFile>()
  let dir: Promise<string> | undefined
  const dispose = async (): Promise<void> => {
    if (dir !== undefined) await rm(await dir, { recursive: true, force: true })
  }
  const writes: Promise<void>[] = []
  const parser = Busboy({
    headers: { ...req.headers, 'content-type': type },
    limits: { fieldSize: MAX_FORM_FIELD, fields: 100, files: 10 }
  })
  parser.on('field', (name, value) => {
    if (value !== '') fields.set(name, value)
  })
  parser.on('file', (name, stream, filename) => {
    const index = writes.length
    const write = async (): Promise<void> => {
      // A name that says nothing of the agent: the sample lists the temporary folder too.
      dir ??= mkdtemp(join(tmpdir(), 'tmp'))
      const tempPath = join(await dir, `part-${index}`)
      const entry: UploadedFile = { tempPath, filename, size: 0 }
      stream.on('data', (chunk: Buffer) => {
        entry.size += chunk.length
      })
      await pipeline(stream, createWriteStream(tempPath))
      files.set(name, entry)
    }
    writes.push(write())
  })
  try {
    await pipeline(req, parser)
    await Promise.all(writes)
  } catch (err) {
    await Promise.allSettled(writes)
    await dispose()
    throw new HttpError(400, `Malformed request body: ${(err as Error).message}`)
  }
  return { fields, files, dispose }
}
