// One sample upload with progress. XMLHttpRequest, because fetch reports no upload progress.
import { apiUrl, HttpError, type ConnectionId } from '../api/http'
import { ANSWERS, createdTask, decodeAnswer } from '../../../shared/api/client'

export interface UploadHandle { done: Promise<{ task_id: number }>; abort(): void }

/**
 * `route`: the analysis API's /tasks/create/file, or a dispatcher's /api/task (same `file` field,
 * same task_id answer). A 2xx answer is checked as the shared client checks a create route's.
 */
export function uploadFile(connection: ConnectionId, file: Blob, name: string, fields: Record<string, string>,
  onProgress: (loaded: number, total: number) => void, route = '/tasks/create/file'): UploadHandle {
  const xhr = new XMLHttpRequest()
  const done = apiUrl(connection, route).then((url) => new Promise<{ task_id: number }>((resolve, reject) => {
    const form = new FormData()
    for (const [k, v] of Object.entries(fields)) form.append(k, v)
    form.append('file', file, name)
    xhr.open('POST', url)
    xhr.setRequestHeader('Accept', 'application/json')
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size)
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        try {
          resolve(createdTask(decodeAnswer(`POST ${url}`, xhr.status, xhr.responseText, ANSWERS.created, Infinity)))
        } catch (err) {
          reject(err as Error)
        }
        return
      }
      let body: { message?: unknown } = {}
      try { body = JSON.parse(xhr.responseText) as typeof body } catch { /* not JSON: the status says it */ }
      reject(new HttpError(xhr.status, typeof body?.message === 'string' ? body.message : `HTTP ${xhr.status}`))
    }
    xhr.onerror = () => reject(new HttpError(0, 'the server cannot be reached'))
    xhr.onabort = () => reject(new HttpError(0, 'cancelled'))
    xhr.send(form)
  }))
  return { done, abort: () => xhr.abort() }
}
