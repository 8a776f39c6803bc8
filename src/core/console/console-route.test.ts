// The console's websocket route against a real VNC server: QEMU's own (a machine stopped before
// its first instruction still serves its VGA screen), on a UNIX socket of the test's, registered
// with the hub as a run would. Real websockets (ws), the service's real HTTP socket and security.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { WebSocket } from 'ws'
import { startHarness, form, type Harness } from '../../../test/service-harness'
import { parseRecording, RecordKind } from '../../shared/console-recording'
import { CONSOLE_PROTOCOLS, type ConsoleState } from '../../shared/api/console'

const TOKEN = 'console-test-token'
const auth = { Authorization: `Bearer ${TOKEN}` }

/** A websocket client speaking RFB by hand: bytes in, and a wait for a given count of them. */
class RfbPeer {
  buf = Buffer.alloc(0)
  closed: { code: number; reason: string } | null = null
  private waiters: (() => void)[] = []
  constructor(readonly ws: WebSocket) {
    ws.on('message', (d: Buffer) => { this.buf = Buffer.concat([this.buf, d]); this.wake() })
    ws.on('close', (code, reason) => { this.closed = { code, reason: reason.toString() }; this.wake() })
  }
  private wake(): void { for (const w of this.waiters.splice(0)) w() }
  async take(n: number, ms = 10_000): Promise<Buffer> {
    const end = Date.now() + ms
    while (this.buf.length < n) {
      if (this.closed) throw new Error(`closed ${this.closed.code} ${this.closed.reason}`)
      if (Date.now() > end) throw new Error(`timed out waiting for ${n} bytes (have ${this.buf.length})`)
      await new Promise<void>((ok) => { this.waiters.push(ok); setTimeout(ok, 200) })
    }
    const out = this.buf.subarray(0, n)
    this.buf = this.buf.subarray(n)
    return out
  }
  async waitClosed(ms = 10_000): Promise<{ code: number; reason: string }> {
    const end = Date.now() + ms
    while (!this.closed && Date.now() < end) await new Promise<void>((ok) => { this.waiters.push(ok); setTimeout(ok, 200) })
    if (!this.closed) throw new Error('not closed')
    return this.closed
  }
  /** Version, security None, ClientInit (asking for an exclusive session: the service shares it), ServerInit. */
  async handshake(): Promise<{ width: number; height: number }> {
    expect((await this.take(12)).toString()).toBe('RFB 003.008\n')
    this.ws.send(Buffer.from('RFB 003.008\n'))
    const n = (await this.take(1))[0]!
    expect([...(await this.take(n))]).toContain(1)
    this.ws.send(Buffer.from([1]))
    expect((await this.take(4)).readUInt32BE(0)).toBe(0)
    this.ws.send(Buffer.from([0]))
    const init = await this.take(24)
    await this.take(init.readUInt32BE(20))
    return { width: init.readUInt16BE(0), height: init.readUInt16BE(2) }
  }
}

function open(url: string, headers: Record<string, string> = auth): Promise<{ peer: RfbPeer; protocol: string } | { status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), [CONSOLE_PROTOCOLS.interactive, CONSOLE_PROTOCOLS.view], { headers })
    ws.on('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    ws.on('open', () => resolve({ peer: new RfbPeer(ws), protocol: ws.protocol }))
    ws.on('error', (err) => { if (!/Unexpected server response/.test(err.message)) reject(err) })
  })
}

describe('the console websocket route, against QEMU\'s VNC server', () => {
  let h: Harness
  let qemu: ChildProcess
  let dir: string
  let id: number
  let close: (reason: string) => void

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'aviary-vnc-'))
    const sock = path.join(dir, 'vnc.sock')
    qemu = spawn('qemu-system-x86_64', ['-machine', 'pc', '-accel', 'tcg', '-m', '32', '-nodefaults', '-vga', 'std', '-display', 'none', '-S', '-vnc', `unix:${sock}`], { stdio: 'ignore' })
    for (let i = 0; i < 100 && !existsSync(sock); i++) await sleep(100)
    h = await startHarness({ apiToken: TOKEN, consoleRecordCap: 4 * 1024 * 1024 })
    const sub = await h.post('/tasks/create/url', form({ url: 'http://example.com/', options: 'interactive=1' }), auth)
    id = sub.body.task_id as number
    const reg = h.service.consoles!.register({ task: id, machine: 'vm1', endpoint: async () => ({ path: sock }), recordDir: path.join(h.analysisDir(id), 'console'), recordCap: 4 * 1024 * 1024 })
    close = reg.close
  }, 60_000)

  afterAll(async () => {
    await h?.stop()
    qemu?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  it('refuses a client without credentials (401) and a task with no console open (409)', async () => {
    const none = await open(`${h.url}/aviary/tasks/${id}/console/ws`, {})
    expect(none).toMatchObject({ status: 401 })
    const other = (await h.post('/tasks/create/url', form({ url: 'http://example.org/' }), auth)).body.task_id as number
    const r = await open(`${h.url}/aviary/tasks/${other}/console/ws`)
    expect(r).toMatchObject({ status: 409 })
    expect((r as { body: string }).body).toMatch(/only while the task's analysis runs/)
    expect((await open(`${h.url}/aviary/tasks/999999/console/ws`))).toMatchObject({ status: 404 })
    const foreign = await open(`${h.url}/aviary/tasks/${id}/console/ws`, { ...auth, Origin: 'http://evil.example' })
    expect(foreign).toMatchObject({ status: 403 })
  })

  it('gives control to the first client and makes the second view-only; the screen reaches both', async () => {
    const a = await open(`${h.url}/aviary/tasks/${id}/console/ws`)
    const b = await open(`${h.url}/aviary/tasks/${id}/console/ws`)
    if (!('peer' in a) || !('peer' in b)) throw new Error(`not opened: ${JSON.stringify([a, b].map((x) => ('peer' in x ? 'open' : x)))}`)
    expect(a.protocol).toBe(CONSOLE_PROTOCOLS.interactive)
    expect(b.protocol).toBe(CONSOLE_PROTOCOLS.view)
    const sa = await a.peer.handshake()
    const sb = await b.peer.handshake()
    expect(sa.width).toBeGreaterThan(0)
    expect(sb).toEqual(sa)
    // Both type; only the interactive client's key reaches the server (the view-only one's is dropped by the service).
    const key = Buffer.from([4, 1, 0, 0, 0, 0, 0, 0x61])
    a.peer.ws.send(key)
    b.peer.ws.send(key)
    await sleep(1500)
    const { body } = await h.json<ConsoleState>(`/aviary/tasks/${id}/console`, auth)
    expect(body.available).toBe(true)
    expect(body.interactive_option).toBe(true)
    expect(body.interactive_taken).toBe(true)
    expect(body.sessions.map((s) => [s.role, s.keys])).toEqual([['interactive', 1], ['view', 0]])
    a.peer.ws.close()
    b.peer.ws.close()
    await a.peer.waitClosed()
    await b.peer.waitClosed()
    // Control is free again: the next client gets it.
    const c = await open(`${h.url}/aviary/tasks/${id}/console/ws`)
    expect('peer' in c && c.protocol).toBe(CONSOLE_PROTOCOLS.interactive)
    if ('peer' in c) c.peer.ws.close()
  })

  it('cuts off a client that sends a 1 MiB garbage frame, or 10,000 frames a second, and the service\'s memory stays bounded', async () => {
    global.gc?.()
    const before = process.memoryUsage().rss
    let peak = before
    const watch = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 20)
    try {
      const big = await open(`${h.url}/aviary/tasks/${id}/console/ws`)
      if (!('peer' in big)) throw new Error(JSON.stringify(big))
      big.peer.ws.send(Buffer.alloc(1024 * 1024, 0x41))
      expect((await big.peer.waitClosed()).code).toBe(1009)

      const flood = await open(`${h.url}/aviary/tasks/${id}/console/ws`)
      if (!('peer' in flood)) throw new Error('not opened')
      await flood.peer.handshake()
      const started = Date.now()
      const ptr = Buffer.from([5, 0, 0, 1, 0, 1])
      for (let i = 0; i < 10_000 && flood.peer.ws.readyState === WebSocket.OPEN; i++) flood.peer.ws.send(ptr)
      const closed = await flood.peer.waitClosed()
      expect(closed.code).toBe(4429)
      expect(Date.now() - started).toBeLessThan(5000)

      const junk = await open(`${h.url}/aviary/tasks/${id}/console/ws`)
      if (!('peer' in junk)) throw new Error('not opened')
      await junk.peer.take(12)
      junk.peer.ws.send(Buffer.from('GET / HTTP/1.1\r\n\r\n'))
      expect(await junk.peer.waitClosed()).toMatchObject({ code: 4400, reason: expect.stringMatching(/not RFB/) })
    } finally {
      clearInterval(watch)
    }
    console.log(`console route: RSS ${Math.round(before / 2 ** 20)} MiB before the hostile clients, peak +${((peak - before) / 2 ** 20).toFixed(1)} MiB`)
    expect(peak - before).toBeLessThan(20 * 1024 * 1024)
  })

  it('recorded each session into the analysis folder, and ends the sessions when the console closes', async () => {
    const live = await open(`${h.url}/aviary/tasks/${id}/console/ws`)
    if (!('peer' in live)) throw new Error('not opened')
    await live.peer.handshake()
    close('the analysis ended')
    expect(await live.peer.waitClosed()).toEqual({ code: 4000, reason: 'the analysis ended' })
    expect(await open(`${h.url}/aviary/tasks/${id}/console/ws`)).toMatchObject({ status: 409 })
    await sleep(300)
    const folder = path.join(h.analysisDir(id), 'console')
    const names = readdirSync(folder).sort()
    expect(names[0]).toBe('0001.vncrec')
    const first = parseRecording(readFileSync(path.join(folder, names[0]!)))
    expect(first.meta).toMatchObject({ task: id, machine: 'vm1', session: 1, role: 'interactive' })
    const rec = first.records[0]!
    expect(rec.kind).toBe(RecordKind.server)
    expect(first.ended).toBe('the client left')
    const last = parseRecording(readFileSync(path.join(folder, names.at(-1)!)))
    expect(last.ended).toBe('the analysis ended')
    const list = await h.json<{ recordings: { name: string; bytes: number }[]; total_bytes: number }>(`/aviary/tasks/${id}/console/recordings`, auth)
    expect(list.body.recordings.map((r) => r.name)).toEqual(names)
    const file = await h.get(`/aviary/tasks/${id}/console/recordings/0001.vncrec`, auth)
    expect(file.status).toBe(200)
    expect(Buffer.from(await file.arrayBuffer()).subarray(0, 16).toString()).toBe('AVIARY-CONSOLE 1')
    expect((await h.get(`/aviary/tasks/${id}/console/recordings/..%2Fcuckoo.conf`, auth)).status).toBe(404)
  })

  it('answers Extend and Finish now on a task without a run with 409, and bad input with a 400 naming the field', async () => {
    const ext = await fetch(`${h.url}/aviary/tasks/${id}/extend`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ seconds: 60 }) })
    expect(ext.status).toBe(409)
    const bad = await fetch(`${h.url}/aviary/tasks/${id}/extend`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ seconds: 'soon' }) })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { message: string }).message).toMatch(/^seconds: /)
    const fin = await fetch(`${h.url}/aviary/tasks/${id}/finish`, { method: 'POST', headers: auth })
    expect(fin.status).toBe(409)
  })
})
