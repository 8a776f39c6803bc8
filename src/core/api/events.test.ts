// The live API over a real socket: a task's timeline, and the server-sent event stream a client
// (the UI) follows instead of polling, including changes made by other routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, form, type Harness } from '../../../test/service-harness'

let h: Harness

beforeAll(async () => {
  h = await startHarness({ apiToken: 'tok' })
})
afterAll(async () => h.stop())

const auth = { authorization: 'Bearer tok' }

/** Reads server-sent events until `until` says enough (or the time runs out). */
async function collect(path: string, until: (events: { event: string; data: unknown }[]) => boolean, act: () => Promise<void>) {
  const ctl = new AbortController()
  const res = await fetch(h.url + path, { headers: auth, signal: ctl.signal })
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
  const reader = res.body!.getReader()
  const events: { event: string; data: unknown }[] = []
  let buf = ''
  const done = (async () => {
    const decoder = new TextDecoder()
    while (!until(events)) {
      const { value, done } = await reader.read()
      if (done) break
      buf += decoder.decode(value, { stream: true })
      let i
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i)
        buf = buf.slice(i + 2)
        const event = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (event && data) events.push({ event, data: JSON.parse(data) })
      }
    }
  })()
  await new Promise((r) => setTimeout(r, 50)) // subscribed before acting
  await act()
  await Promise.race([done, new Promise((r) => setTimeout(r, 5000))])
  ctl.abort()
  return events
}

describe('timeline and events', () => {
  it('serves a task\'s timeline, and 404 for a task that does not exist', async () => {
    const { body } = await h.post('/tasks/create/url', form({ url: 'http://example.com/a' }), auth)
    const id = body.task_id as number
    const t = await h.json<{ timeline: { stage: string; at: string; time: number; message: string | null }[] }>(`/tasks/timeline/${id}`, auth)
    expect(t.status).toBe(200)
    expect(t.body.timeline).toHaveLength(1)
    expect(t.body.timeline[0]).toMatchObject({ stage: 'queued', message: null })
    expect(t.body.timeline[0]!.at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
    expect(Math.abs(t.body.timeline[0]!.time - Date.now())).toBeLessThan(60_000)
    expect((await h.json('/tasks/timeline/999999', auth)).status).toBe(404)
    expect((await h.json('/v1/tasks/timeline/1', auth)).status).toBe(200)
    expect((await h.get('/tasks/timeline/1')).status).toBe(401)
  })

  it('streams task changes made through any route, and stage entries', async () => {
    let id = 0
    const events = await collect('/events', (ev) => ev.some((e) => e.event === 'task_deleted'), async () => {
      const { body } = await h.post('/tasks/create/url', form({ url: 'http://example.com/b' }), auth)
      id = body.task_id as number
      await new Promise((r) => setTimeout(r, 50))
      expect((await h.json(`/tasks/delete/${id}`, auth)).status).toBe(200)
    })
    const created = events.find((e) => e.event === 'task') as { data: { task: { id: number; status: string; target: string } } }
    expect(created.data.task).toMatchObject({ id, status: 'pending', target: 'http://example.com/b' })
    expect(events.find((e) => e.event === 'stage')?.data).toMatchObject({ task_id: id, stage: 'queued' })
    expect(events.find((e) => e.event === 'task_deleted')?.data).toEqual({ id })
  })

  it('follows one task with ?task=', async () => {
    const other = (await h.post('/tasks/create/url', form({ url: 'http://example.com/c' }), auth)).body.task_id as number
    const mine = (await h.post('/tasks/create/url', form({ url: 'http://example.com/d' }), auth)).body.task_id as number
    const events = await collect(`/events?task=${mine}`, (ev) => ev.some((e) => e.event === 'task'), async () => {
      await h.json(`/tasks/reschedule/${other}`, auth)
      await h.json(`/tasks/reschedule/${mine}`, auth)
    })
    const tasks = events.filter((e) => e.event === 'task').map((e) => (e.data as { task: { id: number; status: string } }).task)
    expect(tasks.every((t) => t.id === mine)).toBe(true)
    expect(tasks[0]).toMatchObject({ id: mine, status: 'recovered' })
  })

  it('refuses a bad filter with a 400 naming the field', async () => {
    const r = await h.json<{ message: string }>('/events?task=abc', auth)
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(/task/)
  })
})
