// A small client of the analysis API, for `aviary submit`, the UI and the dispatcher. It runs
// anywhere fetch, FormData and Blob exist (Node 20, browsers, Electron).
import type { Sample, ServiceStatus, Task } from './schemas'

export class ApiClientError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

export type Fields = Record<string, string | number | boolean | undefined>

export class AnalysisClient {
  private readonly base: string

  constructor(base: string, private readonly opts: { token?: string | undefined; fetch?: typeof fetch } = {}) {
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

  private async request<T>(method: string, path: string, body?: FormData): Promise<T> {
    const doFetch = this.opts.fetch ?? fetch
    const headers: Record<string, string> = {}
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`
    let res: Response
    try {
      res = await doFetch(`${this.base}${path}`, { method, headers, body })
    } catch (err) {
      throw new ApiClientError(0, `cannot reach ${this.base}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`)
    }
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

function toForm(fields: Fields): FormData {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === false) continue
    form.append(k, v === true ? '1' : String(v))
  }
  return form
}
