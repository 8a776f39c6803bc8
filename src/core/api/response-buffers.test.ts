// A lent buffer must not be handed to another response while the socket may still read it: the
// clients here stop reading for a while, so the server's writes stay pending in the kernel and
// in Node while later requests ask for buffers.
import { afterEach, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import { ResponseBuffers } from './response-buffers'

const BODY = 8 * 1024 * 1024 // more than loopback socket buffers hold, so writes wait for the reader

let server: Server | undefined
afterEach(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())))

/** Sends one request on a fresh connection, waits `pauseMs` before reading, returns the body. */
function slowGet(port: number, path: string, pauseMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('connect', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
      socket.pause()
      setTimeout(() => socket.resume(), pauseMs)
    })
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('error', reject)
    socket.on('end', () => {
      const all = Buffer.concat(chunks)
      resolve(all.subarray(all.indexOf('\r\n\r\n') + 4))
    })
  })
}

describe('response buffers', () => {
  it('lends a buffer again only after its response is done with it', async () => {
    const pool = new ResponseBuffers(BODY, 4)
    let lent = 0
    server = createServer((req, res) => {
      const mark = Number(req.url!.slice(1))
      const body = pool.for(res)(BODY)
      lent++
      body.fill(mark)
      res.writeHead(200, { 'content-length': BODY })
      res.end(body)
    })
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    const { port } = server.address() as AddressInfo
    // Rounds of 6 clients against a pool that keeps 4: buffers are reused between rounds, and
    // within a round the first clients stay unread while the later ones are served.
    for (let round = 0; round < 3; round++) {
      const marks = [1, 2, 3, 4, 5, 6].map((i) => round * 10 + i)
      const bodies = await Promise.all(marks.map((m, i) => slowGet(port, `/${m}`, 300 - i * 40)))
      bodies.forEach((body, i) => {
        expect(body.length).toBe(BODY)
        const wrong = body.findIndex((b) => b !== marks[i])
        expect(wrong).toBe(-1)
      })
    }
    expect(lent).toBe(18)
  })

  it('allocates bodies larger than a slot afresh', () => {
    const pool = new ResponseBuffers(1024, 4)
    const res = { closed: false, once: () => undefined } as never
    const big = pool.for(res)(4096)
    const small = pool.for(res)(10)
    expect(big.length).toBe(4096)
    expect(small.buffer.byteLength).toBe(1024)
  })
})
