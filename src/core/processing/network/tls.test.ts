// TLS hellos as real OpenSSL (Node's tls) writes them, fed to the parser whole and split at every
// byte boundary: the ClientHello's SNI and offered version, the ServerHello's random, session id
// and chosen version must not depend on how TCP cut the stream. Captures are in network.test.ts.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect as netConnect, createServer as createNetServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TlsHelloStream, type ClientHello, type ServerHello } from './tls'

const run = promisify(execFile)

/** The first bytes a real TLS client sends (its ClientHello), read by a plain TCP server. */
async function realClientHello(servername: string): Promise<Buffer> {
  const server = createNetServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  try {
    const got = new Promise<Buffer>((resolve) => server.once('connection', (c) => c.once('data', (b: Buffer) => { resolve(b); c.destroy() })))
    const client = tlsConnect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', servername, rejectUnauthorized: false })
    client.on('error', () => undefined)
    const hello = await got
    client.destroy()
    return hello
  } finally {
    server.close()
  }
}

function feed(stream: Buffer, splitAt: number[]): { c: ClientHello[]; s: ServerHello[] } {
  const c: ClientHello[] = []
  const s: ServerHello[] = []
  const p = new TlsHelloStream((h) => c.push(h), (h) => s.push(h))
  let prev = 0
  for (const at of [...splitAt, stream.length]) {
    const chunk = Buffer.from(stream.subarray(prev, at))
    if (!p.push(chunk)) break
    chunk.fill(0)
    prev = at
  }
  return { c, s }
}

describe('TlsHelloStream', () => {
  let dir: string
  beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), 'aviary-tls-')) })
  afterAll(() => { if (dir) rmSync(dir, { recursive: true, force: true }) })

  it("reads a real ClientHello's server name and highest offered version, however it is cut", async () => {
    const hello = await realClientHello('split.example.test')
    const whole = feed(hello, [])
    expect(whole.c).toEqual([{ sni: 'split.example.test', version: 'TLS 1.3' }])
    for (let i = 1; i < hello.length; i++) expect(feed(hello, [i])).toEqual(whole)
    // Only TLS 1.2 offered: no supported_versions above the legacy version.
    const server = createNetServer()
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const got = new Promise<Buffer>((resolve) => server.once('connection', (c) => c.once('data', (b: Buffer) => { resolve(b); c.destroy() })))
    const client = tlsConnect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', servername: 'old.example.test', maxVersion: 'TLSv1.2', rejectUnauthorized: false })
    client.on('error', () => undefined)
    expect(feed(await got, []).c).toEqual([{ sni: 'old.example.test', version: 'TLS 1.2' }])
    client.destroy()
    server.close()
  })

  it("reads a real ServerHello's random and session id, however it is cut", async () => {
    await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=s.test', '-keyout', path.join(dir, 'k.pem'), '-out', path.join(dir, 'c.pem')])
    const tls = createTlsServer({ key: readFileSync(path.join(dir, 'k.pem')), cert: readFileSync(path.join(dir, 'c.pem')) })
    tls.on('tlsClientError', () => undefined)
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r))
    try {
      const hello = await realClientHello('s.test')
      const sock = netConnect((tls.address() as AddressInfo).port, '127.0.0.1')
      let answer = Buffer.alloc(0)
      await new Promise<void>((resolve) => {
        sock.on('connect', () => sock.write(hello))
        sock.on('data', (b: Buffer) => { answer = Buffer.concat([answer, b]); if (answer.length > 200) resolve() })
        sock.on('close', () => resolve())
      })
      sock.destroy()
      const whole = feed(answer, [])
      expect(whole.s).toHaveLength(1)
      // The random is bytes 11..43 of the first record (5 record + 4 handshake header + 2 version).
      expect(whole.s[0]).toEqual({ version: 'TLS 1.3', server_random: answer.subarray(11, 43).toString('hex'),
        session_id: answer.subarray(44, 44 + (answer[43] ?? 0)).toString('hex') })
      for (let i = 1; i < 120; i++) expect(feed(answer, [i])).toEqual(whole)
    } finally {
      tls.close()
    }
  })
})
