// The proxy's flows (written by our mitmproxy addon, but shaped by the guest's traffic) become
// https_ex / http_ex in Cuckoo's shape, bodies saved once as network/<sha1>; refused handshakes
// become network.mitm lines; garbage lines and wrong types are skipped, never thrown on.
import { afterAll, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { readMitmFlows } from './mitm-flows'

const dir = mkdtempSync(path.join(tmpdir(), 'aviary-mitm-flows-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const body = Buffer.from('secret payload over tls\n')
const flow = (over: Record<string, unknown> = {}) => JSON.stringify({
  type: 'flow', time: 1, client: ['10.0.0.5', 40000], server: ['198.51.100.7', 443], sni: 'up.example', scheme: 'https', method: 'GET',
  host: 'up.example', port: 443, path: '/secret', http_version: 'HTTP/1.1',
  request: { headers: [['Host', 'up.example'], ['X-Bidi', 'a\u202eb']], body_b64: '', body_size: 0, truncated: false },
  response: { status: 200, reason: 'OK', headers: [['Content-Type', 'text/plain']], body_b64: body.toString('base64'), body_size: body.length, truncated: false },
  error: null, ...over
})

const tlsFailed = (side: string, sni: string, error: string): string =>
  JSON.stringify({ type: 'tls_failed', side, client: ['10.0.0.5', 40001], server: ['198.51.100.7', 443], sni, error })

describe('readMitmFlows', () => {
  it('turns flows and refused handshakes into the report\'s shape, and skips garbage', async () => {
    mkdirSync(path.join(dir, 'mitm'))
    writeFileSync(path.join(dir, 'mitm', 'flows.jsonl'), [
      flow(),
      flow({ scheme: 'http', port: 8080, path: '/x', response: null, error: 'connection reset' }),
      flow(), // the same body again: saved once
      '{"type":"tls_failed","client":["10.0.0.5",40001],"server":["198.51.100.7",443],"sni":"pinned.example","error":"bad certificate"}',
      // What mitmproxy 8.1 words (proxy/layers/tls.py), recorded by the addon with the side that failed.
      tlsFailed('guest', 'pinned.example', "The client does not trust the proxy's certificate for pinned.example (tlsv1 alert unknown ca)"),
      tlsFailed('guest', 'other.example', "The client may not trust the proxy's certificate for other.example (OpenSSL Error([('SSL routines', '', 'tlsv1 alert decrypt error')]))"),
      tlsFailed('guest', 'quiet.example', 'The client disconnected during the handshake. If this happens consistently for quiet.example, this may indicate that the client does not trust the proxy\'s certificate.'),
      tlsFailed('guest', '', 'Cannot parse ClientHello: 474554202f'),
      tlsFailed('upstream', 'up.example', "OpenSSL Error([('SSL routines', '', 'sslv3 alert handshake failure')])"),
      tlsFailed('upstream', 'plain.example', 'The remote server does not speak TLS.'),
      tlsFailed('upstream', 'gone.example', 'connection closed'),
      'not json', '[]', '{"type":"flow","request":42,"response":"x","client":"y"}', '{"type":"unknown"}'
    ].join('\n') + '\n')
    const r = await readMitmFlows(dir)
    const sha1 = createHash('sha1').update(body).digest('hex')
    expect(r.https_ex).toHaveLength(2)
    expect(r.https_ex[0]).toMatchObject({
      src: '10.0.0.5', sport: 40000, dst: '198.51.100.7', dport: 443, protocol: 'https', method: 'GET', host: 'up.example',
      uri: 'https://up.example/secret', status: 200, sha1, md5: createHash('md5').update(body).digest('hex'), path: `network/${sha1}`,
      response_body: 'secret payload over tls\n', resp: { path: `network/${sha1}`, size: body.length, truncated: false }
    })
    expect(r.https_ex[0]!.request).toMatch(/^GET \/secret HTTP\/1\.1\r\nHost: up\.example/)
    expect(r.https_ex[0]!.response).toMatch(/^HTTP\/1\.1 200 OK\r\nContent-Type: text\/plain$/)
    expect(readFileSync(path.join(dir, 'network', sha1))).toEqual(body)
    expect(r.http_ex).toHaveLength(1)
    expect(r.http_ex.find((e) => e.uri === 'http://up.example:8080/x')).toMatchObject({ status: null, error: 'connection reset' })
    expect(r.mitm).toEqual([
      // An older addon's record: no side (it recorded the guest's only), the error as it was.
      'the TLS handshake with the guest (10.0.0.5:40001) for pinned.example failed: bad certificate',
      'the guest (10.0.0.5:40001) refused the proxy\'s certificate for pinned.example (TLS alert: unknown ca)',
      'the guest (10.0.0.5:40001) ended the TLS handshake for other.example (TLS alert: decrypt error)',
      'the guest (10.0.0.5:40001) closed the connection during the TLS handshake for quiet.example, without a TLS alert',
      'the guest (10.0.0.5:40001) sent no TLS handshake the proxy could read (to 198.51.100.7:443)',
      'the upstream (198.51.100.7:443) refused the proxy\'s TLS handshake for up.example (TLS alert: handshake failure)',
      'the upstream (198.51.100.7:443) does not speak TLS (for plain.example)',
      'the upstream (198.51.100.7:443) closed the connection during the TLS handshake for gone.example, without a TLS alert'
    ])
  })

  it('has nothing to say without flows', async () => {
    expect(await readMitmFlows(path.join(dir, 'none'))).toEqual({ http_ex: [], https_ex: [], mitm: [] })
  })
})
