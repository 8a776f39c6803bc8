// What the API does to tasks besides creating them: read, list, delete, reschedule, reboot and
// rereport, with the semantics of Cuckoo 2 (Cuckoo 2.0.7's cuckoo/apps/api.py; docs/api.md).
import { rm, stat } from 'node:fs/promises'
import { ApiError, badRequest, taskNotFound } from '../errors'
import { ErrorCodes } from '../../shared/errors'
import { TASK_STATUSES, type TaskStatus } from '../../shared/api/schemas'
import { formatDatetime } from '../../shared/time'
import type { TasksRepository, TaskRow, NewTask } from '../db/tasks.repository'
import type { StorageLayout } from '../storage/layout'
import { IllegalTransition } from '../db/transitions'

export interface ListQuery {
  limit?: number | undefined
  offset?: number | undefined
  status?: string | undefined
  owner?: string | undefined
  completed_after?: number | undefined
}

export class TasksService {
  constructor(
    private readonly tasks: TasksRepository,
    private readonly layout: StorageLayout
  ) {}

  /** The /tasks/view body, serialized (see task_json in the migrations). */
  viewBody(id: number): string {
    const body = this.tasks.viewBody(id)
    if (body === undefined) throw taskNotFound()
    return body
  }

  /** The /tasks/list body, serialized, tasks in list order. */
  listBody(q: ListQuery, sampleId?: number): Buffer {
    if (q.status !== undefined && !(TASK_STATUSES as readonly string[]).includes(q.status)) {
      throw badRequest('status', `'${q.status}' is not a task status; one of ${TASK_STATUSES.join(', ')}`)
    }
    return this.tasks.listBody({
      limit: q.limit,
      offset: q.offset,
      status: q.status,
      owner: q.owner,
      completedAfter: q.completed_after === undefined ? undefined : formatDatetime(new Date(q.completed_after * 1000)),
      sampleId
    })
  }

  /**
   * Deletes the task and its analysis folder; a running task is refused (500, as specified). A
   * task being processed is deleted when its processing ends: the request waits for it, since
   * Cuckoo's clients expect 200, 404 or 500 from a delete and nothing else. Once the row is gone the
   * processor cannot start on the task, so nothing writes into the folder after it is removed.
   */
  async delete(id: number): Promise<void> {
    for (;;) {
      const outcome = this.tasks.deleteUnlessBusy(id)
      if (outcome === 'deleted') break
      if (outcome === 'missing') throw taskNotFound()
      if (outcome === 'running') {
        throw new ApiError(500, 'The task is currently being processed, cannot delete', ErrorCodes.TASK_RUNNING)
      }
      // Processing: try again once it has ended (a second delete may have won meanwhile: 404).
      await this.tasks.processed(id)
    }
    await rm(this.layout.analysis(id), { recursive: true, force: true, maxRetries: 3 }).catch((err: NodeJS.ErrnoException) => {
      // The cause's code only: its message names a server path.
      const why = err.code ?? 'error'
      throw new ApiError(500, `The task was deleted, but its analysis folder could not be removed (${why})`, ErrorCodes.INTERNAL)
    })
  }

  /**
   * The old task becomes `recovered`; a pending copy is queued. Returns the new id. Each call makes
   * a copy, a task rescheduled already included (Cuckoo 2.0.7 does; Rapid7's plugin reschedules the
   * same task twice). Refused (409) when the task's status cannot become `recovered` (transition
   * table): a running task, whose run still writes into its folder.
   */
  reschedule(id: number, priority: number | undefined): number {
    const row = this.tasks.get(id)
    const missing = () => new ApiError(404, 'There is no analysis with the specified ID', ErrorCodes.TASK_NOT_FOUND)
    if (!row) throw missing()
    const copy = copyOf(row)
    if (priority) copy.priority = priority
    let newId: number | undefined
    try {
      newId = this.tasks.reschedule(id, copy)
    } catch (err) {
      if (!(err instanceof IllegalTransition)) throw err
      const why = RESCHEDULE_REFUSED[err.from] ?? `it is ${err.from}`
      throw new ApiError(409, `id: task ${id} cannot be rescheduled: ${why} (${err.message})`, ErrorCodes.TASK_STATE)
    }
    if (newId === undefined) throw missing()
    return newId
  }

  /** A new task that analyzes the same file again after a reboot of the guest. */
  async reboot(id: number): Promise<number> {
    const row = this.tasks.get(id)
    const usable = row && row.category !== 'url' && (await fileExists(row.target))
    if (!row || !usable) throw new ApiError(404, 'Error creating reboot task', ErrorCodes.TASK_NOT_FOUND)
    return this.tasks.insert({
      category: 'file',
      target: row.target,
      sample_id: row.sample_id,
      package: 'reboot',
      timeout: 0,
      priority: 1,
      options: null,
      machine: null,
      platform: null,
      tags: [],
      custom: String(row.id),
      owner: '',
      memory: false,
      enforce_timeout: false,
      clock: null,
      submit_id: null,
      errors: []
    })
  }

  rereport(id: number): boolean {
    if (!this.tasks.get(id)) throw taskNotFound()
    return this.tasks.rereport(id)
  }

  exists(id: number): boolean {
    return this.tasks.get(id) !== undefined
  }
}

/** Why a status cannot be rescheduled, in the client's terms. */
const RESCHEDULE_REFUSED: Partial<Record<TaskStatus, string>> = {
  running: 'its analysis is running; reschedule it when the analysis has ended'
}

/**
 * What a reschedule copies: Cuckoo 2.0.7's list (target, timeout, package, options, priority,
 * custom, owner, machine, platform, tags, memory, enforce_timeout, clock), plus the category and
 * sample. The clock only when it was asked for: a task's clock is its submission time otherwise,
 * and a copy would set the guest's clock back to it (the run sets now for a clock not asked).
 */
function copyOf(r: TaskRow): NewTask {
  return {
    category: r.category as NewTask['category'],
    target: r.target,
    sample_id: r.sample_id,
    package: r.package,
    timeout: r.timeout,
    priority: r.priority,
    options: r.options,
    machine: r.machine,
    platform: r.platform,
    tags: JSON.parse(r.tags) as string[],
    custom: r.custom,
    owner: r.owner,
    memory: r.memory === 1,
    enforce_timeout: r.enforce_timeout === 1,
    clock: r.clock === r.added_on ? null : r.clock,
    submit_id: null,
    errors: []
  }
}

async function fileExists(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile()
  } catch {
    return false
  }
}
