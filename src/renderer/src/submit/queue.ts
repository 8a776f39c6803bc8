// The submission queue: files waiting, uploading (with progress) or done (with their task and
// hashes), URLs and hashes sent. A store outside the page, so uploads carry on and their state is
// still there when the analyst looks at another page meanwhile.
import { create } from 'zustand'
import type { Sample } from '../../../shared/api/schemas'
import { fetchJson, type ConnectionId } from '../api/http'
import { clientOf } from '../api/client'
import { ANSWERS, createdTask } from '../../../shared/api/client'
import type { PickedFile } from './collect'
import { toFields, toForm, parseTargets, type SubmitOptions } from './options'
import { uploadFile } from './upload'

export type ItemState = 'queued' | 'uploading' | 'hashing' | 'done' | 'error' | 'cancelled'

export interface QueueItem {
  key: number
  kind: 'file' | 'url' | 'hash'
  name: string
  file?: File
  size?: number
  state: ItemState
  loaded: number
  total: number
  connection?: ConnectionId
  taskId?: number
  md5?: string
  sha256?: string
  error?: string
}

const UPLOADS_AT_ONCE = 2
let nextKey = 1
const aborts = new Map<number, () => void>()

interface Queue {
  items: QueueItem[]
  add(files: PickedFile[]): void
  remove(key: number): void
  cancel(key: number): void
  clearFinished(): void
  /**
   * Uploads the queued files and sends the pasted URLs and hashes, all with the same options. To a
   * dispatcher (`dispatcher`), files and URLs go to its /api/task; it knows no hashes of samples.
   */
  submit(connection: ConnectionId, options: SubmitOptions, targets: string, dispatcher?: boolean): Promise<void>
}

export const useQueue = create<Queue>()((set, get) => {
  const patch = (key: number, p: Partial<QueueItem>) => set((s) => ({ items: s.items.map((i) => (i.key === key ? { ...i, ...p } : i)) }))

  /** The created task's sample hashes (the task embeds its sample; older servers need /files/view). */
  async function hashes(c: ConnectionId, taskId: number): Promise<Pick<QueueItem, 'md5' | 'sha256'>> {
    const client = await clientOf(c)
    const { task } = await client.task(taskId)
    let sample = task.sample as Partial<Sample>
    if (!sample.sha256 && task.sample_id) sample = (await client.sampleById(task.sample_id)).sample
    return { md5: sample.md5, sha256: sample.sha256 }
  }

  async function finish(c: ConnectionId, key: number, taskId: number, withHashes: boolean): Promise<void> {
    if (!withHashes) return patch(key, { state: 'done', taskId })
    patch(key, { state: 'hashing', taskId })
    try {
      patch(key, { state: 'done', ...(await hashes(c, taskId)) })
    } catch (err) {
      patch(key, { state: 'done', error: `task created; its hashes cannot be read: ${(err as Error).message}` })
    }
  }

  async function uploadOne(c: ConnectionId, item: QueueItem, fields: Record<string, string>, dispatcher: boolean): Promise<void> {
    if (!item.file) return
    patch(item.key, { state: 'uploading', connection: c, loaded: 0, total: item.file.size })
    const handle = uploadFile(c, item.file, item.file.name, fields, (loaded, total) => patch(item.key, { loaded, total }), dispatcher ? '/api/task' : '/tasks/create/file')
    aborts.set(item.key, handle.abort)
    try {
      const { task_id } = await handle.done
      patch(item.key, { loaded: item.file.size })
      // A dispatcher's task has no sample view to read hashes from.
      await finish(c, item.key, task_id, !dispatcher)
    } catch (err) {
      const cancelled = (err as Error).message === 'cancelled'
      patch(item.key, { state: cancelled ? 'cancelled' : 'error', error: cancelled ? undefined : (err as Error).message })
    } finally {
      aborts.delete(item.key)
    }
  }

  /** A URL or a hash to a dispatcher (its own route and answer), or to an analysis service through the shared client. */
  async function sendTarget(c: ConnectionId, key: number, target: { kind: 'url' | 'hash'; name: string }, fields: Record<string, string>, dispatcher: boolean): Promise<void> {
    try {
      let id: number | null | undefined
      let errors: string[] = []
      if (dispatcher) {
        // The dispatcher's POST /api/task (docs/dispatcher.md): not a route of the analysis API, but
        // its answer carries task_id as a create route's does, and is checked the same way.
        const answer = await fetchJson(c, '/api/task', ANSWERS.created.schema, { method: 'POST', body: toForm({ ...fields, url: target.name }) })
        id = createdTask(answer).task_id
      } else if (target.kind === 'url') {
        id = (await (await clientOf(c)).createUrl(target.name, fields)).task_id
      } else {
        const answer = await (await clientOf(c)).submit([], [target.name], fields)
        id = answer.task_ids[0]
        errors = answer.errors ?? []
      }
      if (id === undefined || id === null) return patch(key, { state: 'error', error: errors.join('; ') || 'no task was created' })
      await finish(c, key, id, !dispatcher && target.kind === 'hash')
    } catch (err) {
      patch(key, { state: 'error', error: (err as Error).message })
    }
  }

  return {
    items: [],
    add: (files) => set((s) => ({
      items: [...s.items, ...files.map((f): QueueItem => ({ key: nextKey++, kind: 'file', name: f.path, file: f.file, size: f.file.size, state: 'queued', loaded: 0, total: f.file.size }))]
    })),
    remove: (key) => set((s) => ({ items: s.items.filter((i) => i.key !== key || i.state === 'uploading') })),
    cancel: (key) => aborts.get(key)?.(),
    clearFinished: () => set((s) => ({ items: s.items.filter((i) => i.state === 'queued' || i.state === 'uploading' || i.state === 'hashing') })),
    async submit(c, options, targets, dispatcher = false) {
      const { urls, hashes: sums } = parseTargets(targets)
      const sent = [...urls.map((u) => ({ kind: 'url' as const, name: u })), ...sums.map((h) => ({ kind: 'hash' as const, name: h }))]
        .map((t): QueueItem => ({ key: nextKey++, ...t, state: 'uploading', loaded: 0, total: 0, connection: c }))
      set((s) => ({ items: [...s.items, ...sent] }))
      const files = get().items.filter((i) => i.state === 'queued')
      const work: Promise<void>[] = []
      // Targets: one request each, so each gets its own task link or its own error.
      work.push((async () => {
        for (const t of sent) {
          if (dispatcher && t.kind === 'hash') {
            patch(t.key, { state: 'error', error: 'a dispatcher takes files and URLs: it keeps no samples to analyse again by hash' })
            continue
          }
          await sendTarget(c, t.key, { kind: t.kind === 'url' ? 'url' : 'hash', name: t.name }, toFields(options, dispatcher || t.kind === 'url' ? 'url' : 'submit'), dispatcher)
        }
      })())
      // Files: a few uploads at once (more only splits the same bandwidth and delays the first task).
      const fields = toFields(options, 'file')
      let at = 0
      for (let n = 0; n < Math.min(UPLOADS_AT_ONCE, files.length); n++) {
        work.push((async () => {
          while (at < files.length) await uploadOne(c, files[at++] as QueueItem, fields, dispatcher)
        })())
      }
      await Promise.all(work)
    }
  }
})
