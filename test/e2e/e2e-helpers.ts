// What the end-to-end tests do as API clients: submit a file, wait for a task's state, read its
// timeline. Plain HTTP against a running service (in-process harness or a spawned `aviary serve`).
import { setTimeout as sleep } from 'node:timers/promises'

interface Client {
  url: string
  /** Sent with every call (a service with an API token: its Authorization header). */
  headers?: Record<string, string>
}

export async function submitFile(h: Client, name: string, content: string | Buffer, fields: Record<string, string> = {}): Promise<number> {
  const form = new FormData()
  form.set('file', new Blob([content]), name)
  for (const [k, v] of Object.entries(fields)) form.set(k, v)
  const res = await fetch(`${h.url}/tasks/create/file`, { method: 'POST', body: form, headers: h.headers ?? {} })
  const body = await res.json() as { task_id?: number; message?: string }
  if (res.status !== 200 || typeof body.task_id !== 'number') throw new Error(`submit ${name}: ${res.status} ${JSON.stringify(body)}`)
  return body.task_id
}

/** Polls the task until it reaches one of `states`; returns the state, or throws with the timeline. */
export async function waitForTask(h: Client, id: number, states: string[], timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await fetch(`${h.url}/tasks/view/${id}`, { headers: h.headers ?? {} }).catch(() => null)
    if (res?.ok) {
      const { task } = await res.json() as { task: { status: string } }
      if (states.includes(task.status)) return task.status
    }
    if (Date.now() > deadline) {
      const timeline = await fetch(`${h.url}/tasks/timeline/${id}`, { headers: h.headers ?? {} }).then((r) => r.text(), () => '(no timeline)')
      throw new Error(`task ${id} did not reach ${states.join('/')} within ${timeoutMs} ms; timeline: ${timeline}`)
    }
    await sleep(200)
  }
}

export async function stages(h: Client, id: number): Promise<string[]> {
  const res = await fetch(`${h.url}/tasks/timeline/${id}`, { headers: h.headers ?? {} })
  const body = await res.json() as { timeline: { stage: string }[] }
  return body.timeline.map((e) => e.stage)
}
