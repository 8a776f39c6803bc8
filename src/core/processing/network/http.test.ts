// The incremental HTTP parser on byte streams as browsers and servers write them (keep-alive,
// chunked bodies with extensions and trailers, 100 Continue, HEAD, a request body larger than
// what is kept), each stream fed once whole and once split at every byte boundary: the messages
// found must not depend on how TCP cut the stream. Real captures are tested in network.test.ts.
import { describe, expect, it } from 'vitest'
import { HttpStream, type HttpRequest, type HttpResponse } from './http'

function parse(stream: Buffer, splitAt: number[], methods: string[] = []): { reqs: HttpRequest[]; res: HttpResponse[]; done: boolean } {
  const reqs: HttpRequest[] = []
  const res: HttpResponse[] = []
  const s = new HttpStream({ onRequest: (r) => reqs.push(r), onResponse: (r) => res.push(r), requestMethod: (n) => methods[n] })
  let prev = 0
  for (const at of [...splitAt, stream.length]) {
    // Views of a buffer that is overwritten afterwards, as the pcap reader hands them out.
    const chunk = Buffer.from(stream.subarray(prev, at))
    s.push(chunk)
    chunk.fill(0x58)
    prev = at
  }
  const done = s.done
  s.finish()
  return { reqs, res, done }
}

const summary = (p: ReturnType<typeof parse>): unknown => ({
  reqs: p.reqs.map((r) => ({ m: r.method, p: r.path, v: r.version, host: r.headers.get('host'), head: r.head.toString('latin1'), body: r.body.toString('latin1') })),
  res: p.res.map((r) => [r.version, r.status])
})

function everySplit(stream: Buffer, methods?: string[]): unknown {
  const whole = summary(parse(stream, [], methods))
  for (let i = 1; i < stream.length; i++) expect(summary(parse(stream, [i], methods))).toEqual(whole)
  expect(summary(parse(stream, Array.from({ length: stream.length - 1 }, (_, i) => i + 1), methods))).toEqual(whole)
  return whole
}

describe('HttpStream', () => {
  it('parses keep-alive requests with content-length and chunked bodies however the stream is cut', () => {
    const stream = Buffer.from(
      'POST /a HTTP/1.1\r\nHost: x.test\r\nContent-Length: 5\r\n\r\nhello' +
      'PUT /b?c=1 HTTP/1.1\r\nHost: x.test:8080\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n' +
      'GET /c HTTP/1.0\r\nHost: y.test\r\n\r\n')
    expect(everySplit(stream)).toEqual({
      reqs: [
        { m: 'POST', p: '/a', v: '1.1', host: 'x.test', head: 'POST /a HTTP/1.1\r\nHost: x.test\r\nContent-Length: 5\r\n\r\n', body: 'hello' },
        { m: 'PUT', p: '/b?c=1', v: '1.1', host: 'x.test:8080', head: 'PUT /b?c=1 HTTP/1.1\r\nHost: x.test:8080\r\nTransfer-Encoding: chunked\r\n\r\n', body: 'abcde' },
        { m: 'GET', p: '/c', v: '1.0', host: 'y.test', head: 'GET /c HTTP/1.0\r\nHost: y.test\r\n\r\n', body: '' }
      ],
      res: []
    })
  })

  it('follows responses: 100 Continue, chunked, HEAD without a body, 304, then content-length', () => {
    const stream = Buffer.from(
      'HTTP/1.1 100 Continue\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n' + // the answer to HEAD: no body follows
      'HTTP/1.1 304 Not Modified\r\n\r\n' +
      'HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nnop')
    expect(everySplit(stream, ['POST', 'HEAD', 'GET', 'GET'])).toEqual({
      reqs: [], res: [['1.1', 100], ['1.1', 200], ['1.1', 200], ['1.1', 304], ['1.1', 404]]
    })
  })

  it('keeps only the start of a big request body and gives up on what is not HTTP', () => {
    const big = Buffer.concat([Buffer.from('POST /up HTTP/1.1\r\nContent-Length: 100000\r\n\r\n'), Buffer.alloc(100000, 0x41),
      Buffer.from('GET /next HTTP/1.1\r\n\r\n')])
    const p = parse(big, [1000, 50000])
    expect(p.reqs.map((r) => [r.path, r.body.length])).toEqual([['/up', 16 * 1024], ['/next', 0]])
    const notHttp = parse(Buffer.from('\x16\x03\x01\x02\x00binary stuff'), [])
    expect(notHttp.done).toBe(true)
    expect(notHttp.reqs).toEqual([])
    // A response that runs until the connection closes: nothing after it is parsed.
    const tillClose = parse(Buffer.from('HTTP/1.0 200 OK\r\n\r\nGET /not-a-request HTTP/1.1\r\n\r\n'), [])
    expect(tillClose.res.map((r) => r.status)).toEqual([200])
    expect(tillClose.reqs).toEqual([])
  })
})
