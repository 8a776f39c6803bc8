// A small client of the analysis API, for `aviary submit`, the UI and the dispatcher. It runs
// anywhere fetch, FormData and Blob exist (Node 20, browsers, Electron).
import type { Machine, Sample, ServiceStatus, Task } from './schemas'

export class ApiClientError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

export type Fields = Record<string, string | number | boolean | undefined>

export class AnalysisClient {
  private readonly base: string

  constructor(base: string, private readonly opts: { token?: string | undefined; fetch?: typeof fetch; timeoutMs?: number } = {}) {
    this.base = base.replace(/\/+$/, '')
  }

  createFile(file: Blob, filename: string, fields: Fields = {}): Promise<{ task_id: number }> {
    const form = toForm(fields)
    form.append('file', file, filename)
    return this.request('POST', '/tasks/create/file', form)
  }

  createUrl(url: string, fields: Fields = {}): Promise<{ task_id: number }> {
    const form = toForm({ ...fields, url })
    return this.request('POST', '/tasks/create/url', form)
  }

  submit(files: { blob: Blob; name: string }[], strings: string[], fields: Fields = {}): Promise<{ submit_id: number; task_ids: number[]; errors: string[] }> {
    const form = toForm(fields)
    if (strings.length) form.append('strings', strings.join('\n'))
    for (const f of files) form.append('files', f.blob, f.name)
    return this.request('POST', '/tasks/create/submit', form)
  }

  status(): Promise<ServiceStatus> {
    return this.request('GET', '/cuckoo/status')
  }

  /** The node's analysis machines (the dispatcher reads them when a node registers or refreshes). */
  machines(): Promise<{ machines: Machine[] }> {
    return this.request('GET', '/machines/list')
  }

  task(id: number): Promise<{ task: Task }> {
    return this.request('GET', `/tasks/view/${id}`)
  }

  tasks(limit?: number, offset?: number): Promise<{ tasks: Task[] }> {
    const path = limit === undefined ? '/tasks/list' : offset === undefined ? `/tasks/list/${limit}` : `/tasks/list/${limit}/${offset}`
    return this.request('GET', path)
  }

  sample(sha256: string): Promise<{ sample: Sample }> {
    return this.request('GET', `/files/view/sha256/${sha256}`)
  }

  /** Tasks in one status (`/tasks/list/<limit>[/<offset>]?status=`), as the dispatcher polls them. */
  tasksWithStatus(status: string, limit: number, offset = 0): Promise<{ tasks: Task[] }> {
    return this.request('GET', `/tasks/list/${limit}/${offset}?status=${encodeURIComponent(status)}`)
  }

  /** Removes a task and its results from the server (refused with 500 while it runs). */
  deleteTask(id: number): Promise<{ status: string }> {
    return this.request('GET', `/tasks/delete/${id}`)
  }

  /**
   * A report (`format` as /tasks/report/<id>/<format> takes it) or, with format null, the pcap:
   * the open response, to stream wherever the caller wants; null when the server has none (404).
   */
  async download(id: number, format: string | null, signal?: AbortSignal): Promise<Response | null> {
    const p = format === null ? `/pcap/get/${id}` : `/tasks/report/${id}/${encodeURIComponent(format)}`
    const res = await this.send('GET', p, undefined, signal)
    if (res.status === 404) {
      await res.body?.cancel()
      return null
    }
    if (!res.ok) throw new ApiClientError(res.status, await errorMessage(res))
    return res
  }

  /** The fetch itself; a connection failure or a timeout (opts.timeoutMs, to the headers) is status 0. */
  private async send(method: string, path: string, body?: FormData, signal?: AbortSignal): Promise<Response> {
    const doFetch = this.opts.fetch ?? fetch
    const headers: Record<string, string> = {}
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`
    const signals = [signal, this.opts.timeoutMs ? AbortSignal.timeout(this.opts.timeoutMs) : undefined].filter((s): s is AbortSignal => s !== undefined)
    try {
      return await doFetch(`${this.base}${path}`, { method, headers, body, signal: signals.length ? AbortSignal.any(signals) : undefined })
    } catch (err) {
      throw new ApiClientError(0, `cannot reach ${this.base}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`)
    }
  }

  private async request<T>(method: string, path: string, body?: FormData): Promise<T> {
    const res = await this.send(method, path, body)
    const text = await res.text()
    let data: unknown
    try {
      data = JSON.parse(text)
    } catch {
      data = undefined
    }
    if (!res.ok) {
      const message = (data as { message?: string } | undefined)?.message ?? `${res.status} ${res.statusText}`
      throw new ApiClientError(res.status, message)
    }
    return data as T
  }
}

async function errorMessage(res: Response): Promise<string> {
  const text = await res.text()
  try {
    return (JSON.parse(text) as { message?: string }).message ?? `${res.status} ${res.statusText}`
  } catch {
    return `${res.status} ${res.statusText}`
  }
}

function toForm(fields: Fields): FormData {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === false) continue
    form.append(k, v === true ? '1' : String(v))
  }
  return form
}
