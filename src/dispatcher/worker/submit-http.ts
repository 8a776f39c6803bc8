// Submitting a task to a node with node:http and a keep-alive agent, the multipart body built in
// one buffer. Why not the shared client (fetch + FormData): measured here, fetch costs ~1-1.5 ms
// of CPU per 4 KB multipart POST against ~0.4 ms for this, and the dispatcher makes one POST per
// task (10,000 tasks: the difference between meeting a 5 s CPU budget and missing it by far). No
// maintained package among our dependencies encodes multipart for node:http, and the format for
// text fields plus one file is small (RFC 7578). Large samples still go through the shared client,
// which streams them from disk.
import http from 'node:http'
import https from 'node:https'
import { randomUUID } from 'node:crypto'
import { ANSWERS, ApiClientError, createdTask, decodeAnswer, refusalMessage, type Fields } from '../../shared/api/client'

/**
 * No usable answer because no connection was ever made (refused, no route, the deadline passed
 * while connecting): the node received nothing, so it made no task.
 */
export class NotSentError extends ApiClientError {}

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 16 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 16 })
}

/** Quotes a name or file name for Content-Disposition (RFC 7578 §4.2: escape `"`, CR and LF). */
const quote = (s: string): string => s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')

export function encodeMultipart(fields: Fields, file?: { field: string; name: string; data: Buffer }): { body: Buffer; contentType: string } {
  // randomUUID draws from a cached pool; randomBytes per request cost ~30 µs of CPU each.
  const boundary = `----aviary${randomUUID()}`
  const parts: Buffer[] = []
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === false) continue
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${quote(k)}"\r\n\r\n${v === true ? '1' : String(v)}\r\n`))
  }
  if (file) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${quote(file.field)}"; filename="${quote(file.name)}"\r\nContent-Type: application/octet-stream\r\n\r\n`))
    parts.push(file.data, Buffer.from('\r\n'))
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` }
}

/**
 * POSTs a multipart body to a node and reads the created task's id, with the shared client's rules
 * for answers (status 0: no usable answer, the node may have created the task all the same): the
 * whole exchange ends within `timeoutMs` (a node that drips its answer byte by byte included),
 * and an answer over `maxAnswerBytes` is cut off.
 */
export function postMultipart(
  node: { url: string; token: string | null }, path: string, form: { body: Buffer; contentType: string }, timeoutMs: number, maxAnswerBytes: number
): Promise<{ task_id: number }> {
  const base = node.url.replace(/\/+$/, '')
  const where = `${base} POST ${path}`
  const url = new URL(base + path)
  const mod = url.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    let late = false
    // Whether a byte of the request can have left: once a connection exists (a kept-alive one at once).
    let connected = false
    // The first settlement wins; after the deadline every path reports the deadline.
    const fail = (message: string): void => reject(new ApiClientError(0, late ? `${where}: no complete answer within ${timeoutMs} ms` : message))
    const req = mod.request(url, {
      method: 'POST',
      agent: url.protocol === 'https:' ? agents.https : agents.http,
      headers: {
        'content-type': form.contentType,
        'content-length': form.body.length,
        ...(node.token !== null ? { authorization: `Bearer ${node.token}` } : {})
      }
    }, (res) => {
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (c: Buffer) => {
        size += c.length
        if (size <= maxAnswerBytes) chunks.push(c)
        // Past the cap the rest is not read: the socket goes, and the answer counts as too large.
        else res.destroy()
      })
      res.on('error', (err) => fail(`${where}: the answer broke off (${err.message})`))
      res.on('close', () => {
        clearTimeout(timer)
        const status = res.statusCode ?? 0
        const text = size > maxAnswerBytes ? null : Buffer.concat(chunks).toString('utf8')
        if (!res.complete && text !== null) return fail(`${where}: the answer broke off`)
        if (status < 200 || status >= 300) return reject(new ApiClientError(status, refusalMessage(status, res.statusMessage ?? '', text)))
        try {
          resolve(createdTask(decodeAnswer(where, status, text, ANSWERS.created, maxAnswerBytes)))
        } catch (err) {
          reject(err as ApiClientError)
        }
      })
    })
    // One deadline for the whole exchange: the socket's idle timeout would restart with every byte.
    const timer = setTimeout(() => {
      late = true
      req.destroy(new Error('deadline'))
    }, timeoutMs)
    req.on('socket', (socket) => {
      if (!socket.connecting) connected = true
      else socket.once('connect', () => { connected = true })
    })
    req.on('error', (err) => {
      clearTimeout(timer)
      if (!connected) reject(new NotSentError(0, late ? `${where}: no connection within ${timeoutMs} ms` : `cannot reach ${base}: ${err.message}`))
      else fail(`cannot reach ${base}: ${err.message}`)
    })
    req.end(form.body)
  })
}
