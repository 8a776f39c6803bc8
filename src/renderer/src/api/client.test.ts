// The page's client over a real socket: a server that answers what no Aviary or Cuckoo server
// would is an error the page can show, a refusal keeps its status, a 401 reaches the sign-in.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientOf } from './client'
import { HttpError, onUnauthorized, setLocalApiBase } from './http'

let server: Server
const seen: string[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.accept}`)
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    if (req.url === '/tasks/view/1') return json(200, { task: { id: 1, status: 'reported', target: 'x' } })
    if (req.url === '/tasks/view/2') return json(200, { task: { id: 'two' } })
    if (req.url === '/tasks/list/5/10?status=reported') return json(200, { tasks: [{ id: 11, status: 'reported' }] })
    if (req.url === '/tasks/timeline/3') return res.writeHead(200).end('<html>not json</html>')
    if (req.url === '/tasks/delete/4') return json(500, { message: 'The task is running' })
    if (req.url === '/aviary/connections/7/proxy/tasks/view/1') return json(200, { task: { id: 1 } })
    return json(401, { message: 'Authentication required' })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  setLocalApiBase(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('the page\'s client', () => {
  it('calls the routes by their paths, asking for JSON, and returns their answers', async () => {
    const client = await clientOf(null)
    expect((await client.task(1)).task).toMatchObject({ id: 1, status: 'reported' })
    expect((await client.tasks(5, 10, { status: 'reported' })).tasks).toEqual([{ id: 11, status: 'reported' }])
    expect(seen).toContain('GET /tasks/view/1 application/json')
    // A saved connection is reached through the local service's proxy.
    expect((await (await clientOf(7)).task(1)).task.id).toBe(1)
  })

  it('turns an answer of another shape, or not JSON, into an error of status 0 naming what was wrong', async () => {
    const client = await clientOf(null)
    await expect(client.task(2)).rejects.toSatisfy((e: unknown) => e instanceof HttpError && e.status === 0 && /another shape \(\/task\/id/.test(e.message))
    await expect(client.timeline(3)).rejects.toSatisfy((e: unknown) => e instanceof HttpError && e.status === 0 && /not JSON/.test(e.message))
  })

  it('keeps a refusal\'s status and message, and tells the sign-in of a 401', async () => {
    const client = await clientOf(null)
    await expect(client.deleteTask(4)).rejects.toSatisfy((e: unknown) => e instanceof HttpError && e.status === 500 && e.message === 'The task is running')
    const told: unknown[] = []
    const stop = onUnauthorized((c) => told.push(c))
    try {
      await expect(client.rereport(9)).rejects.toSatisfy((e: unknown) => e instanceof HttpError && e.status === 401)
      expect(told).toEqual([null])
    } finally {
      stop()
    }
  })
})
