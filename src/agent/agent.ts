// Aviary's guest agent: an HTTP server speaking the protocol of Cuckoo 2.0.7's agent.py (version
// "0.10"), so an unchanged Cuckoo or CAPE host can drive it and our host can drive either. It
// runs inside the guest and imports nothing from the host side. Differences from agent.py, all
// harmless to its clients: requests are served concurrently, JSON answers carry Content-Type and
// Content-Length, error bodies hold no traceback, paths must be absolute (paths.ts), POST /reset
// ends every analysis started before (analyses.ts), and the processes it starts get the agent's
// own environment with nothing added (agent.py added nothing either). Routes, features and limits
// are the protocol's (src/guest-protocol/agent-api.ts), shared with the host.
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { platform } from 'node:os'
import { AGENT_FEATURES, AGENT_VERSION, AVIARY_AGENT_MESSAGE, ROUTES } from '../guest-protocol/agent-api.js'
import { Analyses, type StatusState } from './analyses.js'
import * as h from './handlers.js'
import { HttpError, readForm, type FormBody } from './http-body.js'
import { absolutePath } from './paths.js'

export { AGENT_FEATURES, AGENT_VERSION }

export interface AgentOptions {
  host: string
  port: number
  log?: (m: string) => void
  /**
   * Linux: where the analyses' cgroups go (analyses.ts); default under the agent's own cgroup.
   * null: none (process groups and descendants only, as on a guest without a writable cgroup2).
   */
  cgroupParent?: string | null
}

export interface RunningAgent {
  port: number
  close(): Promise<void>
}

type Handler = (form: FormBody, req: IncomingMessage) => Promise<h.Json>

/** platform.system() names, which the host compares with "Windows"/"Linux". */
function systemName(): string {
  const p = platform()
  return p === 'win32' ? 'Windows' : p === 'darwin' ? 'Darwin' : p === 'linux' ? 'Linux' : p
}

function clientIp(req: IncomingMessage): string {
  return (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '')
}

export async function runAgent(o: AgentOptions): Promise<RunningAgent> {
  const logLines: string[] = []
  const log = (m: string): void => {
    logLines.push(m)
    if (logLines.length > 10_000) logLines.shift()
    o.log?.(m)
  }
  const state: StatusState & { pinned: string | null } = { status: null, description: null, posts: 0, pinned: null }
  const analyses = new Analyses(state, log, { cgroupParent: o.cgroupParent })
  const exec = h.execHandlers(analyses)
  let closing: (() => void) | null = null

  const get: Record<string, Handler> = {
    [ROUTES.root]: async () => ({ message: AVIARY_AGENT_MESSAGE, version: AGENT_VERSION, features: [...AGENT_FEATURES] }),
    [ROUTES.status]: async () => ({ message: 'Analysis status', status: state.status, description: state.description }),
    [ROUTES.logs]: async () => ({ message: 'Agent logs', stdout: logLines.join('\n'), stderr: '' }),
    [ROUTES.system]: async () => ({ message: 'System', system: systemName() }),
    [ROUTES.environ]: async () => ({ message: 'Environment variables', environ: { ...process.env } }),
    [ROUTES.path]: async () => ({ message: 'Agent path', filepath: process.execPath }),
    [ROUTES.mktemp]: h.mktempHandler,
    [ROUTES.mkdtemp]: h.mkdtempHandler,
    [ROUTES.pinning]: async (_form, req) => {
      if (state.pinned !== null) throw new HttpError(500, 'Agent has already been pinned to an IP!')
      state.pinned = clientIp(req)
      return { message: 'Successfully pinned Agent', client_ip: state.pinned }
    },
    [ROUTES.kill]: async () => {
      closing?.()
      return { message: 'Quit the Aviary Agent' }
    }
  }
  const post: Record<string, Handler> = {
    ...get,
    [ROUTES.status]: async (form) => {
      state.status = h.required(form, 'status', 'status')
      state.description = form.fields.get('description') ?? null
      state.posts++
      log(`status: ${state.status}`)
      return { message: 'Analysis status updated' }
    },
    [ROUTES.mkdir]: h.mkdirHandler,
    [ROUTES.store]: h.storeHandler,
    [ROUTES.extract]: h.extractHandler,
    [ROUTES.remove]: h.removeHandler,
    [ROUTES.execute]: exec.execute,
    [ROUTES.execpy]: exec.execpy,
    [ROUTES.execnode]: exec.execnode,
    [ROUTES.reset]: async () => {
      const ended = await analyses.reset()
      log(`reset: ${ended} process(es) of earlier analyses ended`)
      return { message: 'Earlier analyses ended', ended }
    }
  }

  const send = (res: ServerResponse, status: number, body: h.Json): void => {
    const text = JSON.stringify(body)
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) })
    res.end(text)
  }

  const retrieve = async (form: FormBody, res: ServerResponse): Promise<void> => {
    const filepath = absolutePath('filepath', h.required(form, 'filepath'))
    const info = await stat(filepath).catch(() => null)
    if (info === null || !info.isFile()) {
      res.writeHead(404, { 'Content-Length': 0 })
      res.end()
      return
    }
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': info.size })
    await new Promise<void>((done) => {
      createReadStream(filepath).on('error', () => res.destroy()).pipe(res).on('close', done)
    })
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? '/'
    const ip = clientIp(req)
    // Pinned: everyone else is dropped without an answer, except the analyzer's POST /status.
    if (state.pinned !== null && ip !== state.pinned && !(ip === '127.0.0.1' && req.method === 'POST' && url === '/status')) {
      req.socket.destroy()
      return
    }
    const table = req.method === 'GET' ? get : req.method === 'POST' ? post : null
    const isRetrieve = req.method === 'POST' && url === ROUTES.retrieve
    const handler = table?.[url]
    if (handler === undefined && !isRetrieve) {
      req.resume()
      send(res, 404, { message: 'Route not found', error_code: 404 })
      return
    }
    let form: FormBody | undefined
    try {
      form = await readForm(req)
      if (isRetrieve) await retrieve(form, res)
      else if (handler !== undefined) send(res, 200, await handler(form, req))
    } catch (err) {
      const status = err instanceof HttpError ? err.status : 500
      const message = err instanceof HttpError ? err.message : `Internal error: ${(err as Error).message}`
      log(`${req.method} ${url}: ${status} ${message}`)
      if (!res.headersSent) send(res, status, { message, error_code: status })
      else res.destroy()
    } finally {
      await form?.dispose()
    }
  }

  const server = createServer((req, res) => {
    log(`${clientIp(req)} ${req.method} ${req.url}`)
    void handle(req, res)
  })
  // Bodies may be large and slow (largefile); the host sets no timeout either.
  server.requestTimeout = 0
  server.headersTimeout = 60_000

  await new Promise<void>((ok, fail) => {
    server.once('error', fail)
    server.listen(o.port, o.host, () => {
      server.off('error', fail)
      ok()
    })
  })
  const port = (server.address() as AddressInfo).port
  log(`Aviary Agent ${AGENT_VERSION} listening on ${o.host}:${port}`)

  let closed: Promise<void> | null = null
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((done) => {
      analyses.release()
      server.close(() => done())
      server.closeIdleConnections()
    })
    return closed
  }
  closing = () => {
    setImmediate(() => void close())
  }
  return { port, close }
}
