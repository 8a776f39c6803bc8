// A small client of the analysis API, for `aviary submit`, the dispatcher and the UI (renderer/src/api/
// client.ts gives the page one per connection). It runs anywhere fetch, FormData and Blob exist
// (Node 20, browsers, Electron). Its paths are the routes' and its answers are typed with the
// routes' own response schemas (schemas.ts, responses.ts).
//
// The server may be hostile (a dispatcher's node runs malware, and may be the malware's; the UI
// reaches remote servers): every answer is read within the timeout (headers and body) and a size
// cap, and a 2xx answer must be JSON with what the caller reads in it. An answer that fails any of
// that is an ApiClientError of status 0, like an unreachable server, never a TypeError somewhere in
// the caller.
import { Type, type Static, type TSchema } from 'typebox'
import { Value } from 'typebox/value'
import type { ServiceStatus } from './schemas'
import { TaskSearchResult, type TaskSearchQuery } from './ui-schemas'
import { MachineList, SampleView, SubmitResult, TaskCreated, TaskDeleted, TaskList, TaskRebooted, TaskRereported, TaskRescheduled, TaskView, Timeline } from './responses'

/**
 * `status` is the HTTP status of a refusal (the server answered that it did not do it), or 0 when
 * there is no usable answer: unreachable, timed out, broken off, too large, not JSON, or JSON of
 * another shape. With 0 the server may have acted on the request all the same.
 */
export class ApiClientError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

export type Fields = Record<string, string | number | boolean | undefined>

/** What a JSON answer must hold: only what callers read, so other servers' extra fields pass. */
export class AnswerShape<T extends TSchema> {
  constructor(readonly schema: T) {}

  /** Null when `value` fits, else what is wrong, e.g. "/tasks must be object". */
  problem(value: unknown): string | null {
    // TypeBox's interpreter, not a compiled validator: compiling evaluates generated code, which
    // the UI's Content-Security-Policy refuses. These shapes are a few fields: fast either way.
    if (Value.Check(this.schema, value)) return null
    const first = Value.Errors(this.schema, value)[0]
    return first ? `${first.instancePath || 'the body'} ${first.message}` : 'does not fit'
  }
}

const shape = <T extends TSchema>(schema: T): AnswerShape<T> => new AnswerShape(schema)

/**
 * The check of an answer whose response schema is `full` (what Aviary sends): `checked` is the part
 * of it callers read, so another server's extra fields pass. The compiler holds `checked` to be
 * implied by `full`: every answer Aviary sends passes (and client.test.ts asks a real service).
 */
function reads<Full extends TSchema, Checked extends TSchema>(_full: Full, checked: Static<Full> extends Static<Checked> ? Checked : never): AnswerShape<Checked> {
  return shape(checked)
}

const Id = Type.Integer({ minimum: 1 })
const Status = Type.Object({ tasks: Type.Object({ pending: Type.Optional(Type.Integer({ minimum: 0 })) }) })

export const ANSWERS = {
  status: shape(Status),
  machines: reads(MachineList, Type.Object({ machines: Type.Array(Type.Object({ name: Type.String() })) })),
  task: reads(TaskView, Type.Object({ task: Type.Object({ id: Id }) })),
  tasks: reads(TaskList, Type.Object({ tasks: Type.Array(Type.Object({ id: Id, status: Type.String() })) })),
  sample: reads(SampleView, Type.Object({ sample: Type.Object({}) })),
  // null (or 0): Cuckoo's answer when its database refused the task, so none was made.
  created: reads(TaskCreated, Type.Object({ task_id: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]) })),
  // A null id: Cuckoo's, for a target its database refused.
  submitted: reads(SubmitResult, Type.Object({ submit_id: Type.Integer(), task_ids: Type.Array(Type.Union([Id, Type.Null()])), errors: Type.Array(Type.String()) })),
  deleted: reads(TaskDeleted, Type.Object({ status: Type.String() })),
  // Older Cuckoo servers answer these without the new task's id.
  rescheduled: reads(TaskRescheduled, Type.Object({ task_id: Type.Optional(Type.Integer()) })),
  rebooted: reads(TaskRebooted, Type.Object({ reboot_id: Type.Optional(Type.Integer()) })),
  rereported: reads(TaskRereported, Type.Object({ success: Type.Optional(Type.Boolean()) })),
  timeline: reads(Timeline, Type.Object({ timeline: Type.Array(Type.Object({})) })),
  // A `task` event of GET /events carries {"task": Task}, as /tasks/view does.
  taskEvent: reads(TaskView, Type.Object({ task: Type.Object({ id: Id, status: Type.String() }) })),
  searched: reads(TaskSearchResult, Type.Object({ tasks: Type.Array(Type.Object({ id: Id, status: Type.String() })), total: Type.Integer({ minimum: 0 }) }))
}

/** Options of one call: `signal` ends it early (an ApiClientError of status 0, like a timeout). */
export interface CallOptions {
  signal?: AbortSignal | undefined
}

/** Default cap of a JSON answer (a page of 500 listed tasks is well under 2 MB). */
export const DEFAULT_MAX_ANSWER_BYTES = 16 * 1024 * 1024

/** A few characters of what a server sent, quoted and escaped, for an error message. */
function excerpt(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)
}

/**
 * A complete 2xx answer's data, or the ApiClientError (status 0) that says what the server sent
 * instead. `where` names the server and request, e.g. "http://n:8090 POST /tasks/create/file".
 */
export function decodeAnswer<T extends TSchema>(where: string, status: number, text: string | null, answer: AnswerShape<T>, maxBytes: number): Static<T> {
  if (text === null) throw new ApiClientError(0, `${where}: answered ${status} with more than ${maxBytes} bytes`)
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch {
    throw new ApiClientError(0, `${where}: answered ${status} with a body that is not JSON: ${excerpt(text)}`)
  }
  const problem = answer.problem(data)
  if (problem !== null) throw new ApiClientError(0, `${where}: answered ${status} with JSON of another shape (${problem})`)
  return data as Static<T>
}

/** The `message` of a refusal's JSON body (every Aviary and Cuckoo error has one), if any. */
export function refusalMessage(status: number, statusText: string, text: string | null): string {
  try {
    const m = (JSON.parse(text ?? '') as { message?: unknown } | null)?.message
    if (typeof m === 'string') return m
  } catch {
    // not JSON: the status line says it
  }
  return `${status} ${statusText}`.trim()
}

export class AnalysisClient {
  private readonly base: string
  private readonly maxAnswer: number

  constructor(base: string, private readonly opts: { token?: string | undefined; fetch?: typeof fetch; timeoutMs?: number; maxAnswerBytes?: number } = {}) {
    this.base = base.replace(/\/+$/, '')
    this.maxAnswer = opts.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES
  }

  async createFile(file: Blob, filename: string, fields: Fields = {}, o: CallOptions = {}): Promise<TaskCreated> {
    const form = toForm(fields)
    form.append('file', file, filename)
    return createdTask(await this.request('POST', '/tasks/create/file', ANSWERS.created, form, o))
  }

  async createUrl(url: string, fields: Fields = {}, o: CallOptions = {}): Promise<TaskCreated> {
    const form = toForm({ ...fields, url })
    return createdTask(await this.request('POST', '/tasks/create/url', ANSWERS.created, form, o))
  }

  /** Files, and URLs or hashes of stored samples; a null id is a target the server made no task of (Cuckoo). */
  submit(files: { blob: Blob; name: string }[], strings: string[], fields: Fields = {}, o: CallOptions = {}): Promise<Omit<SubmitResult, 'task_ids'> & { task_ids: Array<number | null> }> {
    const form = toForm(fields)
    if (strings.length) form.append('strings', strings.join('\n'))
    for (const f of files) form.append('files', f.blob, f.name)
    return this.request('POST', '/tasks/create/submit', ANSWERS.submitted, form, o)
  }

  /** The full status as Aviary sends it; of another server only `tasks` is checked. */
  async status(o: CallOptions = {}): Promise<ServiceStatus> {
    return (await this.request('GET', '/cuckoo/status', ANSWERS.status, undefined, o)) as ServiceStatus
  }

  /** The node's analysis machines (the dispatcher reads them when a node registers or refreshes). */
  async machines(o: CallOptions = {}): Promise<MachineList> {
    return (await this.request('GET', '/machines/list', ANSWERS.machines, undefined, o)) as MachineList
  }

  async task(id: number, o: CallOptions = {}): Promise<TaskView> {
    return (await this.request('GET', `/tasks/view/${id}`, ANSWERS.task, undefined, o)) as TaskView
  }

  /** `/tasks/list[/<limit>[/<offset>]][?status=]`: unfinished tasks first by id, then finished ones by completion. */
  async tasks(limit?: number, offset?: number, o: CallOptions & { status?: string | undefined } = {}): Promise<TaskList> {
    const path = limit === undefined ? '/tasks/list' : offset === undefined ? `/tasks/list/${limit}` : `/tasks/list/${limit}/${offset}`
    const query = o.status === undefined ? '' : `?status=${encodeURIComponent(o.status)}`
    return (await this.request('GET', `${path}${query}`, ANSWERS.tasks, undefined, o)) as TaskList
  }

  /** `/tasks/sample/<sample id>`: every task of a sample, whatever its status (Cuckoo 2.0.6+). */
  async tasksOfSample(sampleId: number, o: CallOptions = {}): Promise<TaskList> {
    return (await this.request('GET', `/tasks/sample/${sampleId}`, ANSWERS.tasks, undefined, o)) as TaskList
  }

  async sample(sha256: string, o: CallOptions = {}): Promise<SampleView> {
    return (await this.request('GET', `/files/view/sha256/${sha256}`, ANSWERS.sample, undefined, o)) as SampleView
  }

  async sampleById(id: number, o: CallOptions = {}): Promise<SampleView> {
    return (await this.request('GET', `/files/view/id/${id}`, ANSWERS.sample, undefined, o)) as SampleView
  }

  /**
   * Tasks in one status (`/tasks/list/<limit>[/<offset>]?status=`), as the dispatcher polls them.
   * Each has an `id` and a `status`; other fields are as the server sent them.
   */
  tasksWithStatus(status: string, limit: number, offset = 0, o: CallOptions = {}): Promise<TaskList> {
    return this.tasks(limit, offset, { ...o, status })
  }

  /** Removes a task and its results from the server (refused with 500 while it runs). */
  deleteTask(id: number, o: CallOptions = {}): Promise<TaskDeleted> {
    return this.request('GET', `/tasks/delete/${id}`, ANSWERS.deleted, undefined, o)
  }

  /** A pending copy of the task (the old one becomes recovered); `task_id` is the copy's, where the server says it. */
  reschedule(id: number, o: CallOptions = {}): Promise<Partial<TaskRescheduled>> {
    return this.request('GET', `/tasks/reschedule/${id}`, ANSWERS.rescheduled, undefined, o)
  }

  /** A new task that runs the same file after a guest reboot; `reboot_id` is its id, where the server says it. */
  reboot(id: number, o: CallOptions = {}): Promise<Partial<TaskRebooted>> {
    return this.request('GET', `/tasks/reboot/${id}`, ANSWERS.rebooted, undefined, o)
  }

  /** Processing and reporting again; `success` false when the task was not reported. */
  rereport(id: number, o: CallOptions = {}): Promise<Partial<TaskRereported>> {
    return this.request('GET', `/tasks/rereport/${id}`, ANSWERS.rereported, undefined, o)
  }

  /**
   * Aviary's task search (GET /aviary/tasks: statuses, categories, terms, sort, page) with the count
   * of all that match; a Cuckoo server has none (ApiClientError 404).
   */
  async searchTasks(query: TaskSearchQuery, o: CallOptions = {}): Promise<TaskSearchResult> {
    const params = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]): [string, string] => [k, String(v)]))
    const q = params.size ? `?${params}` : ''
    return (await this.request('GET', `/aviary/tasks${q}`, ANSWERS.searched, undefined, o)) as TaskSearchResult
  }

  /** Every stage of the task with its time; entries are as the server sent them. */
  async timeline(id: number, o: CallOptions = {}): Promise<Timeline> {
    return (await this.request('GET', `/tasks/timeline/${id}`, ANSWERS.timeline, undefined, o)) as Timeline
  }

  /**
   * A report (`format` as /tasks/report/<id>/<format> takes it) or, with format null, the pcap:
   * the open response, to stream wherever the caller wants (opts.timeoutMs still bounds reading
   * it; the caller caps its size); null when the server has none (404).
   */
  async download(id: number, format: string | null, signal?: AbortSignal): Promise<Response | null> {
    const p = format === null ? `/pcap/get/${id}` : `/tasks/report/${id}/${encodeURIComponent(format)}`
    const deadline = this.deadline()
    const res = await this.send('GET', p, undefined, deadline, signal)
    if (res.status === 404) {
      await res.body?.cancel()
      return null
    }
    if (!res.ok) throw new ApiClientError(res.status, refusalMessage(res.status, res.statusText, await this.read('GET', p, res, deadline)))
    return res
  }

  private deadline(): AbortSignal | undefined {
    return this.opts.timeoutMs ? AbortSignal.timeout(this.opts.timeoutMs) : undefined
  }

  /** The fetch itself, until the headers; a connection failure or a timeout is status 0. */
  private async send(method: string, path: string, body: FormData | undefined, deadline: AbortSignal | undefined, signal?: AbortSignal): Promise<Response> {
    const doFetch = this.opts.fetch ?? fetch
    const headers: Record<string, string> = {}
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`
    const signals = [signal, deadline].filter((s): s is AbortSignal => s !== undefined)
    try {
      return await doFetch(`${this.base}${path}`, { method, headers, body, signal: signals.length ? AbortSignal.any(signals) : undefined })
    } catch (err) {
      if (signal?.aborted) throw signal.reason // the caller's own cancel, as fetch reports it
      if (deadline?.aborted) throw this.timedOut(method, path)
      const e = err as Error
      throw new ApiClientError(0, `cannot reach ${this.base}: ${e.cause instanceof Error ? e.cause.message : e.message}`)
    }
  }

  /** The whole body as text, null past the size cap; a broken or late body is status 0. */
  private async read(method: string, path: string, res: Response, deadline: AbortSignal | undefined, signal?: AbortSignal): Promise<string | null> {
    const reader = res.body?.getReader()
    if (!reader) return ''
    const decoder = new TextDecoder()
    let text = ''
    let size = 0
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return text + decoder.decode()
        size += value.byteLength
        if (size > this.maxAnswer) {
          await reader.cancel().catch(() => undefined)
          return null
        }
        text += decoder.decode(value, { stream: true })
      }
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      if (deadline?.aborted) throw this.timedOut(method, path)
      throw new ApiClientError(0, `${this.base} ${method} ${path}: the answer broke off (${(err as Error).message})`)
    }
  }

  private timedOut(method: string, path: string): ApiClientError {
    return new ApiClientError(0, `${this.base} ${method} ${path}: no complete answer within ${this.opts.timeoutMs} ms`)
  }

  private async request<T extends TSchema>(method: string, path: string, answer: AnswerShape<T>, body?: FormData, o: CallOptions = {}): Promise<Static<T>> {
    const deadline = this.deadline()
    const res = await this.send(method, path, body, deadline, o.signal)
    const text = await this.read(method, path, res, deadline, o.signal)
    if (!res.ok) throw new ApiClientError(res.status, refusalMessage(res.status, res.statusText, text))
    return decodeAnswer(`${this.base} ${method} ${path}`, res.status, text, answer, this.maxAnswer)
  }
}

/** A create route's answer that says no task was made (Cuckoo's `task_id: null`): a refusal the caller may retry. */
export class NoTaskMadeError extends ApiClientError {}

/** A created task's id; a null or 0 id (no task was made) is a NoTaskMadeError. */
export function createdTask(answer: { task_id: number | null }): { task_id: number } {
  if (!answer.task_id) throw new NoTaskMadeError(502, `the server answered task_id ${answer.task_id}: it created no task`)
  return { task_id: answer.task_id }
}

function toForm(fields: Fields): FormData {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === false) continue
    form.append(k, v === true ? '1' : String(v))
  }
  return form
}
