// Tasks: submit (a file streamed to the samples directory, or a URL), list, view, delete one or
// many. Fields are stored as given and forwarded to the node by the worker.
import type { FastifyInstance } from 'fastify'
import type { DistTaskRow, DistTaskStatus } from '../store/types'
import type { DispatcherService } from './dispatcher.service'
import { addRoute, answer } from './generations'
import { badRequest, pathId, DistError } from './errors'
import { uploadOf } from './uploads'
import { fieldsAsSent } from '../../shared/api/task-fields'
import { MARKER_OPTION, setsMarker } from '../worker/marker'
import { AnyBody, BulkDeleteBody, Ok, SubmitTaskBody, TaskIdParams, TaskListQuery, errors, truthy } from './schemas'

export function tasksRoutes(app: FastifyInstance, svc: DispatcherService): void {
  const both = ['older', 'newer'] as const
  const tags = ['tasks']

  addRoute(app, {
    method: 'GET', url: '/task', generations: [...both],
    schema: { tags, summary: 'List tasks (by id); offset, limit, finished, status, owner', querystring: TaskListQuery, response: { 200: AnyBody, ...errors } },
    handler: async (request, _reply, newer) => {
      const q = request.query as TaskListQuery
      if (q.finished !== undefined && q.status !== undefined) {
        throw badRequest('finished', 'do not combine finished and status (finished is deprecated; use status)')
      }
      const tasks = await svc.store.listTasks({
        ...(q.offset !== undefined ? { offset: Number(q.offset) } : {}),
        ...(q.limit !== undefined ? { limit: Number(q.limit) } : {}),
        ...(q.finished !== undefined ? { finished: truthy(q.finished) } : {}),
        ...(q.status !== undefined ? { status: q.status as DistTaskStatus } : {}),
        ...(q.owner !== undefined ? { owner: q.owner } : {})
      })
      return answer(newer, { tasks: Object.fromEntries(tasks.map((t) => [String(t.id), taskView(t)])) })
    }
  })

  addRoute(app, {
    method: 'POST', url: '/task', generations: [...both],
    schema: {
      tags,
      summary: 'Submit a sample (multipart `file`) or, as an Aviary extension, a URL (`url`); `node` assigns it to that node',
      consumes: ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'],
      body: SubmitTaskBody, response: { 200: AnyBody, ...errors, 413: errors[400] }
    },
    handler: async (request, _reply, newer) => {
      const { file, url, node, ...f } = (request.body ?? {}) as SubmitTaskBody
      const upload = uploadOf(file, 'file')
      if (upload && url !== undefined) throw badRequest('url', 'send either a file or a url, not both')
      if (!upload && url === undefined) throw badRequest('file', 'required; a file part of a multipart/form-data body (or a `url` field)')
      if (upload && upload.size === 0) throw badRequest('file', 'the file is empty')
      if (setsMarker(f.options ?? null)) {
        throw badRequest('options', `${MARKER_OPTION} is set by the dispatcher (its mark on the node's copy of the task); leave it out`)
      }
      const fields = fieldsAsSent(f)
      const id = await svc.createTask(upload
        ? { ...fields, category: 'file', path: upload.path, filename: upload.filename, url: null }
        : { ...fields, category: 'url', path: null, filename: null, url: targetUrl(url!) }, node)
      if (upload) upload.kept = true
      return answer(newer, { task_id: id })
    }
  })

  addRoute(app, {
    method: 'GET', url: '/task/:id', generations: [...both],
    schema: { tags, summary: 'One task, in `tasks` keyed by its id', params: TaskIdParams, response: { 200: AnyBody, ...errors } },
    handler: async (request, _reply, newer) => {
      const task = await svc.taskOr404(pathId((request.params as { id: string }).id, request))
      // Cuckoo 1.2's single view carried the dispatcher's own id as task_id.
      const view = newer ? taskView(task) : { ...taskView(task), task_id: task.id }
      return answer(newer, { tasks: { [String(task.id)]: view } })
    }
  })

  addRoute(app, {
    method: 'DELETE', url: '/task/:id', generations: [...both],
    schema: { tags, summary: 'Delete a task: its sample, reports and pcap are removed', params: TaskIdParams, response: { 200: Ok, ...errors } },
    handler: async (request, _reply, newer) => {
      const result = await svc.deleteTask(pathId((request.params as { id: string }).id, request))
      if (result === null || (result === 'already' && !newer)) throw new DistError(404, 'Task not found')
      if (result === 'already') return { success: false, message: 'Task already deleted' }
      return answer(newer, {}, null)
    }
  })

  addRoute(app, {
    method: 'DELETE', url: '/tasks', generations: ['newer'],
    schema: {
      tags, summary: 'Delete several tasks (`task_ids`: ids separated by spaces); unknown ids are skipped',
      consumes: ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'],
      body: BulkDeleteBody, response: { 200: AnyBody, ...errors }
    },
    handler: async (request, _reply, newer) => {
      const ids = (request.body as { task_ids: string }).task_ids.trim().split(/\s+/).map(Number)
      const deleted: number[] = []
      for (const id of ids) if ((await svc.deleteTask(id)) === 'deleted') deleted.push(id)
      return answer(newer, { deleted })
    }
  })
}

/** A task in both list and single form: Cuckoo's fields plus id, node_id, status and finished. */
export function taskView(t: DistTaskRow) {
  return {
    id: t.id,
    task_id: t.node_task_id,
    node_id: t.node_id,
    status: t.status,
    finished: t.status === 'finished',
    category: t.category,
    path: t.path,
    filename: t.filename,
    url: t.url,
    package: t.package,
    timeout: t.timeout,
    priority: t.priority,
    options: t.options,
    machine: t.machine,
    platform: t.platform,
    tags: t.tags,
    custom: t.custom,
    owner: t.owner ?? '',
    memory: t.memory,
    clock: t.clock,
    enforce_timeout: t.enforce_timeout,
    submitted: t.submitted,
    delegated: t.delegated,
    started: t.started,
    completed: t.completed
  }
}

function targetUrl(raw: string): string {
  const text = /^[a-z][a-z0-9+.-]*:/i.test(raw) ? raw : `http://${raw}`
  try {
    const u = new URL(text)
    if (u.protocol === 'http:' || u.protocol === 'https:') return text
  } catch {
    // falls through to the 400
  }
  throw badRequest('url', 'an http or https URL (without a scheme, http:// is assumed)')
}
