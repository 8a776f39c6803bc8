import { describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import type { AddressInfo } from 'node:net'
import { closeGracefully } from './close-server'

/** A server with a route that answers after 500 ms, a kept-alive connection to it, and a request under way on it. */
async function busyServer(): Promise<{ app: ReturnType<typeof Fastify>; answer: Promise<string> }> {
  const app = Fastify()
  app.get('/slow', async () => {
    await new Promise((r) => setTimeout(r, 500))
    return { ok: true }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/slow`
  await (await fetch(url)).text() // the connection is kept alive after this answer
  const answer = fetch(url).then((r) => r.text())
  await new Promise((r) => setTimeout(r, 100))
  return { app, answer }
}

describe('closeGracefully', () => {
  it('lets a request under way finish, then closes its connection instead of waiting out the keep-alive', async () => {
    const { app, answer } = await busyServer()
    const t = Date.now()
    await closeGracefully(app)
    expect(Date.now() - t).toBeLessThan(5000)
    expect(await answer).toBe('{"ok":true}')
  })

  it('(the fault it mends: a plain close waits for the kept-alive connection well past its answer)', async () => {
    const { app, answer } = await busyServer()
    const closed = app.close()
    expect(await answer).toBe('{"ok":true}')
    const after = await Promise.race([closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 1500))])
    expect(after).toBe('still open')
    app.server.closeAllConnections()
    await closed
  })
})
